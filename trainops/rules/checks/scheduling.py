"""Gang scheduling: all pods under one gang scheduler, a satisfiable minAvailable, and a
scheduler the cluster runs."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_int
from trainops.facts.schedulers import VOLCANO_SCHEDULER
from trainops.kube.objects import Object, launches_training
from trainops.kube.pods import requests_accelerator
from trainops.kube.torchrun import nnodes_range, torchrun_nnodes
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

GANG_SCHEDULER = VOLCANO_SCHEDULER
# Pod annotation naming the Volcano PodGroup a pod belongs to.
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"


def _gang(obj: Object, ctx: Context) -> Iterator[Violation]:
    if not obj.is_training_job:
        return
    pods = obj.pods
    names = {p.scheduler_name for p in pods}
    on_volcano = [p for p in pods if p.scheduler_name == GANG_SCHEDULER]
    if on_volcano and len(on_volcano) != len(pods):
        for pod in pods:
            if pod.scheduler_name != GANG_SCHEDULER:
                yield Violation(
                    f"{pod.replica_type} uses scheduler `{pod.scheduler_name or 'default'}`"
                    f" while {', '.join(p.replica_type or '' for p in on_volcano)} use Volcano:"
                    " the gang is split and can deadlock half-scheduled",
                    pod.spec_path,
                )
    min_path, min_available = _min_available(obj)
    total = obj.pod_count()
    if min_available is not None and min_available > total:
        yield Violation(
            f"minAvailable {min_available} is above the job's {total} pods: the gang can never"
            " be scheduled",
            min_path,
        )
    if ctx.cluster is None or ctx.cluster.scheduler.kind == GANG_SCHEDULER:
        return
    gang = GANG_SCHEDULER in names or obj.is_volcano_job or "schedulingPolicy" in obj.run_policy
    gang = gang or any(VOLCANO_GROUP_ANNOTATION in p.annotations for p in pods)
    if gang:
        yield Violation(
            f"gang scheduling (Volcano) settings but cluster `{ctx.cluster.name}` runs the"
            f" `{ctx.cluster.scheduler.kind}` scheduler: the pods wait for a scheduler that"
            " is not there",
            ("spec",),
        )


def _min_available(obj: Object) -> tuple[tuple[str | int, ...], int | None]:
    """Where the job's gang size is written and its value: a Volcano Job's `minAvailable`, a
    Kubeflow job's `runPolicy.schedulingPolicy.minAvailable`."""
    if obj.is_volcano_job:
        return ("spec", "minAvailable"), as_int(obj.spec.get("minAvailable"))
    policy = as_dict(obj.run_policy.get("schedulingPolicy"))
    return ("spec", "runPolicy", "schedulingPolicy", "minAvailable"), as_int(
        policy.get("minAvailable")
    )


# Pods that start only once the others run, and are not counted in a gang by their operator:
# the MPI launcher (MPI Operator), a Volcano MPI job's master.
_ONE_LAUNCHER_KINDS = {"MPIJob"}


def _partial_gang(obj: Object, ctx: Context) -> Iterator[Violation]:
    """A gang smaller than a job that is not elastic: torchrun with fixed `--nnodes`, mpirun,
    JAX and Paddle collectives connect every rank before the first step. (TFJob is left out:
    a parameter-server job runs with the workers it has.)"""
    if not (obj.is_kubeflow_job or obj.is_volcano_job) or obj.kind == "TFJob":
        return
    if obj.elastic_policy is not None:
        return
    if obj.is_volcano_job and not any(
        launches_training(p) or requests_accelerator(p) for p in obj.pods
    ):
        return  # a Volcano Job runs anything (nginx replicas): training is what it launches
    spans = [nnodes_range(value) for _, value, _ in torchrun_nnodes(obj)]
    if any(span is None or span[0] != span[1] for span in spans):
        return  # an elastic (or unreadable) --nnodes: the job may run below its pod count
    path, min_available = _min_available(obj)
    total = obj.pod_count()
    # A launcher (an MPIJob's, a Volcano MPI job's master) may start after the workers.
    slack = 1 if obj.kind in _ONE_LAUNCHER_KINDS or obj.is_volcano_job else 0
    if min_available is None or min_available <= 0 or min_available >= total - slack:
        return
    yield Violation(
        f"minAvailable {min_available} lets {min_available} of the job's {total} pods start"
        " while the rest wait: a job that is not elastic needs every rank before its first"
        " step, so the pods that started hold their GPUs doing nothing, and two such jobs can"
        f" hold each other's GPUs for ever; set minAvailable to {total} (or remove it: the"
        " operator then counts every pod)",
        path,
    )


RULES = (
    Rule(
        slug="gang-scheduling-inconsistent",
        code="TO401",
        severity=Severity.ERROR,
        summary="Volcano on some replica templates but not all, `minAvailable` above the job's"
        " pod count, or gang settings for a scheduler the cluster does not run.",
        why="A split gang lets some pods hold GPUs while the rest wait (deadlock across jobs);"
        " an unsatisfiable minAvailable never schedules; a missing scheduler leaves pods"
        " Pending.",
        fix="Let the cluster overlay set the scheduler on every replica, keep minAvailable at"
        " most the pod count.",
        example="Master: {template: {spec: {schedulerName: volcano}}}\n"
        "Worker: {template: {spec: {}}}",
        check=_gang,
        references=("https://volcano.sh/en/docs/podgroup/",),
    ),
    Rule(
        slug="gang-partial",
        code="TO407",
        severity=Severity.WARNING,
        summary="A job that is not elastic with a gang (`minAvailable`) smaller than its pods:"
        " part of it starts and waits for the rest.",
        why="torchrun with a fixed `--nnodes`, mpirun and JAX/Paddle collectives connect every"
        " rank before the first step: the pods a partial gang starts hold GPUs idle, and two"
        " such jobs can deadlock each other.",
        fix="Set minAvailable to the job's pod count (an MPI launcher may be left out), or"
        " remove it; make the job elastic if it can run smaller.",
        example="runPolicy: {schedulingPolicy: {minAvailable: 1}}\n"
        "pytorchReplicaSpecs: {Worker: {replicas: 4}}",
        check=_partial_gang,
        references=("https://volcano.sh/en/docs/podgroup/",),
    ),
)
