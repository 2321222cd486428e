"""CPU sizing: compute threads and DataLoader workers of every rank against the CPU request.

Each rank of a pod runs `OMP_NUM_THREADS` intra-op threads (PyTorch's CPU kernels, DeepSpeed's
CPU Adam under ZeRO-Offload) and its DataLoader's worker processes, one busy core each when the
loader is the bottleneck (decoding, augmenting), plus itself. A pod that asks for fewer CPUs
than that is time-sliced with its neighbours, or throttled by the CFS quota of a CPU limit,
which shows as a GPU waiting for its input. Seed 001 runs 8 processes x OMP_NUM_THREADS=8 on a
32-CPU request; seed 000 gives each 4-CPU pod a rank with 4 workers.

Only what the manifest states is counted: a literal OMP_NUM_THREADS (torchrun sets 1 for
several processes per pod when it is unset), workers passed as an option (`--num-workers`,
`--workers`, `--dataloader-num-workers`), and the processes torchrun or the operator starts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_int
from trainops.facts.quantity import parse_quantity
from trainops.kube.launch import launches
from trainops.kube.objects import Object
from trainops.kube.pods import Container, PodTemplate
from trainops.kube.torchrun import nproc_per_pod
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

# Program options that set the DataLoader's worker processes (normalised: `-` as `_`).
WORKER_OPTIONS = ("num_workers", "workers", "dataloader_num_workers", "num_data_workers")


def _processes(obj: Object, pod: PodTemplate, ctx: Context) -> int:
    """Ranks per pod: torchrun's or the operator's count (`gpu`/`auto`: the pod's GPUs)."""
    counts = [v for v, _ in nproc_per_pod(obj, pod) if isinstance(v, int)]
    if counts:
        return max(counts)
    if any(v in ("gpu", "auto") for v, _ in nproc_per_pod(obj, pod)):
        return max(pod.gpus(ctx.cluster), 1)
    return 1


def _cpus(c: Container) -> float | None:
    value = parse_quantity(c.effective_requests().get("cpu"))
    return value if value is not None and value > 0 else None


def _workers(c: Container) -> tuple[int, tuple[str | int, ...]] | None:
    for launch in launches(c):
        options = launch.program_options
        for key in WORKER_OPTIONS:
            if key in options:
                value = as_int(options[key][0])
                if value is not None:
                    return value, options[key][1]
    return None


def _oversubscribed(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.training_pods:
        procs = _processes(obj, pod, ctx)
        who = pod.replica_type or "pod"
        for c in pod.containers():
            cpus = _cpus(c)
            if cpus is None or not launches(c):
                continue
            shown = f"{cpus:g}"
            omp = c.env.get("OMP_NUM_THREADS")
            threads = as_int(omp.value) if omp is not None else None
            if omp is not None and threads is not None and procs * threads > cpus:
                fit = max(1, math.floor(cpus / procs))
                yield Violation(
                    f"{who}: {procs} processes x OMP_NUM_THREADS={threads} = {procs * threads}"
                    f" compute threads on a {shown}-CPU request: their CPU work is time-sliced"
                    f" (throttled at a CPU limit); set OMP_NUM_THREADS={fit} ({shown} / {procs})"
                    f" or request {procs * threads} CPUs",
                    omp.path,
                )
            workers = _workers(c)
            if workers is not None and procs * (workers[0] + 1) > cpus:
                count, path = workers
                fit = max(0, math.floor(cpus / procs) - 1)
                ranks = f"{procs} process" + ("es" if procs > 1 else "")
                yield Violation(
                    f"{who}: {ranks} x ({count} DataLoader workers + the rank) ="
                    f" {procs * (count + 1)} busy processes on a {shown}-CPU request: the"
                    f" loader starves the GPU when they are time-sliced; use {fit} workers per"
                    f" rank or request {procs * (count + 1)} CPUs",
                    path,
                )


RULES = (
    Rule(
        slug="cpu-oversubscribed",
        code="TO120",
        severity=Severity.WARNING,
        summary="Processes per pod x OMP_NUM_THREADS, or processes x (DataLoader workers + 1),"
        " exceed the training container's CPU request.",
        why="Every rank runs OMP_NUM_THREADS compute threads and its loader's worker processes;"
        " more busy threads than requested CPUs are time-sliced with the node's other pods or"
        " throttled by a CPU limit's quota, and the GPUs wait for their input (seed 001: 8"
        " ranks x 8 threads on 32 CPUs; seed 000: a rank and 4 workers on 4 CPUs).",
        fix="Set OMP_NUM_THREADS to the CPU request / processes per pod, workers to that less"
        " one, or request more CPUs.",
        example="env: [{name: OMP_NUM_THREADS, value: '8'}]  # 8 ranks per pod\n"
        "resources: {requests: {cpu: '32'}, limits: {nvidia.com/gpu: 8}}",
        check=_oversubscribed,
        pods_only=True,
        references=(
            "https://pytorch.org/docs/stable/notes/cpu_threading_torchscript_inference.html",
            "https://pytorch.org/docs/stable/data.html#multi-process-data-loading",
        ),
    ),
)
