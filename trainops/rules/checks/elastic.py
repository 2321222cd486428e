"""Elastic PyTorchJob rules: a consistent elasticPolicy, launched through torchrun."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_int
from trainops.facts.kubeflow import RDZV_BACKENDS
from trainops.facts.torch_env import SHARED_STORE_OFF
from trainops.facts.workloads import LWS_GROUP
from trainops.kube.launch import DEEPSPEED, LEGACY_LAUNCH, TORCHRUN, Launch, launches
from trainops.kube.objects import Object
from trainops.kube.pods import Container
from trainops.kube.torchrun import nnodes_range, torchrun_nnodes
from trainops.kube.words import assignments
from trainops.rules.context import Context
from trainops.rules.model import Path, Rule, Violation


def _range_invalid(obj: Object, ctx: Context) -> Iterator[Violation]:
    if obj.elastic_policy is None:
        return
    low, high = obj.elastic_range or (1, 1)
    if low > high:
        yield Violation(
            f"minReplicas {low} is above maxReplicas {high}",
            ("spec", "elasticPolicy", "minReplicas"),
        )
    for pod in obj.pods:
        if pod.replicas is not None and not low <= pod.replicas <= high and pod.rtype == "worker":
            yield Violation(
                f"Worker replicas {pod.replicas} outside elasticPolicy [{low}, {high}]",
                (*pod.path[:-1], "replicas"),
            )


def _rdzv_backend(obj: Object, ctx: Context) -> Iterator[Violation]:
    backend = (obj.elastic_policy or {}).get("rdzvBackend")
    if backend is not None and str(backend) not in RDZV_BACKENDS:
        yield Violation(
            f"rdzvBackend `{backend}` is not one torchrun supports"
            f" ({', '.join(sorted(RDZV_BACKENDS))})",
            ("spec", "elasticPolicy", "rdzvBackend"),
        )


def _elastic_nnodes(obj: Object, ctx: Context) -> Iterator[Violation]:
    if obj.elastic_policy is None:
        return
    low, high = obj.elastic_range or (1, 1)
    for _, value, path in torchrun_nnodes(obj):
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


def _fixed_nnodes(obj: Object, ctx: Context) -> Iterator[Violation]:
    """A non-elastic PyTorchJob: torchrun's --nnodes must admit exactly its pods."""
    if obj.elastic_policy is not None or obj.kind != "PyTorchJob" or not obj.is_kubeflow_job:
        return
    pods = obj.pod_count()
    shape = " + ".join(f"{p.replica_type} {p.replicas}" for p in obj.pods)
    for replica_type, value, path in torchrun_nnodes(obj):
        span = nnodes_range(value)
        if span is None or span[0] <= pods <= span[1]:
            continue
        outcome = (
            "node ranks past it do not fit the world and the rendezvous fails or hangs"
            if span[1] < pods
            else "the rendezvous waits for nodes that never come and the job hangs"
        )
        yield Violation(
            f"{replica_type}: torchrun --nnodes={value} but the job runs {pods}"
            f" pods ({shape}): {outcome}; drop --nnodes (the operator sets"
            f" PET_NNODES={pods})",
            path,
        )


def _world_pods(obj: Object) -> tuple[int, str] | None:
    """Pods one torchrun world spans in a workload that is no Kubeflow job, and how to say
    it: a batch Job's parallel pods, every torchrun pod of a JobSet, one LeaderWorkerSet group
    (the leader and its `size - 1` workers); None for any other kind."""
    torchrun = [
        p
        for p in obj.training_pods
        if any(launch.tool == TORCHRUN for c in p.containers() for launch in launches(c))
    ]
    if not torchrun:
        return None
    if obj.group == "batch" and obj.kind == "Job":
        return torchrun[0].replicas or 0, "parallel pods"
    if obj.is_jobset:
        return sum(p.replicas or 0 for p in torchrun), "pods"
    if obj.group == LWS_GROUP:
        size = as_int(as_dict(obj.spec.get("leaderWorkerTemplate")).get("size"))
        return (1 if size is None else size), "pods per group (leader and workers)"
    return None


def _workload_nnodes(obj: Object, ctx: Context) -> Iterator[Violation]:
    """A batch Job, JobSet or LeaderWorkerSet: torchrun's fixed --nnodes must admit the pods
    its world spans (nothing else sets PET_NNODES for them)."""
    world = _world_pods(obj)
    if world is None:
        return
    pods, what = world
    for pod in obj.training_pods:
        for c in pod.containers():
            for launch in launches(c):
                nnodes = launch.option("nnodes") if launch.tool == TORCHRUN else None
                span = nnodes_range(nnodes[0]) if nnodes is not None else None
                if nnodes is None or span is None or span[0] <= pods <= span[1]:
                    continue
                outcome = (
                    "node ranks past it do not fit the world and the rendezvous fails or hangs"
                    if span[1] < pods
                    else "the rendezvous waits for nodes that never come and the job hangs"
                )
                yield Violation(
                    f"torchrun --nnodes={nnodes[0]} but the {obj.kind} runs {pods} {what}:"
                    f" {outcome}; make --nnodes {pods}",
                    nnodes[1],
                )


def _nnodes_mismatch(obj: Object, ctx: Context) -> Iterator[Violation]:
    yield from _fixed_nnodes(obj, ctx)
    yield from _workload_nnodes(obj, ctx)


def _accelerate(words: list[tuple[str, Path]]) -> bool:
    """`accelerate launch ...` (Hugging Face Accelerate: it calls torch.distributed.run)."""
    heads = [posixpath.basename(w) for w, _ in words[:2]]
    return heads == ["accelerate", "launch"]


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
        elif any(_accelerate(launch.words) for launch in launches(main)):
            message = (
                "launches with `accelerate launch`, which runs torch's elastic agent with its"
                " own fixed `--num_machines` and `--main_process_ip`, not the operator's PET_*"
                " rendezvous settings: the job never scales; use torchrun"
            )
        else:
            message = "does not launch through torchrun, so no elastic agent joins the rendezvous"
        yield Violation(
            f"{pod.replica_type}: elasticPolicy is set but container `{main.name}` {message}",
            path,
        )


# The rendezvous backends whose handler (DynamicRendezvousHandler) shares its store with the
# workers; torch's `etcd` (EtcdRendezvousHandler) and `static` do not (`use_agent_store`).
SHARING_BACKENDS = frozenset({"c10d", "etcd-v2"})


def _backend(obj: Object, c: Container, launch: Launch) -> str:
    """torchrun's rendezvous backend: its option, else PET_RDZV_BACKEND (an elastic
    PyTorchJob's operator sets it from rdzvBackend, defaulted to c10d), else `static`."""
    option = launch.option("rdzv_backend")
    if option is not None:
        return option[0]
    if obj.elastic_policy is not None:
        return str(obj.elastic_policy.get("rdzvBackend", "c10d"))
    var = c.env.get("PET_RDZV_BACKEND")
    return var.value if var is not None and var.value else "static"


def _elastic_launches(obj: Object) -> Iterator[tuple[Container, Path]]:
    """Each container whose torchrun runs elastic rendezvous (a dynamic backend and a node
    range, or an elastic PyTorchJob's PET_* settings), with where it is launched."""
    elastic_job = obj.elastic_policy is not None
    for pod in obj.training_pods:
        for c in pod.containers():
            for launch in launches(c):
                if launch.tool != TORCHRUN or _backend(obj, c, launch) not in SHARING_BACKENDS:
                    continue
                nnodes = launch.option("nnodes")
                span = nnodes_range(nnodes[0]) if nnodes is not None else None
                ranged = span is not None and span[0] < span[1]
                if ranged or (elastic_job and (nnodes is None or ":" in nnodes[0])):
                    yield c, launch.words[0][1]
                    break


def _store_shared(obj: Object, ctx: Context) -> Iterator[Violation]:
    name, value = SHARED_STORE_OFF
    for c, path in _elastic_launches(obj):
        var = c.env.get(name)
        if var is not None and var.value == value:
            continue
        if any(name in assignments([w for w, _ in launch.words]) for launch in launches(c)):
            continue
        yield Violation(
            f"container `{c.name}` runs elastic torchrun without {name}={value}: with torch"
            " 2.5 and later its agents share the rendezvous round's TCPStore with their"
            " workers, and when a pod is lost the replacement waits for bootstrap keys the"
            " surviving rank 0 never writes again (`DistStoreError: wait timeout`): the job"
            " dies with the pod it was meant"
            f' to survive; set {name}: "{value}" in its env',
            var.path if var is not None else path,
        )


RULES = (
    Rule(
        slug="elastic-range-invalid",
        code="TO201",
        severity=Severity.ERROR,
        summary="elasticPolicy with minReplicas above maxReplicas, or Worker replicas outside"
        " [min, max].",
        why="The operator starts the Worker replicas you ask for, and torchrun's elastic agent"
        " only admits a group size inside [min, max]: a job outside its own range never forms.",
        fix="Keep minReplicas <= Worker replicas <= maxReplicas.",
        example="elasticPolicy: {minReplicas: 4, maxReplicas: 2}",
        check=_range_invalid,
        references=("https://pytorch.org/docs/stable/elastic/run.html",),
    ),
    Rule(
        slug="elastic-nnodes-conflict",
        code="TO202",
        severity=Severity.ERROR,
        summary="An elastic PyTorchJob whose torchrun `--nnodes` is fixed where min != max, or"
        " names another range than elasticPolicy.",
        why="torchrun takes its node range from `--nnodes` over PET_NNODES (which the operator"
        " sets to min:max): a fixed count waits for exactly that many nodes, so the job neither"
        " scales nor survives losing a pod.",
        fix="Drop `--nnodes` from the command and let the operator set PET_NNODES.",
        example="elasticPolicy: {minReplicas: 2, maxReplicas: 8}\n"
        "command: [torchrun, --nnodes=4, train.py]",
        check=_elastic_nnodes,
        references=("https://pytorch.org/docs/stable/elastic/run.html",),
    ),
    Rule(
        slug="rdzv-backend-unsupported",
        code="TO203",
        severity=Severity.ERROR,
        summary="elasticPolicy.rdzvBackend that torchrun does not support.",
        why="torchrun refuses to start with a rendezvous backend it does not know, on every pod.",
        fix="Use rdzvBackend c10d (no etcd to run).",
        example="elasticPolicy: {rdzvBackend: zookeeper, minReplicas: 1, maxReplicas: 4}",
        check=_rdzv_backend,
        references=("https://pytorch.org/docs/stable/elastic/rendezvous.html",),
    ),
    Rule(
        slug="nnodes-pod-mismatch",
        code="TO204",
        severity=Severity.ERROR,
        summary="A non-elastic PyTorchJob whose torchrun `--nnodes` differs from its pod count"
        " (Master + Workers); a batch Job, JobSet or LeaderWorkerSet whose fixed `--nnodes`"
        " differs from the pods its torchrun world spans (parallelism, the JobSet's torchrun"
        " pods, one group's size).",
        why="The operator sets PET_NNODES to the pod count; an explicit `--nnodes` overrides it,"
        " and a count that differs from the pods the job runs leaves nodes outside the world:"
        " the rendezvous hangs or fails.",
        fix="Drop `--nnodes` from the command (the operator sets PET_NNODES to the pod count).",
        example="Master: {replicas: 1}\nWorker: {replicas: 3}\n"
        "command: [torchrun, --nnodes=3, train.py]",
        check=_nnodes_mismatch,
        references=("https://pytorch.org/docs/stable/elastic/run.html",),
    ),
    Rule(
        slug="elastic-needs-torchrun",
        code="TO205",
        severity=Severity.ERROR,
        summary="elasticPolicy but the command does not launch through torchrun (e.g. the"
        " deprecated `torch.distributed.launch`, `accelerate launch`, or plain `python`).",
        why="Only torchrun's elastic agent reads the PET_* variables and joins the rendezvous;"
        " anything else runs a fixed world and the elasticPolicy does nothing (`accelerate"
        " launch` runs the agent, but with its own fixed machine count and endpoint).",
        fix="Launch with `torchrun` (or `python -m torch.distributed.run`) and no fixed --nnodes.",
        example="elasticPolicy: {minReplicas: 1, maxReplicas: 4}\n"
        "command: [python, -m, torch.distributed.launch, train.py]",
        check=_needs_torchrun,
    ),
    Rule(
        slug="elastic-store-shared",
        code="TO208",
        severity=Severity.WARNING,
        summary="Elastic torchrun (an elastic PyTorchJob, or `--nnodes=MIN:MAX`) without"
        " `TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1`: it dies when one pod is lost.",
        why="Since torch 2.5 the elastic agent shares the rendezvous TCPStore with its workers"
        " and caches the first round's bootstrap info (torch 2.13"
        " `torch/distributed/elastic/rendezvous/dynamic_rendezvous.py`, next_rendezvous): a"
        " replacement pod joining a later round waits for keys the surviving rank 0 never"
        " writes again, and every agent times out (`DistStoreError: wait timeout ..."
        " /torch.rendezvous...`). The setting makes each round build its own.",
        fix='Set `TORCH_DISABLE_SHARE_RDZV_TCP_STORE: "1"` in the training container\'s env'
        " (trainops renders it on every elastic job).",
        example="elasticPolicy: {minReplicas: 1, maxReplicas: 4}\n"
        "command: [torchrun, train.py]  # no TORCH_DISABLE_SHARE_RDZV_TCP_STORE",
        check=_store_shared,
        references=(
            "https://github.com/pytorch/pytorch/blob/main/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py",
            "https://github.com/pytorch/pytorch/issues/135712",
        ),
    ),
)
