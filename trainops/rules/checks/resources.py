"""Resource rules: GPU requests vs limits, unbounded training containers, processes vs GPUs,
and /dev/shm for multi-process pods."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict
from trainops.facts.gpus import is_gpu_resource
from trainops.facts.quantity import GIB, parse_quantity
from trainops.facts.workloads import OTHER_ACCELERATOR
from trainops.kube.launch import launches
from trainops.kube.objects import Object
from trainops.kube.pods import Container, PodTemplate, gpu_products, requests_accelerator
from trainops.kube.torchrun import nproc_per_pod
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

# /dev/shm below this is too small for NCCL's shared-memory transport and DataLoader workers
# (the container default is 64 MiB). https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html#sharing-data
MIN_SHM_BYTES = 1 * GIB
# Program options that pick the device or the collective backend, and the CPU choices.
_BACKEND_OPTIONS = frozenset({"backend", "dist_backend", "device", "accelerator"})
_CPU_BACKENDS = frozenset({"gloo", "cpu", "mpi"})


def _gpu_request_limit(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        for c in pod.containers(init=True):
            for name, value in c.requests.items():
                if value is None or not is_gpu_resource(str(name), gpu_products(ctx.cluster)):
                    continue  # an empty request is the schema's finding (no value)
                path = (*c.path, "resources", "requests", str(name))
                if name not in c.limits:
                    yield Violation(
                        f"container `{c.name}` requests {name}: {value} but sets no limit;"
                        " extended resources must have request = limit",
                        path,
                    )
                elif c.limits[name] is not None and str(c.limits[name]) != str(value):
                    # An empty limit (`nvidia.com/gpu:`) is the schema's finding: no value.
                    yield Violation(
                        f"container `{c.name}` requests {name}: {value} but limits it to"
                        f" {c.limits[name]}; extended resources cannot be overcommitted",
                        path,
                    )


# What each missing bound costs a GPU container (only the missing ones are said).
_NO_MEMORY_LIMIT = (
    "without a memory limit a leak or a too-large batch takes the node's memory from the"
    " job's other ranks"
)
_NO_CPU_REQUEST = "without a CPU request the scheduler may pack it where data loading starves"


def _unbounded(obj: Object, ctx: Context) -> Iterator[Violation]:
    """One finding per container. An error on the containers that hold accelerators (their
    node is shared with the job's other ranks); a warning on CPU-only training containers
    (launchers, helpers) only when they set no resources at all (BestEffort: first evicted)."""
    for pod in obj.training_pods:
        for c in pod.containers():
            path = (*c.path, "resources") if c.resources else c.path
            missing = [
                (what, why)
                for what, why, absent in (
                    ("memory limit", _NO_MEMORY_LIMIT, "memory" not in c.limits),
                    ("CPU request", _NO_CPU_REQUEST, "cpu" not in c.effective_requests()),
                )
                if absent
            ]
            if not missing:
                continue
            if container_accelerated(c, ctx):
                yield Violation(
                    f"container `{c.name}` holds accelerators but has no"
                    f" {' and no '.join(what for what, _ in missing)}: "
                    + "; ".join(why for _, why in missing),
                    path,
                )
            elif not c.resources.get("limits") and not c.resources.get("requests"):
                yield Violation(
                    f"container `{c.name}` sets no resources (BestEffort): it is the first pod"
                    " evicted under node pressure, and the job fails with it",
                    path,
                    Severity.WARNING,
                )


def container_accelerated(c: Container, ctx: Context) -> bool:
    """A container that requests a GPU or another accelerator."""
    products = gpu_products(ctx.cluster)
    return any(
        is_gpu_resource(str(name), products)
        or OTHER_ACCELERATOR.match(str(name))
        or str(name).startswith("nvidia.com/")
        for name in c.effective_requests()
    )


def _nproc_gpu(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.training_pods:
        gpus = pod.gpus(ctx.cluster)
        if gpus == 0:
            yield from _nproc_without_gpu(obj, pod, ctx)
            continue
        for value, path in nproc_per_pod(obj, pod):
            if isinstance(value, int) and value != gpus:
                yield Violation(
                    f"{pod.replica_type or 'pod'}: {value} processes per pod but the pod gets"
                    f" {gpus} GPU(s); "
                    + ("some GPUs sit idle" if value < gpus else "processes share GPUs"),
                    path,
                )


def _nproc_without_gpu(obj: Object, pod: PodTemplate, ctx: Context) -> Iterator[Violation]:
    """Several processes per pod (or `gpu`) for GPU training in a pod that gets no GPU and no
    other accelerator: every rank fails at `torch.cuda.set_device` (or torchrun at start)."""
    if requests_accelerator(pod, ctx.cluster) or _cpu_backend(pod):
        return
    intent = _gpu_intent(pod)
    for value, path in nproc_per_pod(obj, pod):
        if value == "gpu" or (intent and isinstance(value, int) and value > 1):
            yield Violation(
                f"{pod.replica_type or 'pod'}: {value} processes per pod but the pod requests"
                " no GPU: the ranks find no CUDA device (torchrun's `gpu` fails outright);"
                " request the GPUs, or use a CPU backend (gloo) and say so",
                path,
            )


def _gpu_intent(pod: PodTemplate) -> bool:
    """The pod is meant for GPUs: NCCL settings, `--backend nccl`, CUDA_VISIBLE_DEVICES, or a
    CUDA/GPU image (and not a CPU one). Without such a sign several processes per pod may be
    CPU training (torchrun picks gloo)."""
    for c in pod.containers():
        image = (c.image or "").lower()
        if "cpu" in image:
            return False
        if any(word in image for word in ("cuda", "gpu", "nvcr.io")):
            return True
        if any(n.startswith("NCCL_") or n == "CUDA_VISIBLE_DEVICES" for n in c.env):
            return True
        for launch in launches(c):
            backend = launch.program_options.get("backend") or launch.program_options.get(
                "dist_backend"
            )
            if backend is not None and backend[0].lower() == "nccl":
                return True
    return False


def _cpu_backend(pod: PodTemplate) -> bool:
    """The program is told to use a CPU backend (`--backend gloo`, `--device cpu`, ...)."""
    for c in pod.containers():
        for launch in launches(c):
            for key, (value, _) in launch.program_options.items():
                if key in _BACKEND_OPTIONS and value.lower() in _CPU_BACKENDS:
                    return True
    return False


def _has_memory_shm(pod: PodTemplate) -> tuple[bool, float | None, tuple[str | int, ...]]:
    """(mounted, size limit in bytes or None, path) of a memory-backed /dev/shm: an emptyDir
    with medium Memory, or the node's own /dev/shm through a hostPath (the usual recipe on EFA
    and RDMA nodes; its size is the node's)."""
    volumes = pod.volumes
    for c in pod.containers():
        for mount in c.volume_mounts:
            if str(mount.get("mountPath", "")).rstrip("/") != "/dev/shm":
                continue
            volume, vpath = volumes.get(str(mount.get("name")), ({}, ()))
            empty_dir = volume.get("emptyDir")
            if isinstance(empty_dir, dict) and empty_dir.get("medium") == "Memory":
                size = (
                    parse_quantity(empty_dir.get("sizeLimit")) if "sizeLimit" in empty_dir else None
                )
                return True, size, (*vpath, "emptyDir")
            host = as_dict(volume.get("hostPath"))
            if str(host.get("path", "")).rstrip("/") == "/dev/shm":
                return True, None, (*vpath, "hostPath")
    return False, None, ()


def _shm(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.training_pods:
        gpus = pod.gpus(ctx.cluster)
        procs = max([v for v, _ in nproc_per_pod(obj, pod) if isinstance(v, int)], default=1)
        if gpus <= 1 and procs <= 1:
            continue
        mounted, size, path = _has_memory_shm(pod)
        what = f"{pod.replica_type or 'pod'} runs {max(gpus, procs)} processes"
        if not mounted:
            yield Violation(
                f"{what} but has no memory-backed /dev/shm (the container default is 64Mi):"
                " NCCL's shared-memory transport and DataLoader workers fail with bus errors",
                pod.spec_path,
            )
        elif size is not None and size < MIN_SHM_BYTES:
            yield Violation(f"{what} but its /dev/shm is limited below 1Gi", path)


RULES = (
    Rule(
        slug="gpu-request-limit-mismatch",
        code="TO101",
        severity=Severity.ERROR,
        summary="An extended GPU resource in requests differs from limits, or is in requests only.",
        why="Kubernetes does not overcommit extended resources: the API server rejects a pod"
        " whose GPU request differs from its limit, so the job never starts.",
        fix="Set the GPU count in `limits` (requests default to it), or the same number in both.",
        example="resources:\n  requests: {nvidia.com/gpu: 8}\n  limits: {nvidia.com/gpu: 4}",
        check=_gpu_request_limit,
        pods_only=True,
        references=("https://kubernetes.io/docs/tasks/manage-gpus/scheduling-gpus/",),
    ),
    Rule(
        slug="resources-unbounded",
        code="TO102",
        severity=Severity.ERROR,
        summary="A training container holding accelerators without a memory limit or a CPU"
        " request (one finding per container); warning: a CPU-only training container"
        " (launcher, helper) with no resources at all. Runs on every training pod: Kubeflow"
        " jobs, Volcano Jobs, JobSets, and batch Jobs/Pods that use accelerators or launchers.",
        why="Without a memory limit one runaway rank starves every pod on the node; without a"
        " CPU request data loading competes for whatever CPU is left. A launcher or helper"
        " needs little, but a BestEffort pod is evicted first and takes the job with it.",
        fix="Give every accelerator container `limits.memory` and `requests.cpu`"
        " (or `limits.cpu`, which the request defaults to); give launchers small requests.",
        example="resources:\n  limits: {nvidia.com/gpu: 8}",
        check=_unbounded,
        pods_only=True,
    ),
    Rule(
        slug="nproc-gpu-mismatch",
        code="TO103",
        severity=Severity.ERROR,
        summary="Processes per pod (`nprocPerNode`, `--nproc_per_node`) differ from the GPUs"
        " the pod gets, or `gpu` (or several, where NCCL settings, `--backend nccl` or a CUDA"
        " image show it is meant for GPUs) in a pod that requests no GPU nor other accelerator.",
        why="Fewer processes than GPUs leaves GPUs idle; more makes ranks share a GPU"
        " (`LOCAL_RANK` past the device count fails with an invalid device ordinal); with no"
        " GPU at all every rank fails at `torch.cuda.set_device`.",
        fix="Make `--nproc-per-node` (or `nprocPerNode`) equal the pod's GPU limit, or use `auto`.",
        example="command: [torchrun, --nproc_per_node=8, train.py]\n"
        "resources: {limits: {nvidia.com/gpu: 4}}",
        check=_nproc_gpu,
        pods_only=True,
    ),
    Rule(
        slug="shm-missing",
        code="TO104",
        severity=Severity.WARNING,
        summary="A multi-GPU or multi-process pod without a memory-backed /dev/shm (an"
        " emptyDir with medium Memory, or the node's /dev/shm as a hostPath), or one below 1 GiB.",
        why="Containers get a 64 MiB /dev/shm; NCCL's shared-memory transport and PyTorch"
        " DataLoader workers need far more and die with bus errors.",
        fix="Mount an `emptyDir: {medium: Memory, sizeLimit: 16Gi}` volume at /dev/shm (or the"
        " node's /dev/shm through a hostPath).",
        example="resources: {limits: {nvidia.com/gpu: 8}}  # and no /dev/shm volume",
        check=_shm,
        pods_only=True,
        references=(
            "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",
        ),
    ),
)
