"""The pod template every replica of a job shares: the training container (torchrun around
the program, env, resources, mounts), the data-sync init container, volumes, security, and
for one cluster its NCCL env, GPU product, RDMA device, scheduler and network.

`pod_template(job)` is the cluster-agnostic base; `pod_template(job, cluster, target)` what
runs on that cluster (the overlay patches one into the other).
"""

from __future__ import annotations

from typing import Any

from trainops.facts import deepspeed as ds_config
from trainops.facts.gpus import DEFAULT_GPU_RESOURCE
from trainops.facts.kubeflow import PYTORCH_CONTAINER
from trainops.facts.schedulers import VOLCANO_SCHEDULER
from trainops.spec.model import ClusterProfile, GpuProduct, Target, TrainingJob

SHM_VOLUME = "dshm"
DEEPSPEED_VOLUME = "deepspeed-config"
METRICS_PORT_NAME = "metrics"
METRICS_PORT_ENV = "TRAINOPS_METRICS_PORT"
JOB_LABEL = "trainops.dev/job"
MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
# RDMA needs to pin (lock) memory for the NIC; IPC_LOCK is the only capability it needs.
RDMA_CAPABILITY = "IPC_LOCK"


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


def _env(job: TrainingJob, target: Target | None, cluster: ClusterProfile | None) -> list[Any]:
    """The training container's env: one entry per name. A target's variable replaces the
    job's variable of the same name where it stands; the target's new ones come last."""
    overrides = target.env if target is not None else {}
    values = {k: overrides.get(k, v) for k, v in job.env.items()}
    added = {k: v for k, v in overrides.items() if k not in job.env}
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in values.items()]
    env += [
        {"name": s.name, "valueFrom": {"secretKeyRef": {"name": s.secret, "key": s.key}}}
        for s in job.secret_env
    ]
    env.append({"name": METRICS_PORT_ENV, "value": str(job.metrics_port)})
    if cluster is not None:
        env += [{"name": k, "value": v} for k, v in nccl_env(cluster).items()]
    env += [{"name": k, "value": v} for k, v in added.items()]
    return env


def nccl_env(cluster: ClusterProfile) -> dict[str, str]:
    """NCCL settings for the cluster's transport (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)."""
    net = cluster.network
    if net.transport == "rdma" and net.rdma is not None:
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
    job: TrainingJob, gpu: GpuProduct | None, cluster: ClusterProfile | None
) -> dict[str, Any]:
    requests: dict[str, Any] = {"cpu": job.cpu, "memory": job.memory}
    limits: dict[str, Any] = {"memory": job.memory}
    if job.gpus_per_replica:
        # The base names the default resource; a cluster's product may name another.
        resource = gpu.resource if gpu else DEFAULT_GPU_RESOURCE
        requests[resource] = job.gpus_per_replica
        limits[resource] = job.gpus_per_replica
    rdma = cluster.network.rdma if cluster and cluster.network.transport == "rdma" else None
    if rdma is not None:
        requests[rdma.device_resource] = rdma.device_count
        limits[rdma.device_resource] = rdma.device_count
    return {"limits": limits, "requests": requests}


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
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in sync.env.items()]
    env += [
        {"name": s.name, "valueFrom": {"secretKeyRef": {"name": s.secret, "key": s.key}}}
        for s in sync.secret_env
    ]
    container: dict[str, Any] = {
        "name": "data-sync",
        "image": sync.image,
        "command": list(sync.command),
        "resources": {"limits": {"memory": "2Gi"}, "requests": {"cpu": "1", "memory": "2Gi"}},
        "securityContext": _container_security(),
        "volumeMounts": [{"name": vol.name, "mountPath": vol.mount_path}],
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


def _container_security() -> dict[str, Any]:
    """No privilege escalation and no capabilities (an RDMA overlay adds IPC_LOCK back)."""
    return {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def pod_template(
    job: TrainingJob, cluster: ClusterProfile | None = None, target: Target | None = None
) -> dict[str, Any]:
    gpu = _gpu(cluster, target)
    volumes, mounts = _volumes(job)
    container: dict[str, Any] = {
        "name": PYTORCH_CONTAINER,
        "image": job.image,
        "imagePullPolicy": "IfNotPresent",
        "command": torchrun_command(job),
        "args": program_args(job),
        "env": _env(job, target, cluster),
        "ports": [
            {"name": METRICS_PORT_NAME, "containerPort": job.metrics_port, "protocol": "TCP"}
        ],
        "resources": _resources(job, gpu, cluster),
        "securityContext": _container_security(),
        "volumeMounts": mounts,
    }
    spec: dict[str, Any] = {
        # Training code has no business with the Kubernetes API; a token in every pod
        # would let a compromised rank act as the namespace's default service account.
        "automountServiceAccountToken": False,
        "containers": [container],
        "securityContext": _pod_security(job),
        "terminationGracePeriodSeconds": job.termination_grace_seconds,
        "volumes": volumes,
    }
    init = _init_containers(job)
    if init:
        spec["initContainers"] = init
    meta: dict[str, Any] = {
        "labels": {JOB_LABEL: job.name},
        # An Istio sidecar never exits, so the pod (and the job) would never complete.
        "annotations": {"sidecar.istio.io/inject": "false"},
    }
    if cluster is not None:
        rdma = cluster.network.rdma if cluster.network.transport == "rdma" else None
        if rdma is not None:
            container["securityContext"]["capabilities"]["add"] = [RDMA_CAPABILITY]
            if rdma.multus_network:
                meta["annotations"][MULTUS_ANNOTATION] = rdma.multus_network
        if gpu is not None and job.gpus_per_replica:
            spec["nodeSelector"] = dict(gpu.node_selector)
            if gpu.tolerations:
                spec["tolerations"] = [dict(t) for t in gpu.tolerations]
        if job.host_network:
            spec["hostNetwork"] = True
            spec["dnsPolicy"] = "ClusterFirstWithHostNet"
        if cluster.scheduler.kind == VOLCANO_SCHEDULER:
            spec["schedulerName"] = VOLCANO_SCHEDULER
    return {"metadata": meta, "spec": spec}
