"""Rendezvous addresses: MASTER_ADDR, torchrun's --master_addr / --rdzv_endpoint and an
elasticPolicy's rdzvHost must name something the manifest set makes resolvable: a Service,
or a pod DNS name its controller publishes (the Training Operator's per-replica Services, an
Indexed Job's `<job>-<index>.<subdomain>`, a JobSet's `<jobset>-<job>-<i>-<j>.<subdomain>`,
Volcano's svc plugin)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict, is_placeholder
from trainops.kube.launch import DEEPSPEED, LEGACY_LAUNCH, TORCHRUN, launches
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Path, Rule, Violation

_LOCAL = frozenset({"localhost", "0.0.0.0", "::1"})
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _addresses(obj: Object) -> Iterator[tuple[str, str, Path]]:
    """(what, host, path) of every rendezvous address written in the object."""
    policy = obj.elastic_policy
    if policy is not None and isinstance(policy.get("rdzvHost"), str):
        yield "elasticPolicy.rdzvHost", policy["rdzvHost"], ("spec", "elasticPolicy", "rdzvHost")
    for pod in obj.training_pods:
        for c in pod.containers():
            var = c.env.get("MASTER_ADDR")
            if var is not None and var.value:
                yield "MASTER_ADDR", var.value, var.path
            for launch in launches(c):
                if launch.tool not in {TORCHRUN, LEGACY_LAUNCH, DEEPSPEED}:
                    continue
                for key in ("master_addr", "rdzv_endpoint"):
                    found = launch.option(key)
                    if found is not None:
                        host = found[0].rsplit(":", 1)[0] if key == "rdzv_endpoint" else found[0]
                        yield f"--{key}", host, found[1]


def _literal_host(host: str) -> bool:
    """A DNS name we can judge: no variable, no placeholder, not an IP or localhost."""
    if not host or "$" in host or "{" in host or is_placeholder(host) or host in _LOCAL:
        return False
    try:
        ipaddress.ip_address(host)
        return False
    except ValueError:
        return all(_DNS_LABEL.match(label) for label in host.lower().split("."))


def _own_names(obj: Object, ctx: Context) -> tuple[list[str], str]:
    """Host-name patterns (`{i}` for an index) the object's controller publishes for its
    pods, and why they resolve (or what is missing)."""
    name = obj.name
    if obj.is_kubeflow_job:
        names = [f"{name}-{p.rtype}-{{i}}" for p in obj.pods] + [f"{name}-launcher"]
        return names, "the Training Operator's per-replica Services"
    if obj.is_volcano_job:
        names = [f"{name}-{p.rtype}-{{i}}.{name}" for p in obj.pods]
        return names, "Volcano's svc plugin"
    if obj.is_jobset:
        network = as_dict(obj.spec.get("network"))
        if network.get("enableDNSHostnames") is False:
            return [], "enableDNSHostnames: false gives the JobSet's pods no DNS names"
        sub = str(network.get("subdomain") or name)
        names = [f"{name}-{p.replica_type}-{{i}}-{{i}}.{sub}" for p in obj.pods]
        return names, f"the JobSet's headless Service `{sub}` (its subdomain)"
    if obj.is_indexed_job:
        pod = obj.pods[0] if obj.pods else None
        sub = str(pod.spec.get("subdomain", "")) if pod is not None else ""
        if not sub:
            return [], (
                "an Indexed Job's pods get the hostname `<job>-<index>` but a DNS name only with"
                " spec.template.spec.subdomain set to a headless Service's name"
            )
        if ctx.find("Service", sub, obj.namespace) is None:
            return [], (
                f"the pods' subdomain `{sub}` names no Service in the manifest set: add the"
                f" headless Service `{sub}` (clusterIP: None) selecting the Job's pods"
            )
        return [f"{name}-{{i}}.{sub}"], f"the headless Service `{sub}`"
    return [], ""


def _resolves(host: str, patterns: list[str]) -> bool:
    """`host` matches one of the patterns, with or without a namespace / cluster suffix."""
    for pattern in patterns:
        regex = re.escape(pattern).replace(re.escape("{i}"), r"\d+")
        if re.match(f"^{regex}(\\.|$)", host):
            return True
    return False


def _unresolvable(obj: Object, ctx: Context) -> Iterator[Violation]:
    seen: set[str] = set()  # one finding per address: `--master_addr=$MASTER_ADDR` is the env's
    for what, raw, path in _addresses(obj):
        host = raw.strip().lower().rstrip(".")
        if not _literal_host(host) or host in seen:
            continue
        seen.add(host)
        first, _, rest = host.partition(".")
        own, how = _own_names(obj, ctx)
        if first.startswith(f"{obj.name}-") and how:
            if not _resolves(host, own):
                expected = f" (`{own[0].replace('{i}', '0')}`, ...)" if own else ""
                yield Violation(
                    f"{what} `{raw}` names this {obj.kind}'s own pods, but no such name"
                    f" resolves: {how}{expected}; rendezvous waits until it times out",
                    path,
                )
            continue
        namespace = rest.split(".")[0] if rest else obj.namespace
        if rest and not (rest.count(".") == 0 or ".svc" in rest):
            continue  # an external name (`etcd.example.com`): not ours to resolve
        if ctx.find("Service", first, namespace) is not None or _resolves(host, own):
            continue
        if rest and ctx.find("Service", rest.split(".")[0], obj.namespace) is not None:
            continue  # `<pod>.<headless service>`
        yield Violation(
            f"{what} `{raw}` names no Service in the manifest set"
            + (f" (namespace {namespace})" if namespace else "")
            + ": the name does not resolve and rendezvous waits until it times out; add the"
            " Service, or point at a name the job's controller publishes",
            path,
        )


# Options that give torchrun a multi-node world, and the env it reads them from (PET_*).
# https://pytorch.org/docs/stable/elastic/run.html
_WORLD_OPTIONS = ("nnodes", "rdzv_endpoint", "master_addr", "standalone")


def _alone(obj: Object, ctx: Context) -> Iterator[Violation]:
    """torchrun with no rendezvous in a job of several pods: each pod is a world of its own."""
    if obj.is_kubeflow_job or obj.is_trainjob:
        # The Training Operator (and Trainer v2's torch plugin) hands torchrun its world
        # through PET_* env.
        return
    pods = sum(p.replicas or 0 for p in obj.training_pods)
    if pods < 2:
        return
    for pod in obj.training_pods:
        for c in pod.containers():
            if any(name.startswith("PET_") for name in c.env) or c.has_env_from:
                continue
            for launch in launches(c):
                if launch.tool not in {TORCHRUN, LEGACY_LAUNCH}:
                    continue
                nnodes = launch.option("nnodes")
                if nnodes is not None and nnodes[0] not in {"1", "1:1"}:
                    continue
                if any(launch.option(key) is not None for key in _WORLD_OPTIONS[1:]):
                    continue
                yield Violation(
                    f"{obj.kind} runs {pods} pods but container `{c.name}` starts torchrun with"
                    " no --nnodes, --rdzv_endpoint or --master_addr: every pod rendezvouses"
                    " with itself and trains a model of its own, not one job across the pods",
                    launch.words[0][1],
                )


RULES = (
    Rule(
        slug="rendezvous-unresolvable",
        code="TO303",
        severity=Severity.ERROR,
        summary="MASTER_ADDR, torchrun's --master_addr/--rdzv_endpoint or an elasticPolicy's"
        " rdzvHost that names nothing the manifest set makes resolvable: a Service that is not"
        " there, a job's own pod name its controller does not publish (an Indexed Job without"
        " the `subdomain` and headless Service it needs, a JobSet pod under the wrong"
        " subdomain).",
        why="Every rank connects to the rendezvous address first; a name that does not resolve"
        " keeps them retrying until the rendezvous timeout (minutes), then the job fails, or"
        " hangs where retries are unlimited. Indexed Job pods are `<job>-<index>` but resolve"
        " only as `<job>-<index>.<subdomain>` with `subdomain` naming a headless Service; a"
        " JobSet's pods are `<jobset>-<job>-<i>-<j>.<subdomain>`, the subdomain defaulting to"
        " the JobSet's name.",
        fix="Add the Service (for pods: a headless Service, clusterIP: None, selecting them, and"
        " `subdomain` set to its name), or use the name the controller publishes (the Training"
        " Operator sets MASTER_ADDR itself when the job has a Master).",
        example="kind: Job  # completionMode: Indexed, no subdomain\n"
        "env: [{name: MASTER_ADDR, value: train-0.train-svc}]",
        check=_unresolvable,
        references=(
            "https://kubernetes.io/docs/concepts/workloads/controllers/job/#completion-mode",
            "https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/",
            "https://github.com/kubernetes-sigs/jobset",
        ),
    ),
    Rule(
        slug="rendezvous-missing",
        code="TO304",
        severity=Severity.ERROR,
        summary="torchrun (or torch.distributed.run) with no --nnodes, --rdzv_endpoint or"
        " --master_addr (nor PET_* env) in a job of several pods that no Training Operator"
        " wires up: a Volcano Job, a JobSet, a parallel batch Job.",
        why="Without a rendezvous torchrun makes each pod a world of one node: the pods train"
        " separate models side by side, each on its own shard or the whole data set, and"
        " nothing fails; Volcano's pytorch plugin sets MASTER_ADDR/RANK/WORLD_SIZE, which"
        " torchrun does not read for its own rendezvous.",
        fix="Pass `--nnodes=N --rdzv_backend=c10d --rdzv_endpoint=<pod-0's DNS name>:29400`"
        " (or --master_addr/--node_rank from the controller's env), or run it as a PyTorchJob.",
        example="kind: Job  # batch.volcano.sh, replicas: 2\n"
        "command: [python, -m, torch.distributed.run, train.py]",
        check=_alone,
    ),
)
