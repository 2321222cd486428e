"""RDMA (InfiniBand/RoCE/EFA) rules: a pod that asks for RDMA must get the device, the
capability to pin memory, and the network interface, and all rank pods of a job alike."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_list
from trainops.facts.gpus import container_gpus
from trainops.kube.objects import Object
from trainops.kube.pods import Container, PodTemplate, gpu_products
from trainops.rules.checks.nccl import (
    describe,
    ib_enabled,
    ib_forced,
    mpi_roles,
    rank_nccl_settings,
)
from trainops.rules.context import Context
from trainops.rules.model import Path, Rule, Violation

# Pod annotation Multus reads to attach extra networks (the RDMA interface).
# https://github.com/k8snetworkplumbingwg/multus-cni/blob/master/docs/how-to-use.md
MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
# RDMA needs to pin (lock) memory for its registered buffers.
RDMA_CAPABILITY = "IPC_LOCK"
# The host's RDMA device nodes. Mounted as a hostPath they are visible but, outside a
# privileged container, the container's device cgroup denies opening them: only the device
# plugin's resource (or privileged) grants access.
# https://github.com/Mellanox/k8s-rdma-shared-dev-plugin
INFINIBAND_DEVICES = "/dev/infiniband"
# AWS EFA's device plugin resource gives the pod its RDMA devices.
# https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html
EFA_RESOURCE = "vpc.amazonaws.com/efa"
# SR-IOV virtual functions (the SR-IOV network device plugin's resources, named by the
# cluster: `intel.com/sriov_111`, `nvidia.com/sriov_rdma_vf`, `openshift.io/mlxnics`) carry
# the RDMA device of their VF into the pod.
# https://github.com/k8snetworkplumbingwg/sriov-network-device-plugin#configurations
SRIOV_MARKERS = ("sriov", "mlxnic")


def _privileged(c: Container) -> bool:
    return c.security_context.get("privileged") is True


def _ipc_lock(c: Container) -> bool:
    caps = as_dict(c.security_context.get("capabilities"))
    added = {str(x).removeprefix("CAP_") for x in as_list(caps.get("add"))}
    return _privileged(c) or RDMA_CAPABILITY in added


def _device_resource(pod: PodTemplate, ctx: Context) -> bool:
    """The pod requests an RDMA device plugin's resource (the cluster's, rdma/*, Mellanox's,
    EFA, or an SR-IOV virtual function's)."""
    wanted = (
        ctx.cluster.network.rdma.device_resource
        if (ctx.cluster and ctx.cluster.network.rdma)
        else None
    )
    for c in pod.containers():
        for key in c.effective_requests():
            name = str(key)
            if name in {wanted, EFA_RESOURCE} or "rdma" in name.lower():
                return True
            if name.startswith("mellanox.com/") or any(m in name.lower() for m in SRIOV_MARKERS):
                return True
    return False


def _infiniband_mount(pod: PodTemplate) -> tuple[Container, Path] | None:
    """A container that mounts the host's /dev/infiniband, and the mount's path."""
    host_volumes = {
        name
        for name, (volume, _) in pod.volumes.items()
        if str(as_dict(volume.get("hostPath")).get("path", "")).startswith(INFINIBAND_DEVICES)
    }
    for c in pod.containers():
        for i, mount in enumerate(c.volume_mounts):
            if mount.get("name") in host_volumes:
                return c, (*c.path, "volumeMounts", i)
    return None


def _has_rdma_device(pod: PodTemplate, ctx: Context) -> bool:
    """The device plugin's resource, or a privileged container: the runtime gives a
    privileged container every device node of the host, /dev/infiniband included, whether
    or not it is also mounted as a hostPath."""
    return _device_resource(pod, ctx) or any(_privileged(c) for c in pod.containers())


def _hostpath_devices(pod: PodTemplate, ctx: Context) -> Iterator[Violation]:
    """/dev/infiniband from the host, without the device resource and not privileged."""
    mounted = _infiniband_mount(pod)
    if mounted is None or _device_resource(pod, ctx) or _privileged(mounted[0]):
        return
    c, path = mounted
    yield Violation(
        f"container `{c.name}` mounts the host's {INFINIBAND_DEVICES} but is not privileged"
        " and the pod requests no RDMA device resource: the device cgroup denies opening the"
        " devices and NCCL silently falls back to TCP; request the RDMA device plugin's"
        " resource (or run privileged)",
        path,
    )


def _ib_settings(obj: Object, pod: PodTemplate, ctx: Context) -> Iterator[Violation]:
    settings = rank_nccl_settings(obj, pod)
    enabling = ib_enabled(settings)
    if enabling is None:
        return
    what = f"{pod.replica_type or 'pod'} asks for InfiniBand/RoCE ({describe(enabling)})"
    if not _has_rdma_device(pod, ctx):
        if ib_forced(enabling):
            yield Violation(
                f"{what} but requests no RDMA device resource: NCCL_NET=IB forces the IB"
                " transport and NCCL fails at initialisation without an HCA",
                enabling.path,
            )
        elif _infiniband_mount(pod) is None:
            yield Violation(
                f"{what} but requests no RDMA device resource: {enabling.name}"
                + (
                    "=0 is NCCL's default and only allows IB"
                    if enabling.name == "NCCL_IB_DISABLE"
                    else " only selects HCAs"
                )
                + ", so with no HCA in the pod NCCL falls back to TCP sockets; request the"
                " RDMA device or drop the setting",
                enabling.path,
                Severity.WARNING,
            )
        return
    checked: set[Path] = set()
    for s in settings:
        c = s.container
        if c.path in checked:
            continue
        checked.add(c.path)
        if not _ipc_lock(c):
            yield Violation(
                f"{what} but container `{c.name}` lacks the IPC_LOCK capability RDMA"
                " needs to pin memory",
                c.path,
                Severity.WARNING,
            )
    if pod.spec.get("hostNetwork") is not True and MULTUS_ANNOTATION not in pod.annotations:
        yield Violation(
            f"{what} but the pod has no Multus network annotation ({MULTUS_ANNOTATION}):"
            " it has no RDMA-capable interface",
            pod.path,
            Severity.WARNING,
        )


def _uneven_ipc_lock(obj: Object, ctx: Context) -> Iterator[Violation]:
    """Rank pods (those holding GPUs) of one job where some get IPC_LOCK and others do not:
    RDMA is meant for all, and the ranks without it cannot register memory. An MPIJob's
    Launcher runs no rank (unless `runLauncherAsWorker`), whatever it holds."""
    pods = mpi_roles(obj)[1] if obj.kind == "MPIJob" and obj.is_kubeflow_job else obj.training_pods
    ranks = [p for p in pods if p.gpus(ctx.cluster) > 0]
    locked = [p for p in ranks if any(_ipc_lock(c) for c in p.containers())]
    if not locked or len(locked) == len(ranks):
        return
    names = "/".join(p.replica_type or "pod" for p in locked)
    for pod in ranks:
        if pod in locked:
            continue
        for c in pod.containers():
            if container_gpus(c.data, gpu_products(ctx.cluster)):
                yield Violation(
                    f"{pod.replica_type or 'pod'} container `{c.name}` lacks IPC_LOCK while"
                    f" {names} add it for RDMA: these ranks cannot pin memory, and NCCL fails"
                    " or falls back to TCP for every collective they join",
                    (*c.path, "securityContext") if c.security_context else c.path,
                    Severity.WARNING,
                )


def _rdma_incomplete(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        yield from _hostpath_devices(pod, ctx)
        yield from _ib_settings(obj, pod, ctx)
    yield from _uneven_ipc_lock(obj, ctx)


RULES = (
    Rule(
        slug="rdma-incomplete",
        code="TO503",
        severity=Severity.ERROR,
        summary="RDMA asked for but not granted: InfiniBand/RoCE in the NCCL env of pods that"
        " run NCCL (mpirun exports count for the MPI ranks) with no RDMA device (error when"
        " NCCL_NET=IB forces IB; warning when NCCL_IB_DISABLE=0 or NCCL_IB_HCA only allow it);"
        " the host's /dev/infiniband as a hostPath with neither the device resource nor"
        " privileged (error); warning: no IPC_LOCK, no Multus network annotation, or IPC_LOCK"
        " on some rank replica types only.",
        why="With NCCL_NET=IB and no HCA, NCCL fails at initialisation. NCCL_IB_DISABLE=0 is"
        " NCCL's default and NCCL_IB_HCA only selects HCAs: without the device NCCL silently"
        " falls back to TCP at a fraction of the bandwidth. A hostPath /dev/infiniband shows the"
        " device nodes, but outside a privileged container the device cgroup denies opening"
        " them (a privileged container has every host device, mounted or not). Without"
        " IPC_LOCK NCCL cannot pin memory; without the Multus network it has no RDMA"
        " interface; ranks that lack what the others have slow down every collective."
        " mpirun's `-x` exports take effect in the Worker ranks, not in the Launcher.",
        fix="Request the RDMA device plugin's resource (e.g. `rdma/rdma_shared_device_a: 1`,"
        " `vpc.amazonaws.com/efa`), add capability IPC_LOCK and the Multus network annotation"
        " on every pod that runs ranks (hostNetwork pods on RDMA nodes: privileged); or drop"
        " the IB settings where the cluster has no RDMA.",
        example="env: [{name: NCCL_NET, value: IB}]\nresources: {limits: {nvidia.com/gpu: 8}}",
        check=_rdma_incomplete,
        pods_only=True,
        references=("https://github.com/Mellanox/k8s-rdma-shared-dev-plugin",),
    ),
)
