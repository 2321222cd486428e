"""Elastic PyTorchJob rules: a consistent elasticPolicy, launched through torchrun."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.facts.kubeflow import RDZV_BACKENDS
from trainops.rules.context import Context
from trainops.rules.launch import DEEPSPEED, LEGACY_LAUNCH, TORCHRUN, launches
from trainops.rules.model import Rule, Violation
from trainops.rules.objects import Object
from trainops.rules.values import as_int


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


def _nnodes_range(value: str) -> tuple[int, int] | None:
    """torchrun's `--nnodes`: `N` or `MIN:MAX`; None for what we cannot read (`$(PET_NNODES)`)."""
    low, _, high = value.partition(":")
    a, b = as_int(low), as_int(high or low)
    return (a, b) if a is not None and b is not None else None


def _fixed_world(obj: Object) -> Iterator[Violation]:
    """A non-elastic PyTorchJob: torchrun's --nnodes must admit exactly its pods."""
    if obj.kind != "PyTorchJob" or not obj.is_kubeflow_job:
        return
    pods = obj.pod_count()
    shape = " + ".join(f"{p.replica_type} {p.replicas}" for p in obj.pods)
    for pod in obj.pods:
        for c in pod.containers():
            for launch in launches(c):
                if launch.tool not in {TORCHRUN, LEGACY_LAUNCH}:
                    continue
                nnodes = launch.option("nnodes")
                span = _nnodes_range(nnodes[0]) if nnodes is not None else None
                if nnodes is None or span is None or span[0] <= pods <= span[1]:
                    continue
                outcome = (
                    "node ranks past it do not fit the world and the rendezvous fails or hangs"
                    if span[1] < pods
                    else "the rendezvous waits for nodes that never come and the job hangs"
                )
                yield Violation(
                    f"{pod.replica_type}: torchrun --nnodes={nnodes[0]} but the job runs {pods}"
                    f" pods ({shape}): {outcome}; drop --nnodes (the operator sets"
                    f" PET_NNODES={pods})",
                    nnodes[1],
                )


def _inconsistent(obj: Object, ctx: Context) -> Iterator[Violation]:
    policy = obj.elastic_policy
    if policy is None:
        yield from _fixed_world(obj)
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
        " where min != max, or an unsupported rendezvous backend; in a non-elastic PyTorchJob,"
        " a torchrun `--nnodes` other than its pod count (Master + Workers).",
        why="torchrun takes its node range from `--nnodes` (or PET_NNODES, which the operator"
        " sets from elasticPolicy, or to the pod count); a fixed count waits for exactly that"
        " many nodes, so the job neither scales nor survives losing a pod, and a count that"
        " differs from the pods the job runs leaves nodes outside the world: the rendezvous"
        " hangs or fails.",
        fix="Drop `--nnodes` from the command and let the operator set PET_NNODES (min:max for"
        " elastic jobs, the pod count otherwise); keep Worker replicas inside [min, max]; use"
        " rdzvBackend c10d.",
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
