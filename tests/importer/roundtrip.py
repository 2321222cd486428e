"""The round-trip comparison: an original manifest against what `import`, `render` and the
real `kustomize build` give back, modulo the documented normalisations (NORMALISATIONS:
each a path pattern and the reason it may differ). Every other difference is reported."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

from trainops.facts.kubeflow import (
    MPI_LAUNCHER_CONTAINER,
    MPI_WORKER_CONTAINER,
    default_restart_policy,
)
from trainops.importer.launch import same_launch
from trainops.importer.pod import default_pull_policy

# trainops's name for the in-memory /dev/shm volume (normalisation: "trainops guarantees").
SHM_NAME = "dshm"
# The MPIJob containers trainops renders (a normalisation: the operator takes the first).
MPI_NAMES = {"Launcher": MPI_LAUNCHER_CONTAINER, "Worker": MPI_WORKER_CONTAINER}
# Lists whose items Kubernetes identifies by a key: compared by that key, not by position.
KEYED = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "tolerations": "key",
}

# (category, pattern of a path the built object may ADD, why). Paths: `a.b[key].c`, one
# per leaf (an added map or list is walked down to its leaves).
NORMALISATIONS: list[tuple[str, str, str]] = [
    (
        "labels we add",
        r"metadata\.labels\.(app\.kubernetes\.io/(name|managed-by)|trainops\.dev/job)$",
        "every object carries the job's name and manager",
    ),
    (
        "labels we add",
        r"metadata\.annotations\.(trainops\.dev/source|argocd\.argoproj\.io/sync-(wave|options)|kustomize\.toolkit\.fluxcd\.io/prune)$",
        "the source spec; the claims' sync wave and no-prune",
    ),
    (
        "labels we add",
        r"template\.metadata\.annotations\.sidecar\.istio\.io/inject$",
        "no Istio sidecar (it never exits, so the pod would never complete)",
    ),
    ("defaults made explicit", r"^metadata\.namespace$", "namespace `default`"),
    (
        "defaults made explicit",
        r"^spec\.successPolicy$",
        'the TFJob\'s successPolicy "" (the Chief, or worker 0, decides)',
    ),
    (
        "defaults made explicit",
        r"^spec\.runPolicy\.cleanPodPolicy$",
        "the operator's cleanPodPolicy None",
    ),
    (
        "defaults made explicit",
        r"^spec\.mpiImplementation$",
        "the MPI Operator's OpenMPI",
    ),
    (
        "defaults made explicit",
        r"^spec\.nprocPerNode$",
        "one process per GPU (the operator's `auto` on a GPU node)",
    ),
    (
        "defaults made explicit",
        r"\.resources\.requests\..+$",
        "a request Kubernetes defaults to the limit",
    ),
    (
        "trainops guarantees",
        r"\.securityContext\.",
        "Pod Security restricted (README: Non-root pods)",
    ),
    ("trainops guarantees", r"volumes\[dshm\]|volumeMounts\[/dev/shm\]", "an in-memory /dev/shm"),
    (
        "trainops guarantees",
        r"\.env\[TRAINOPS_METRICS_PORT\]|\.ports\[\d+\]\.",
        "the trainer's metrics port",
    ),
    ("trainops guarantees", r"\.terminationGracePeriodSeconds$", "time to checkpoint on SIGTERM"),
    (
        "trainops guarantees",
        r"\.automountServiceAccountToken$",
        "no API token in training pods (docs/security.md)",
    ),
    (
        "trainops guarantees",
        r"volumes\[(tmp|home)\]|volumeMounts\[(/tmp|/home/trainops)\]|\.env\[(HOME|XDG_CACHE_HOME)\]",
        "a read-only root filesystem with writable /tmp and HOME (docs/security.md)",
    ),
    ("trainops guarantees", r"\.dnsPolicy$", "hostNetwork pods still resolve the master's Service"),
    ("trainops guarantees", r"^spec\.elasticPolicy\.maxRestarts$", "bounded torchrun restarts"),
    (
        "trainops guarantees",
        r"\.env\[TORCH_DISABLE_SHARE_RDZV_TCP_STORE\]",
        "an elastic job that survives a lost pod (docs/jobs.md)",
    ),
    ("trainops guarantees", r"\.resources\.limits\.memory$", "a memory limit equal to the request"),
    (
        "trainops guarantees",
        r"mpiReplicaSpecs\.Launcher\..*\.env\[MASTER_(ADDR|PORT)\]",
        "the MPI ranks' rendezvous address, Worker 0 (render/mpijob.py)",
    ),
    (
        "cluster profile",
        r"\.env\[NCCL_(IB_DISABLE|IB_HCA|IB_GID_INDEX|NET_GDR_LEVEL|SOCKET_IFNAME)\]",
        "the cluster's NCCL transport",
    ),
    (
        "cluster profile",
        r"\.nodeSelector\.|\.tolerations\[|\.schedulerName$|^spec\.runPolicy\.schedulingPolicy\.",
        "the GPU product's nodes and the cluster's scheduler",
    ),
    (
        "cluster profile",
        r"\.resources\.(limits|requests)\.rdma/|\.capabilities\.add|k8s\.v1\.cni\.cncf\.io/networks$|kueue\.x-k8s\.io/queue-name$|^spec\.storageClassName$",
        "the cluster's RDMA device, Multus network, queue and storage class",
    ),
]
# The one value a cluster profile may change rather than add: a claim's storage class the
# cluster does not offer (import says so).
CHANGED = r"^spec\.storageClassName$"


def diffs(original: Any, built: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, `added` | `changed` | `missing`) for every difference."""
    if isinstance(original, dict) and isinstance(built, dict):
        for key in sorted(set(original) | set(built)):
            sub = f"{path}.{key}" if path else key
            if key not in built:
                yield sub, "missing"
            elif key not in original:
                yield from _added(built[key], sub, KEYED.get(key))
            else:
                name = key
                mk = KEYED.get(name)
                a, b = original[key], built[key]
                if mk and isinstance(a, list) and isinstance(b, list):
                    am = {str(i.get(mk)): i for i in a if isinstance(i, dict)}
                    bm = {str(i.get(mk)): i for i in b if isinstance(i, dict)}
                    for k in sorted(set(am) | set(bm)):
                        item = f"{sub}[{k}]"
                        if k not in bm:
                            yield item, "missing"
                        elif k not in am:
                            yield from _added(bm[k], item, None)
                        else:
                            yield from diffs(am[k], bm[k], item)
                else:
                    yield from diffs(a, b, sub)
        return
    if isinstance(original, list) and isinstance(built, list):
        if len(original) == len(built):
            for i, (a, b) in enumerate(zip(original, built, strict=True)):
                yield from diffs(a, b, f"{path}[{i}]")
            return
        yield path, "changed"
        return
    if isinstance(original, bool) or isinstance(built, bool):
        if original is not built:
            yield path, "changed"
        return
    if str(original) != str(built):
        yield path, "changed"


def _added(value: Any, path: str, key: str | None) -> Iterator[tuple[str, str]]:
    """The leaves of an added map or keyed list."""
    if isinstance(value, dict) and value:
        for k in sorted(value):
            yield from _added(value[k], f"{path}.{k}", KEYED.get(k))
    elif key and isinstance(value, list) and value:
        for item in value:
            yield from _added(item, f"{path}[{item.get(key)}]", None)
    else:
        yield path, "added"


def explained(
    original: dict[str, Any], built: dict[str, Any]
) -> tuple[dict[str, set[str]], list[str]]:
    """(category of each normalised difference, the differences no normalisation explains)."""
    original = _explicit(original)
    used: dict[str, set[str]] = {}
    unexplained: list[str] = []
    for path, how in diffs(original, built):
        argv = re.search(r"^(.*)\.(command|args)(\[\d+\])?$", path)
        if argv:
            container = argv[1]
            if same_launch(_at(original, container), _at(built, container)):
                used.setdefault("trainops guarantees", set()).add(
                    "the launcher generated around the same program and arguments (torchrun;"
                    " mpirun's -np, -x exports and interface options)"
                )
                continue
        restart = re.search(r"ReplicaSpecs\.([A-Za-z]+)\.restartPolicy$", path)
        if restart and how == "added":
            default = default_restart_policy(
                str(original.get("apiVersion")), str(original.get("kind")), restart[1]
            )
            if default == _at(built, path):
                used.setdefault("defaults made explicit", set()).add("the operator's restartPolicy")
            else:
                used.setdefault("trainops guarantees", set()).add(
                    "restartPolicy OnFailure where the operator defaults to Never"
                    " (render/tfjob.py, render/mpijob.py)"
                )
            continue
        if how == "added" or (how == "changed" and re.search(CHANGED, path)):
            match = next(
                ((c, why) for c, pattern, why in NORMALISATIONS if re.search(pattern, path)), None
            )
            if match:
                used.setdefault(match[0], set()).add(match[1])
                continue
        unexplained.append(f"{path} {how}")
    return used, unexplained


def _explicit(obj: dict[str, Any]) -> dict[str, Any]:
    """The original as the API server stores it (Kubernetes' image pull default written out,
    null fields gone), its /dev/shm volume under trainops's name `dshm`, and an MPIJob's
    containers under trainops's names (the MPI Operator takes the first, whatever its name):
    normalisations."""
    out = _no_nulls(copy.deepcopy(obj))
    spec = out.get("spec") or {}
    key = next((k for k in spec if k.endswith("ReplicaSpecs")), None)
    for rtype, rspec in ((spec.get(key) if key else None) or {}).items():
        pod = ((rspec or {}).get("template") or {}).get("spec") or {}
        containers = [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]
        if out.get("kind") == "MPIJob" and pod.get("containers"):
            pod["containers"][0]["name"] = MPI_NAMES.get(rtype, pod["containers"][0]["name"])
        for c in containers:
            if "imagePullPolicy" not in c and isinstance(c.get("image"), str):
                c["imagePullPolicy"] = default_pull_policy(c["image"])
        shm = {
            m["name"]
            for c in containers
            for m in c.get("volumeMounts") or []
            if m.get("mountPath") == "/dev/shm"
        }
        for item in [
            *(pod.get("volumes") or []),
            *(m for c in containers for m in c.get("volumeMounts") or []),
        ]:
            if item.get("name") in shm:
                item["name"] = SHM_NAME
    return out


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def _at(obj: Any, path: str) -> Any:
    node = obj
    for token in re.findall(r"[^.\[\]]+|\[[^]]+\]", path):
        if token.startswith("["):
            key = token[1:-1]
            node = next(
                (
                    i
                    for i in node
                    if (isinstance(i, dict) and str(i.get("name")) == key)
                    or str(i.get("mountPath")) == key
                ),
                {},
            )
        else:
            node = (node or {}).get(token, {})
    return node
