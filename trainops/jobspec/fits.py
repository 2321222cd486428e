"""Will the job fit its targets' GPUs? The memory estimate (`trainops.facts.memory`) against
the GPU product each target lands on (`trainops.facts.gpus.GPU_MEMORY_MIB`), at the smallest
world size the job runs at there (an elastic job's `minReplicas`: the fewest GPUs to partition
ZeRO's states over). A job that cannot fit is refused at load with the single changes that
make it fit. Only jobs that state their model (`model:`) are judged; docs/memory.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from trainops.facts import deepspeed as ds_facts
from trainops.facts import memory
from trainops.facts.gpus import product_memory
from trainops.facts.quantity import parse_quantity
from trainops.jobspec import model
from trainops.jobspec.problems import Collector

# The trainer's defaults (trainer/config.py) for the flags the estimate reads.
TRAINER_DEFAULTS = {"--seq-len": "64", "--batch-size": "32", "--precision": "fp32",
                    "--optimizer": "adamw"}  # fmt: skip


def _our_trainer(job: model.TrainingJob) -> bool:
    return list(job.command[-2:]) == ["-m", "trainer"]


def flag(args: Sequence[str], name: str) -> str | None:
    """The value of `--name=value` or `--name value` (the last one given wins, as argparse);
    `true`/`false` for a bare boolean flag and its `--no-` form."""
    found = None
    for i, arg in enumerate(args):
        if arg.startswith(name + "="):
            found = arg.split("=", 1)[1]
        elif arg == name:
            following = args[i + 1] if i + 1 < len(args) else ""
            found = following if following and not following.startswith("--") else "true"
        elif arg == "--no-" + name[2:]:
            found = "false"
    return found


def _trainer_flag(job: model.TrainingJob, name: str) -> str | None:
    if not _our_trainer(job):
        return None
    return flag(job.args, name) or TRAINER_DEFAULTS.get(name)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def workload(job: model.TrainingJob, gpus: int) -> memory.Workload | None:
    """What one of the job's GPUs holds at `gpus` GPUs; None when the job states no model."""
    size = job.model
    if size is None or size.parameters is None:
        return None
    config = job.deepspeed_config()
    zero = (config or {}).get("zero_optimization") or {}
    stage = None
    if job.deepspeed is not None:  # the config's stage as DeepSpeed reads it, else the spec's
        stage = _int(zero.get("stage"))
        stage = job.deepspeed.zero_stage if stage is None else stage
    if config is not None:
        precision = (ds_facts.enabled_precisions(config) or ("fp32",))[0]
        micro = _int(config.get(ds_facts.MICRO_BATCH))
    else:
        precision = _trainer_flag(job, "--precision") or "fp32"
        micro = _int(int(v)) if (v := _trainer_flag(job, "--batch-size")) else None
    seq = _trainer_flag(job, "--seq-len")
    checkpointing = size.gradient_checkpointing
    if checkpointing is None:
        checkpointing = _trainer_flag(job, "--gradient-checkpointing") == "true"
    return memory.Workload(
        parameters=size.parameters,
        largest_layer=size.largest_layer
        or (size.vocab_size * size.hidden_size if size.vocab_size and size.hidden_size else 0)
        or size.parameters // 50,
        gpus=gpus,
        zero_stage=stage,
        precision=precision,
        offload_optimizer=_offloaded(zero.get("offload_optimizer")),
        offload_params=_offloaded(zero.get("offload_param")),
        optimizer=_trainer_flag(job, "--optimizer") or "adamw",
        micro_batch=size.micro_batch or micro,
        sequence_length=size.sequence_length or (int(seq) if seq and seq.isdigit() else None),
        hidden_size=size.hidden_size,
        layers=size.layers,
        vocab_size=size.vocab_size,
        gradient_checkpointing=checkpointing,
        gpus_per_pod=max(job.gpus_per_replica, 1),
    )


def _offloaded(section: object) -> bool:
    device = section.get("device", "none") if isinstance(section, dict) else "none"
    return str(device).lower() in {"cpu", "nvme"}


def check(
    job: model.TrainingJob,
    cluster: model.ClusterProfile,
    target: model.Target,
    where: list[str | int],
    out: Collector,
) -> None:
    """The job's estimate at its smallest size on `target` against one GPU's memory."""
    if not job.gpus_per_replica or not cluster.gpus:
        return
    gpu = cluster.gpu(target.gpu_product) if target.gpu_product else cluster.gpus[0]
    capacity = product_memory(gpu.node_selector) if gpu is not None else None
    sizes = job.world_sizes(target)
    if gpu is None or capacity is None or not sizes:
        return
    w = workload(job, sizes[0])
    if w is None:
        return
    host = parse_quantity(job.memory) if job.memory else None
    _host_fits(w, host, out)
    est = memory.estimate(w)
    if est.total <= capacity:
        return
    per_pod = max(job.gpus_per_replica, 1)
    declared = cluster.capacity.nodes.get(gpu.name)
    most = declared * gpu.per_node if declared else per_pod * memory.MAX_GPU_STEPS
    found = memory.fixes(w, capacity, per_pod, most, host)
    advice = (
        "; it fits with " + ", or ".join(_wording(job, f) for f in found)
        if found
        else "; no single change makes it fit: a GPU with more memory, or a smaller model"
    )
    out.add(
        where,
        f"does not fit a `{gpu.name}` GPU of `{cluster.name}` ({memory.gib(capacity)}):"
        f" estimated {memory.gib(est.total)} per GPU at {w.gpus} GPUs, its smallest size"
        f" ({est.describe()}; {_basis(w)}){advice} (docs/memory.md)",
    )


def _host_fits(w: memory.Workload, host: float | None, out: Collector) -> None:
    """What ZeRO-3 offloads must fit the pod's memory (DeepSpeed's host-side estimate)."""
    needed = memory.host_bytes(w)
    if host is None or needed is None or needed <= host:
        return
    message = (
        f"its offloaded ZeRO-3 states need {memory.gib(needed)} of host memory per pod at"
        f" {w.gpus} GPUs (DeepSpeed's estimate, `estimate_zero3_model_states_mem_needs`), but a"
        f" pod has `resources.memory` {memory.gib(host)}: raise it, or run at more pods"
        " (docs/memory.md)"
    )
    if not any(p.message == message for p in out.problems):  # once, not once per target
        out.add(["resources", "memory"], message)


def _basis(w: memory.Workload) -> str:
    engine = f"ZeRO-{w.zero_stage}" if w.zero_stage is not None else f"DDP, {w.optimizer}"
    offload = " + optimizer offload" if w.offload_optimizer else ""
    offload += " + parameter offload" if w.offload_params else ""
    shape = (
        f", micro batch {w.micro_batch} x {w.sequence_length} tokens"
        + (", gradient checkpointing" if w.gradient_checkpointing else "")
        if memory.activation_bytes(w) is not None
        else ""
    )
    return f"{w.parameters / 1e9:.2f}B parameters, {engine}{offload}, {w.precision}{shape}"


def _wording(job: model.TrainingJob, fix: memory.Fix) -> str:
    """The change in the spec's own terms, and the estimate with it."""
    ours = _our_trainer(job)
    micro = f"`--batch-size={fix.value}` in args" if ours else f"`model.microBatch: {fix.value}`"
    change = {
        "checkpointing": "`--gradient-checkpointing` in args"
        if ours
        else "`model.gradientCheckpointing: true` (and turn it on in the program)",
        "micro_batch": f"`deepspeed.microBatchPerGpu: {fix.value}`" if job.deepspeed else micro,
        "zero_stage": f"`deepspeed.zeroStage: {fix.value}`"
        if job.deepspeed
        else f"DeepSpeed ZeRO-{fix.value} (`deepspeed: {{zeroStage: {fix.value}}}`)",
        "offload_optimizer": "`offload_optimizer: {device: cpu}` in"
        " `deepspeed.config.zero_optimization`",
        "offload_params": "`offload_param: {device: cpu}` and `offload_optimizer: {device: cpu}`"
        " in `deepspeed.config.zero_optimization`",
        "gpus": _gpus_wording(job, fix.value),
    }[fix.kind]
    return f"{change} ({memory.gib(fix.estimate.total)})"


def _gpus_wording(job: model.TrainingJob, gpus: int) -> str:
    pods = gpus // max(job.gpus_per_replica, 1)
    if job.elastic:
        return f"`elastic.minReplicas: {pods}` ({gpus} GPUs)"
    return f"`replicas: {pods}` ({gpus} GPUs)"
