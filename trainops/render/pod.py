"""The pod template every replica of a job shares: the training container (torchrun around
the program, env, resources, mounts), the data-sync init container, volumes, security, and
for one cluster its NCCL env, GPU product, RDMA device, scheduler and network.

`pod_template(job)` is the cluster-agnostic base; `pod_template(job, cluster, target)` what
runs on that cluster (the overlay patches one into the other). A `Replica` says what differs
between the replica types of one job (a TFJob's parameter servers, an MPIJob's Launcher):
container name, command, size, and whether the pod holds the job's data and NCCL traffic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainops.facts import deepspeed as ds_config
from trainops.facts.gpus import DEFAULT_GPU_RESOURCE
from trainops.facts.kubeflow import PYTORCH_CONTAINER
from trainops.facts.monitoring import METRICS_PORT_NAME
from trainops.facts.names import DATA_SYNC_CONTAINER, DEEPSPEED_VOLUME, SHM_VOLUME
from trainops.facts.nccl import RDMA_CAPABILITY
from trainops.facts.schedulers import VOLCANO_SCHEDULER
from trainops.facts.scratch import SCRATCH_ENV, SCRATCH_VOLUMES
from trainops.facts.torch_env import SHARED_STORE_OFF
from trainops.jobspec.model import ClusterProfile, GpuProduct, Rdma, Target, TrainingJob
from trainops.render import overrides

METRICS_PORT_ENV = "TRAINOPS_METRICS_PORT"
JOB_LABEL = "trainops.dev/job"
MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"


@dataclass(frozen=True)
class Replica:
    """One replica type's pod: what it runs and what it holds."""

    container: str
    """Container name (the operators find the training container by it)."""
    command: list[str] | None
    """The container's command; None: the image's (or the operator's) default."""
    args: list[str] | None
    """The container's args; None: none (the image's, or what the operator sets)."""
    gpus: int
    """GPUs of one pod (0: no GPU node selector either)."""
    cpu: str | None
    """CPU request; None: none."""
    memory: str | None
    """Memory request and limit; None: none."""
    data: bool = True
    """Mounts the job's volumes, /dev/shm and the DeepSpeed config, runs dataSync, serves
    metrics: False for a pod that only launches others (the MPI Launcher)."""
    nccl_device: bool = True
    """Joins the NCCL traffic: the RDMA device and IPC_LOCK on RDMA clusters (the Multus
    network is in every pod: an MPI Launcher talks to its Workers over it)."""
    nccl_env: bool = True
    """Gets the cluster's NCCL env: the NCCL pods, and the MPI Launcher that exports it to the
    ranks; not a CPU parameter server, which talks gRPC."""
    env: tuple[tuple[str, str], ...] = ()
    """Env of this replica type only, after the job's."""


def training_replica(job: TrainingJob, container: str, command: list[str] | None) -> Replica:
    """The training pods of `job` (Master/Worker, Chief/Worker, MPI Workers)."""
    return Replica(
        container=container,
        command=command,
        args=program_args(job),
        gpus=job.gpus_per_replica,
        cpu=job.cpu,
        memory=job.memory,
    )


def deepspeed_configmap_name(job: TrainingJob) -> str:
    """Name before kustomize's content hash suffix (configMapGenerator adds it)."""
    return f"{job.name}-deepspeed"


def torchrun_command(job: TrainingJob) -> list[str]:
    """`python -m pkg` -> `torchrun -m pkg`; `python train.py` -> `torchrun train.py`.

    No --nnodes/--nproc-per-node/--rdzv-* flags: torchrun reads PET_NNODES,
    PET_NPROC_PER_NODE, PET_RDZV_* from the environment, which the Training Operator
    sets from the PyTorchJob spec (an explicit --nnodes=4 would override the elastic
    PET_NNODES=min:max and silently make the job fixed-size).
    """
    return ["torchrun", *job.command[1:]]


def program_args(job: TrainingJob) -> list[str]:
    args = list(job.args)
    if job.deepspeed:
        args += [job.deepspeed.config_flag, ds_config.CONFIG_PATH]
    return args


def _env(
    job: TrainingJob,
    target: Target | None,
    cluster: ClusterProfile | None,
    replica_env: tuple[tuple[str, str], ...] = (),
    with_nccl: bool = True,
) -> list[Any]:
    """The training container's env: one entry per name. A target's variable replaces the
    job's variable of the same name where it stands; the target's new ones come last."""
    overrides = target.env if target is not None else {}
    values = {k: overrides.get(k, v) for k, v in job.env.items()}
    added = {k: v for k, v in overrides.items() if k not in job.env}
    own = {*values, *added, *(s.name for s in job.secret_env)}
    env = scratch_env(own)
    env += [{"name": k, "value": v} for k, v in values.items()]
    env += [
        {"name": s.name, "valueFrom": {"secretKeyRef": {"name": s.secret, "key": s.key}}}
        for s in job.secret_env
    ]
    name, value = SHARED_STORE_OFF
    if job.elastic is not None and name not in own:
        env.append({"name": name, "value": value})  # survives a lost pod: facts/torch_env.py
    if job.serves_trainer_metrics():
        env.append({"name": METRICS_PORT_ENV, "value": str(job.metrics_port)})
    env += [{"name": k, "value": v} for k, v in replica_env]
    if cluster is not None and with_nccl:
        env += [{"name": k, "value": v} for k, v in nccl_env(cluster).items()]
    env += [{"name": k, "value": v} for k, v in added.items()]
    return env


def scratch_env(own: set[str]) -> list[dict[str, Any]]:
    """HOME and XDG_CACHE_HOME on the home emptyDir, first (a job's env may refer to
    $(HOME)); a name in `own` (the job's or the target's env) is the user's, not ours."""
    return [{"name": k, "value": v} for k, v in SCRATCH_ENV if k not in own]


def scratch(job: TrainingJob) -> tuple[list[Any], list[Any]]:
    """(emptyDir volumes, mounts) at /tmp and $HOME, in every pod: what programs write when
    the root filesystem is read-only. A job volume already mounted at the path replaces it."""
    taken = {v.mount_path.rstrip("/") for v in job.volumes}
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    for name, path in SCRATCH_VOLUMES:
        if path not in taken:
            volumes.append({"name": name, "emptyDir": {}})
            mounts.append({"name": name, "mountPath": path})
    return volumes, mounts


def nccl_env(cluster: ClusterProfile) -> dict[str, str]:
    """NCCL settings for the cluster's transport (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)."""
    net = cluster.network
    if net.is_rdma and net.rdma is not None:
        return {
            "NCCL_IB_DISABLE": "0",
            "NCCL_IB_HCA": net.rdma.hca,
            "NCCL_IB_GID_INDEX": str(net.rdma.gid_index),
            "NCCL_NET_GDR_LEVEL": net.rdma.gdr_level,
            "NCCL_SOCKET_IFNAME": net.socket_interface,
        }
    return {"NCCL_IB_DISABLE": "1", "NCCL_SOCKET_IFNAME": net.socket_interface}


def _gpu(cluster: ClusterProfile | None, target: Target | None) -> GpuProduct | None:
    if cluster is None:
        return None
    if target is not None and target.gpu_product:
        return cluster.gpu(target.gpu_product)
    return cluster.gpus[0]


def _resources(
    replica: Replica, gpu: GpuProduct | None, cluster: ClusterProfile | None
) -> dict[str, Any]:
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    if replica.cpu is not None:
        requests["cpu"] = replica.cpu
    if replica.memory is not None:
        requests["memory"] = limits["memory"] = replica.memory
    if replica.gpus:
        # The base names the default resource; a cluster's product may name another.
        resource = gpu.resource if gpu else DEFAULT_GPU_RESOURCE
        requests[resource] = replica.gpus
        limits[resource] = replica.gpus
    rdma = _rdma(cluster) if replica.nccl_device else None
    if rdma is not None:
        requests[rdma.device_resource] = rdma.device_count
        limits[rdma.device_resource] = rdma.device_count
    return {k: v for k, v in (("limits", limits), ("requests", requests)) if v}


def _rdma(cluster: ClusterProfile | None) -> Rdma | None:
    return cluster.network.rdma if cluster and cluster.network.is_rdma else None


def _volumes(job: TrainingJob) -> tuple[list[Any], list[Any]]:
    """(pod volumes, training-container mounts)."""
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    for vol in job.volumes:
        volumes.append({"name": vol.name, "persistentVolumeClaim": {"claimName": vol.claim_name}})
        mount: dict[str, Any] = {"name": vol.name, "mountPath": vol.mount_path}
        if vol.read_only:
            mount["readOnly"] = True
        mounts.append(mount)
    volumes.append(
        {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": job.shared_memory}}
    )
    mounts.append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
    if job.deepspeed:
        volumes.append(
            {"name": DEEPSPEED_VOLUME, "configMap": {"name": deepspeed_configmap_name(job)}}
        )
        mounts.append(
            {"name": DEEPSPEED_VOLUME, "mountPath": ds_config.CONFIG_DIR, "readOnly": True}
        )
    return volumes, mounts


def _init_containers(job: TrainingJob) -> list[Any]:
    sync = job.data_sync
    if sync is None:
        return []
    vol = next(v for v in job.volumes if v.name == sync.volume)
    own = {*sync.env, *(s.name for s in sync.secret_env)}
    env = scratch_env(own)
    env += [{"name": k, "value": v} for k, v in sync.env.items()]
    env += [
        {"name": s.name, "valueFrom": {"secretKeyRef": {"name": s.secret, "key": s.key}}}
        for s in sync.secret_env
    ]
    container: dict[str, Any] = {
        "name": DATA_SYNC_CONTAINER,
        "image": sync.image,
        "command": list(sync.command),
        "resources": {"limits": {"memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}},
        "securityContext": _container_security(job),
        "volumeMounts": [{"name": vol.name, "mountPath": vol.mount_path}, *scratch(job)[1]],
    }
    if env:
        container["env"] = env
    return [container]


def _pod_security(job: TrainingJob) -> dict[str, Any]:
    """Pod Security "restricted" at the pod level (https://kubernetes.io/docs/concepts/security/pod-security-standards/).

    fsGroup makes a freshly provisioned claim writable by the non-root trainer; OnRootMismatch
    skips the recursive chown of a large dataset volume on every pod start once it is owned.
    """
    sec = job.security
    return {
        "fsGroup": sec.fs_group,
        "fsGroupChangePolicy": "OnRootMismatch",
        "runAsGroup": sec.run_as_group,
        "runAsNonRoot": sec.run_as_user != 0,
        "runAsUser": sec.run_as_user,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def _container_security(job: TrainingJob | None) -> dict[str, Any]:
    """No privilege escalation, no capabilities (an RDMA overlay adds IPC_LOCK back) and a
    read-only root filesystem unless the job opts out (`job` None: a shared runtime's)."""
    read_only = job is None or job.security.read_only_root_filesystem
    return {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "readOnlyRootFilesystem": read_only,
    }


def _container(
    job: TrainingJob,
    cluster: ClusterProfile | None,
    target: Target | None,
    replica: Replica,
    gpu: GpuProduct | None,
) -> dict[str, Any]:
    """The replica's one container: image, command, env, metrics port, size, security."""
    container: dict[str, Any] = {
        "name": replica.container,
        "image": job.image,
        "imagePullPolicy": "IfNotPresent",
    }
    if replica.command is not None:
        container["command"] = list(replica.command)
    if replica.args:
        container["args"] = list(replica.args)
    container["env"] = _env(job, target, cluster, replica.env, replica.nccl_env)
    if replica.data and job.serves_trainer_metrics():
        container["ports"] = [
            {"name": METRICS_PORT_NAME, "containerPort": job.metrics_port, "protocol": "TCP"}
        ]
    resources = _resources(replica, gpu, cluster)
    if resources:
        container["resources"] = resources
    container["securityContext"] = _container_security(job)
    return container


def _on_cluster(
    job: TrainingJob,
    cluster: ClusterProfile,
    replica: Replica,
    gpu: GpuProduct | None,
    pod: dict[str, Any],
) -> None:
    """What one cluster adds to the pod: RDMA, the GPU nodes, the host network, Volcano."""
    meta, spec = pod["metadata"], pod["spec"]
    container = spec["containers"][0]
    rdma = _rdma(cluster)
    if rdma is not None and replica.nccl_device:
        container["securityContext"]["capabilities"]["add"] = [RDMA_CAPABILITY]
    # Every pod joins the network the socket interface names (an MPI Launcher talks to
    # its Workers over it); only NCCL's pods get the RDMA device and IPC_LOCK.
    if rdma is not None and rdma.multus_network:
        meta["annotations"][MULTUS_ANNOTATION] = rdma.multus_network
    if gpu is not None and replica.gpus:
        spec["nodeSelector"] = dict(gpu.node_selector)
        if gpu.tolerations:
            spec["tolerations"] = [dict(t) for t in gpu.tolerations]
    if job.host_network:
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if cluster.scheduler.kind == VOLCANO_SCHEDULER:
        spec["schedulerName"] = VOLCANO_SCHEDULER


def pod_template(
    job: TrainingJob,
    cluster: ClusterProfile | None = None,
    target: Target | None = None,
    replica: Replica | None = None,
    replica_type: str = "Worker",
) -> dict[str, Any]:
    """The pod template of one replica type (default: a PyTorchJob's training pods), with
    what the job adds to `replica_type`'s pods (`render.overrides`)."""
    if replica is None:
        command = torchrun_command(job) if job.command else None
        replica = training_replica(job, PYTORCH_CONTAINER, command)
    gpu = _gpu(cluster, target)
    volumes, mounts = _volumes(job) if replica.data else ([], [])
    scratch_volumes, scratch_mounts = scratch(job)
    volumes += scratch_volumes
    mounts += scratch_mounts
    container = _container(job, cluster, target, replica, gpu)
    if mounts:
        container["volumeMounts"] = mounts
    spec: dict[str, Any] = {
        # Training code has no business with the Kubernetes API; a token in every pod
        # would let a compromised rank act as the namespace's default service account.
        "automountServiceAccountToken": False,
        "containers": [container],
        "securityContext": _pod_security(job),
        "terminationGracePeriodSeconds": job.termination_grace_seconds,
    }
    if volumes:
        spec["volumes"] = volumes
    init = _init_containers(job) if replica.data else []
    if init:
        spec["initContainers"] = init
    meta: dict[str, Any] = {
        "labels": {JOB_LABEL: job.name},
        # An Istio sidecar never exits, so the pod (and the job) would never complete.
        "annotations": {"sidecar.istio.io/inject": "false"},
    }
    if cluster is not None:
        _on_cluster(job, cluster, replica, gpu, {"metadata": meta, "spec": spec})
    return overrides.apply({"metadata": meta, "spec": spec}, job.pod, replica_type)
