"""`trainops sandbox`: the cluster-facing commands without a cluster.

An API server on loopback (the emulator the cluster tests use, `trainops.cluster.emulator`:
kmock, a real HTTP server speaking the Kubernetes API) holding one cluster as Git builds it,
in a recorded state: the first training job Running (one worker crash-looping, its log
saved), the second never applied, the third applied with another image, and a job Git does
not know. Or, with `--state FILE`, what a real cluster held (`kubectl get ... -o yaml`).
A kubeconfig naming it is written, so `status`, `explain` and `live-diff` run unchanged.

No Kubernetes runs here: what the emulator does like an API server, and where it differs, is
in its docstring. It is for trying the commands and for demos, not for testing a cluster.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from trainops.cluster import kinds as training_kinds
from trainops.cluster.emulator import CRD_KINDS, DECLARED
from trainops.cluster.emulator_thread import RunningEmulator, serve
from trainops.core.manifest import Manifest
from trainops.facts.kubeflow import JOB_NAME_LABEL, KUBEFLOW_REPLICA_KEYS, REPLICA_TYPE_LABEL
from trainops.facts.schedulers import VOLCANO_SCHEDULER
from trainops.jobspec.model import ClusterProfile

CONTEXT = "trainops-sandbox"
CREATED = "2026-11-23T08:00:00Z"
STRAY = "old-experiment"
CHANGED_IMAGE = "ghcr.io/example/trainops-trainer:hotfix"


def recorded() -> dict[str, Any]:
    """The recorded shapes (trainops/cluster/sandbox.yaml)."""
    text = resources.files("trainops.cluster").joinpath("sandbox.yaml").read_text("utf-8")
    data: dict[str, Any] = yaml.safe_load(text)
    return data


@dataclass
class State:
    """What the emulated cluster holds: objects, and the logs of pods' containers."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    logs: dict[tuple[str, str, str, bool], str] = field(default_factory=dict)
    """(namespace, pod, container, previous) -> the log, with the kubelet's timestamps."""
    story: list[str] = field(default_factory=list)
    """What was set up, for the user: one line per job."""


def _live(obj: dict[str, Any], uid: str, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """`obj` as the API server holds it once applied: server stamps, and `status`."""
    out = copy.deepcopy(obj)
    out["metadata"].update(uid=uid, resourceVersion="1", generation=1, creationTimestamp=CREATED)
    if status is not None:
        out["status"] = status
    return out


def _namespace(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "uid": f"ns-{name}", "creationTimestamp": CREATED},
        "status": {"phase": "Active"},
    }


def _owner(job: dict[str, Any]) -> list[dict[str, Any]]:
    meta = job["metadata"]
    return [
        {
            "apiVersion": job["apiVersion"],
            "kind": job["kind"],
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def _pod_status(shape: dict[str, Any], container: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(shape).replace("CONTAINER", container["name"])
    return dict(json.loads(text.replace("IMAGE", container.get("image", ""))))


def _step_log(now: dt.datetime) -> str:
    """A training container's log whose last step is a minute old (so it is not Hung)."""
    lines = []
    for i, age in enumerate((180, 120, 60)):
        stamp = (now - dt.timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%S.000000000Z")
        event = {"event": "step", "step": 100 * (i + 1), "loss": round(2.5 - 0.3 * i, 2)}
        lines.append(f"{stamp} {json.dumps(event, sort_keys=True)}")
    return "\n".join(lines) + "\n"


def _pods(job: dict[str, Any], shapes: dict[str, Any], now: dt.datetime, state: State) -> None:
    """The pods the Training Operator runs for `job`; its first Worker crash-loops."""
    name, ns = job["metadata"]["name"], job["metadata"]["namespace"]
    for rtype, spec in sorted(job["spec"][KUBEFLOW_REPLICA_KEYS[job["kind"]]].items()):
        template = spec["template"]
        for index in range(int(spec.get("replicas", 1))):
            pod_name = f"{name}-{rtype.lower()}-{index}"
            container = template["spec"]["containers"][0]
            crashing = rtype == "Worker" and index == 0
            shape = shapes["pod-crash-loop" if crashing else "pod-running"]
            labels = {JOB_NAME_LABEL: name, REPLICA_TYPE_LABEL: rtype.lower()}
            pod = {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {
                    "name": pod_name,
                    "namespace": ns,
                    "uid": f"pod-{pod_name}",
                    "creationTimestamp": CREATED,
                    "labels": {**labels, "training.kubeflow.org/replica-index": str(index)},
                    "ownerReferences": _owner(job),
                },
                "spec": copy.deepcopy(template["spec"]),
                "status": _pod_status(shape, container),
            }
            state.objects.append(pod)
            key = (ns, pod_name, container["name"])
            state.logs[(*key, False)] = _step_log(now)
            if crashing:
                state.logs[(*key, True)] = shapes["crash-log"]


def _scheduled(job: dict[str, Any], profile: ClusterProfile, shapes: dict[str, Any]) -> list[Any]:
    """The Kueue Workload or Volcano PodGroup that admitted `job`, as the scheduler wrote it."""
    meta = job["metadata"]
    if profile.scheduler.kind == "kueue":
        api, kind, name, status = (
            "kueue.x-k8s.io/v1beta1",
            "Workload",
            f"{job['kind'].lower()}-{meta['name']}",
            shapes["workload-admitted"],
        )
    elif profile.scheduler.kind == VOLCANO_SCHEDULER:
        api, kind, name, status = (
            "scheduling.volcano.sh/v1beta1",
            "PodGroup",
            meta["name"],
            shapes["podgroup-running"],
        )
    else:
        return []
    scheduled = {
        "apiVersion": api,
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "uid": f"{kind.lower()}-{name}",
            "creationTimestamp": CREATED,
            "ownerReferences": _owner(job),
        },
        "spec": {},
        "status": copy.deepcopy(status),
    }
    return [scheduled]


def cluster_state(profile: ClusterProfile, built: list[Manifest], now: dt.datetime) -> State:
    """The recorded state of `profile`'s cluster for the objects Git builds for it."""
    shapes = recorded()
    state = State(objects=[_namespace(n) for n in profile.namespaces])
    jobs = [m for m in built if training_kinds.is_training(m.api_version, m.kind)]
    for index, manifest in enumerate(jobs):
        name = f"{manifest.kind} {manifest.namespace}/{manifest.name}"
        if index == 1:
            state.story.append(f"{name}: in Git, never applied (status: missing)")
            continue
        job = _live(manifest.data, f"uid-{manifest.name}", _running_status(manifest, shapes))
        if index == 2:
            _set_image(job, CHANGED_IMAGE)
            state.story.append(f"{name}: applied with image {CHANGED_IMAGE} (status: differs)")
        state.objects.append(job)
        if index == 0:
            state.story.append(f"{name}: Running, its first Worker crash-looping (explain it)")
            if job["kind"] in KUBEFLOW_REPLICA_KEYS:
                _pods(job, shapes, now, state)
            state.objects += _scheduled(job, profile, shapes)
            stray = copy.deepcopy(job)
            stray["metadata"].update(name=STRAY, uid=f"uid-{STRAY}")
            state.objects.append(stray)
            state.story.append(f"{job['kind']} {manifest.namespace}/{STRAY}: not in Git")
    if len(jobs) > 3:
        state.story.append(f"{len(jobs) - 3} other job(s): Running as Git builds them")
    others = [m for m in built if m not in jobs and m.kind != "Namespace"]
    state.objects += [_live(m.data, f"uid-{m.kind}-{m.name}") for m in others]
    return state


def _running_status(manifest: Manifest, shapes: dict[str, Any]) -> dict[str, Any]:
    """The operator's status of a running job: every replica active."""
    status: dict[str, Any] = copy.deepcopy(shapes["job-running"])
    key = KUBEFLOW_REPLICA_KEYS.get(manifest.kind)
    if key is not None:
        specs = manifest.data["spec"].get(key) or {}
        status["replicaStatuses"] = {
            rtype: {"active": int(spec.get("replicas", 1))} for rtype, spec in specs.items()
        }
    return status


def _set_image(job: dict[str, Any], image: str) -> None:
    key = KUBEFLOW_REPLICA_KEYS.get(job["kind"])
    if key is None:
        job["spec"].setdefault("trainer", {})["image"] = image
        return
    for spec in job["spec"][key].values():
        spec["template"]["spec"]["containers"][0]["image"] = image


def recorded_objects(path: Path) -> list[dict[str, Any]]:
    """The objects of a YAML file (a `kubectl get ... -o yaml` List, or documents)."""
    found: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if isinstance(doc, dict) and isinstance(doc.get("items"), list):
            found += [item for item in doc["items"] if isinstance(item, dict)]
        elif isinstance(doc, dict) and doc.get("kind"):
            found.append(doc)
    return found


def kubeconfig(server: str, profile: ClusterProfile) -> dict[str, Any]:
    """A kubeconfig whose current context, and the profile's `context` if it names one,
    reach the sandbox."""
    names = sorted({CONTEXT, *([profile.context] if profile.context else [])})
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": server}}],
        "users": [{"name": CONTEXT, "user": {"token": "sandbox-not-a-secret"}}],
        "contexts": [{"name": n, "context": {"cluster": CONTEXT, "user": CONTEXT}} for n in names],
        "current-context": CONTEXT,
    }


@contextmanager
def running(state: State) -> Iterator[RunningEmulator]:
    """The emulator serving every kind a training cluster serves, holding `state`."""
    with serve({**DECLARED, **CRD_KINDS}) as api:
        served = {**DECLARED, **CRD_KINDS}
        api.add(*(o for o in state.objects if (o["apiVersion"], o["kind"]) in served))

        def store_logs(emulator: Any) -> None:
            emulator.logs.update(state.logs)

        api.call(store_logs)
        yield api
