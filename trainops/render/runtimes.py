"""Kubeflow Trainer v2 runtimes: the platform half of a TrainJob.

A cluster running Trainer v2 gets one ClusterTrainingRuntime per GPU product of its profile
(`trainops-torch-<product>`, plus `trainops-torch-cpu` when a job there has no GPU), in
`overlays/<cluster>/_runtimes/`: torchrun under the torch ML policy, the cluster's NCCL env
(RDMA or TCP), the product's node selector and tolerations, RDMA's IPC_LOCK and Multus
network, and Volcano gang scheduling (`podGroupPolicy`, and the queue annotation on the JobSet
template, where the Trainer reads it). The TrainJobs that reference them then carry only what
is the job's own.

The node container declares the metrics port (`metrics`, the job spec's default port), which
the job's metrics Service targets by name: runtime patches cannot add container ports.

A job needing what a TrainJob cannot say (v2.3's runtime patches can modify but not add init
containers or ports, and set no Job backoffLimit) gets its own namespaced TrainingRuntime,
named after it: the same template plus its data-sync init container, backoffLimit and port.
"""

from __future__ import annotations

from typing import Any

from trainops.facts import argocd
from trainops.facts.monitoring import METRICS_PORT_NAME
from trainops.facts.nccl import RDMA_CAPABILITY
from trainops.facts.schedulers import VOLCANO_SCHEDULER
from trainops.facts.trainer import (
    ANCESTOR_LABEL,
    ANCESTOR_TRAINER,
    CLUSTER_TRAINING_RUNTIME,
    FRAMEWORK_LABEL,
    NODE_CONTAINER,
    NODE_JOB,
    TRAINER_API,
    TRAINING_RUNTIME,
    VOLCANO_QUEUE_ANNOTATION,
)
from trainops.jobspec.model import ClusterProfile, GpuProduct, Target, TrainingJob
from trainops.jobspec.schemas import JOB, default
from trainops.render.pod import (
    MULTUS_ANNOTATION,
    _container_security,
    _gpu,
    _init_containers,
    nccl_env,
)

RUNTIME_PREFIX = "trainops-torch"
CPU_RUNTIME = f"{RUNTIME_PREFIX}-cpu"
MANAGED_BY = {"app.kubernetes.io/managed-by": "trainops"}
# The port the cluster runtimes declare for metrics: the job spec's default `metricsPort`.
DEFAULT_METRICS_PORT: int = default(JOB, "metricsPort")


def runtime_name(gpu: GpuProduct | None) -> str:
    """The ClusterTrainingRuntime a job on this GPU product (None: no GPU) references."""
    return f"{RUNTIME_PREFIX}-{gpu.name}" if gpu is not None else CPU_RUNTIME


def job_gpu(job: TrainingJob, cluster: ClusterProfile | None, target: Target | None) -> Any:
    """The job's GPU product on the cluster (None: no cluster yet, or a CPU-only job)."""
    return _gpu(cluster, target) if job.gpus_per_replica else None


def runtime_spec(
    cluster: ClusterProfile | None,
    gpu: GpuProduct | None,
    job: TrainingJob | None = None,
) -> dict[str, Any]:
    """A TrainingRuntimeSpec: torch ML policy, gang scheduling and the node pod template.

    `cluster` None: the cluster-agnostic part only (a job's base). `job`: add what only a
    runtime can carry for it (its data-sync init container, its backoffLimit).
    """
    port = job.metrics_port if job is not None else DEFAULT_METRICS_PORT
    container: dict[str, Any] = {
        "name": NODE_CONTAINER,
        "ports": [{"name": METRICS_PORT_NAME, "containerPort": port, "protocol": "TCP"}],
        "securityContext": _container_security(job),
    }
    # Like every other kind's pod (render/pod.py): no API token for a compromised rank. The
    # runtime's pod template is a full PodSpec (a JobSet's), and the Trainer copies it into
    # the node Job as written (issue 29.4: the Trainer v2 pods mounted the default token).
    pod_spec: dict[str, Any] = {
        "automountServiceAccountToken": False,
        "containers": [container],
        "restartPolicy": "OnFailure",
    }
    pod_meta: dict[str, Any] = {}
    spec: dict[str, Any] = {"mlPolicy": {"numNodes": 1, "torch": {}}}
    if cluster is not None:
        _network(cluster, container, pod_meta)
        if gpu is not None:
            pod_spec["nodeSelector"] = dict(gpu.node_selector)
            if gpu.tolerations:
                pod_spec["tolerations"] = [dict(t) for t in gpu.tolerations]
        if cluster.scheduler.kind == VOLCANO_SCHEDULER:
            _volcano(cluster, spec, pod_spec)
    job_spec: dict[str, Any] = {}
    if job is not None:
        init = _init_containers(job)
        if init:
            pod_spec["initContainers"] = init
        if job.run_policy.backoff_limit is not None:
            job_spec["backoffLimit"] = job.run_policy.backoff_limit
    pod: dict[str, Any] = {"spec": pod_spec}
    if pod_meta:
        pod["metadata"] = pod_meta
    job_spec["template"] = pod
    spec.setdefault("template", {})["spec"] = {
        "replicatedJobs": [
            {
                "name": NODE_JOB,
                "replicas": 1,
                "template": {
                    "metadata": {"labels": {ANCESTOR_LABEL: ANCESTOR_TRAINER}},
                    "spec": job_spec,
                },
            }
        ]
    }
    return spec


def _network(cluster: ClusterProfile, container: dict[str, Any], pod_meta: dict[str, Any]) -> None:
    """NCCL's environment for the cluster's fabric; RDMA's capability and Multus network."""
    env = nccl_env(cluster)
    container["env"] = [{"name": k, "value": v} for k, v in env.items()]
    rdma = cluster.network.rdma if cluster.network.is_rdma else None
    if rdma is not None:
        container["securityContext"]["capabilities"]["add"] = [RDMA_CAPABILITY]
        if rdma.multus_network:
            pod_meta["annotations"] = {MULTUS_ANNOTATION: rdma.multus_network}


def _volcano(cluster: ClusterProfile, spec: dict[str, Any], pod_spec: dict[str, Any]) -> None:
    """Volcano's gang: the Trainer creates the PodGroup (minMember = all pods) and sets the
    pods' scheduler; stated here too so the template reads as what runs."""
    spec["podGroupPolicy"] = {"volcano": {}}
    pod_spec["schedulerName"] = VOLCANO_SCHEDULER
    if cluster.scheduler.priority_class:
        pod_spec["priorityClassName"] = cluster.scheduler.priority_class
    if cluster.scheduler.queue:
        # Where v2.3's volcano plugin reads the PodGroup's queue (facts/trainer.py).
        queue = {VOLCANO_QUEUE_ANNOTATION: cluster.scheduler.queue}
        spec["template"] = {"metadata": {"annotations": queue}}


def needs_own_runtime(job: TrainingJob) -> bool:
    """True when the job needs a TrainingRuntime of its own (see the module docstring)."""
    return (
        job.data_sync is not None
        or job.run_policy.backoff_limit is not None
        or job.metrics_port != DEFAULT_METRICS_PORT
        or not job.security.read_only_root_filesystem
    )


def job_runtime(
    job: TrainingJob, labels: dict[str, str], cluster: ClusterProfile | None, target: Target | None
) -> dict[str, Any]:
    """The job's own namespaced TrainingRuntime (only when `needs_own_runtime`)."""
    return {
        "apiVersion": TRAINER_API,
        "kind": TRAINING_RUNTIME,
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "labels": {**labels, FRAMEWORK_LABEL: "torch"},
            # Before the TrainJob: the Trainer's webhook refuses one whose runtime is missing.
            "annotations": {argocd.SYNC_WAVE: argocd.BEFORE_JOBS_WAVE},
        },
        "spec": runtime_spec(cluster, job_gpu(job, cluster, target), job),
    }


def cluster_runtimes(cluster: ClusterProfile, jobs: list[TrainingJob]) -> list[dict[str, Any]]:
    """The ClusterTrainingRuntimes of a Trainer v2 cluster, by name (`jobs`: those targeting it)."""
    gpus: list[GpuProduct | None] = list(cluster.gpus)
    if any(not job.gpus_per_replica for job in jobs):
        gpus.append(None)
    return [
        {
            "apiVersion": TRAINER_API,
            "kind": CLUSTER_TRAINING_RUNTIME,
            "metadata": {
                "name": runtime_name(gpu),
                "labels": {**MANAGED_BY, FRAMEWORK_LABEL: "torch"},
                "annotations": {
                    "trainops.dev/source": cluster.file,
                    argocd.SYNC_WAVE: argocd.BEFORE_JOBS_WAVE,
                },
            },
            "spec": runtime_spec(cluster, gpu),
        }
        for gpu in gpus
    ]
