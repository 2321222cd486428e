"""Elastic PyTorchJob rules: a consistent elasticPolicy, launched through torchrun."""

from __future__ import annotations

from collections.abc import Iterator

from generators.findings import Severity
from generators.rules.context import Context, Object, as_int
from generators.rules.data.operator import RDZV_BACKENDS
from generators.rules.launch import DEEPSPEED, LEGACY_LAUNCH, TORCHRUN, launches
from generators.rules.model import Rule, Violation


def elastic_range(obj: Object) -> tuple[int, int] | None:
    """[min, max] pods of an elastic PyTorchJob (Worker replicas when unset)."""
    policy = obj.elastic_policy
    if policy is None:
        return None
    worker = obj.replica("Worker")
    replicas = worker.replicas if worker is not None and worker.replicas is not None else 1
    low = as_int(policy.get("minReplicas"))
    high = as_int(policy.get("maxReplicas"))
    return (low if low is not None else replicas, high if high is not None else replicas)


def _inconsistent(obj: Object, ctx: Context) -> Iterator[Violation]:
    policy = obj.elastic_policy
    if policy is None:
        return
    base = ("spec", "elasticPolicy")
    low, high = elastic_range(obj) or (1, 1)
    if low > high:
        yield Violation(f"minReplicas {low} is above maxReplicas {high}", (*base, "minReplicas"))
    backend = policy.get("rdzvBackend")
    if backend is not None and str(backend) not in RDZV_BACKENDS:
        yield Violation(
            f"rdzvBackend `{backend}` is not one torchrun supports"
            f" ({', '.join(sorted(RDZV_BACKENDS))})",
            (*base, "rdzvBackend"),
        )
    for pod in obj.pods:
        if pod.replicas is not None and not low <= pod.replicas <= high and pod.rtype == "worker":
            yield Violation(
                f"Worker replicas {pod.replicas} outside elasticPolicy [{low}, {high}]",
                (*pod.path[:-1], "replicas"),
            )
        for c in pod.containers():
            for launch in launches(c):
                if launch.tool not in {TORCHRUN, LEGACY_LAUNCH}:
                    continue
                nnodes = launch.option("nnodes")
                if nnodes is None:
                    continue
                value, path = nnodes
                if ":" not in value and low != high:
                    yield Violation(
                        f"torchrun --nnodes={value} is fixed but elasticPolicy allows"
                        f" {low} to {high} pods: the rendezvous waits for {value} nodes and"
                        " the job never scales; drop --nnodes (the operator sets PET_NNODES"
                        f"={low}:{high})",
                        path,
                    )
                elif ":" in value and value != f"{low}:{high}":
                    yield Violation(
                        f"torchrun --nnodes={value} disagrees with elasticPolicy"
                        f" {low}:{high}; drop --nnodes (the operator sets PET_NNODES)",
                        path,
                    )


def _needs_torchrun(obj: Object, ctx: Context) -> Iterator[Violation]:
    if obj.elastic_policy is None:
        return
    for pod in obj.pods:
        containers = pod.containers()
        main = next((c for c in containers if c.name == "pytorch"), None)
        main = main or (containers[0] if containers else None)
        if main is None or not main.argv:
            continue  # the image's entrypoint: not visible here
        tools = [launch.tool for launch in launches(main)]
        if TORCHRUN in tools:
            continue
        path = main.argv[0][1]
        if LEGACY_LAUNCH in tools:
            message = (
                "launches with the deprecated `torch.distributed.launch`, which ignores the"
                " operator's PET_* rendezvous settings"
            )
        elif DEEPSPEED in tools:
            message = "launches with the `deepspeed` launcher, which does not do elastic rendezvous"
        else:
            message = "does not launch through torchrun, so no elastic agent joins the rendezvous"
        yield Violation(
            f"{pod.replica_type}: elasticPolicy is set but container `{main.name}` {message}",
            path,
        )


RULES = (
    Rule(
        slug="elastic-inconsistent",
        severity=Severity.ERROR,
        summary="elasticPolicy with min > max, replicas outside [min, max], a fixed `--nnodes`"
        " where min != max, or an unsupported rendezvous backend.",
        why="torchrun takes its node range from `--nnodes` (or PET_NNODES, which the operator"
        " sets from elasticPolicy); a fixed count waits for exactly that many nodes, so the job"
        " neither scales nor survives losing a pod.",
        fix="Drop `--nnodes` from the command and let the operator set PET_NNODES=min:max; keep"
        " Worker replicas inside [min, max]; use rdzvBackend c10d.",
        example="elasticPolicy: {minReplicas: 2, maxReplicas: 8}\n"
        "command: [torchrun, --nnodes=4, train.py]",
        check=_inconsistent,
        references=("https://pytorch.org/docs/stable/elastic/run.html",),
    ),
    Rule(
        slug="elastic-needs-torchrun",
        severity=Severity.ERROR,
        summary="elasticPolicy but the command does not launch through torchrun (e.g. the"
        " deprecated `torch.distributed.launch`, or plain `python`).",
        why="Only torchrun's elastic agent reads the PET_* variables and joins the rendezvous;"
        " anything else runs a fixed world and the elasticPolicy does nothing.",
        fix="Launch with `torchrun` (or `python -m torch.distributed.run`) and no fixed --nnodes.",
        example="elasticPolicy: {minReplicas: 1, maxReplicas: 4}\n"
        "command: [python, -m, torch.distributed.launch, train.py]",
        check=_needs_torchrun,
    ),
)
