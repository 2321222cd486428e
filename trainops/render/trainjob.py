"""A job as a Kubeflow Trainer v2 TrainJob: small, referencing a runtime (`runtimes.py`).

The TrainJob says what is the job's own: the image, torchrun around the program, args, env,
numNodes and processes per node, resources per node; and in one runtime patch (manager
`trainops.dev/render`) its pod's labels, volumes and mounts, security context and grace
period. The cluster's NCCL env, GPU selectors, tolerations and gang scheduling live in the
runtime. Kueue: the queue label only, never `suspend` (Kueue sets it on creation and flips
it on admission). Volcano: nothing here; the queue is the runtime's (v2.3 reads it there).

`trainjob(job)` is the cluster-agnostic base, `trainjob(job, cluster, target)` what runs on
that cluster; the overlay is their difference, as for the v1 kinds (`objects.py`).
"""

from __future__ import annotations

from typing import Any

from trainops.facts.kubeflow import PYTORCH_CONTAINER
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL
from trainops.facts.trainer import (
    CLUSTER_TRAINING_RUNTIME,
    NODE_CONTAINER,
    NODE_JOB,
    TRAINER_API,
    TRAINER_GROUP,
    TRAINING_RUNTIME,
    TRAINJOB,
)
from trainops.render import runtimes
from trainops.render.pod import (
    _env,
    _pod_security,
    _resources,
    _volumes,
    pod_template,
    program_args,
    scratch,
    torchrun_command,
    training_replica,
)
from trainops.spec.model import ClusterProfile, Target, TrainingJob

# The manager of the one runtime patch we write; others (Kueue, webhooks) own theirs.
PATCH_MANAGER = "trainops.dev/render"


def _runtime_ref(job: TrainingJob, cluster: ClusterProfile | None, target: Target | None) -> Any:
    if runtimes.needs_own_runtime(job):
        return {"apiGroup": TRAINER_GROUP, "kind": TRAINING_RUNTIME, "name": job.name}
    gpu = runtimes.job_gpu(job, cluster, target)
    # The base (no cluster) names no product: each overlay patches in its cluster's.
    name = runtimes.RUNTIME_PREFIX if job.gpus_per_replica and gpu is None else None
    return {
        "apiGroup": TRAINER_GROUP,
        "kind": CLUSTER_TRAINING_RUNTIME,
        "name": name or runtimes.runtime_name(gpu),
    }


def _runtime_patch(job: TrainingJob) -> dict[str, Any]:
    """Pod-level settings of the job, in the fields v2.3's runtime patches allow."""
    volumes, mounts = _volumes(job)
    scratch_volumes, scratch_mounts = scratch(job)
    volumes += scratch_volumes
    mounts += scratch_mounts
    template = pod_template(job)
    pod_spec: dict[str, Any] = {
        "containers": [{"name": NODE_CONTAINER, "volumeMounts": mounts}],
        "securityContext": _pod_security(job),
        "terminationGracePeriodSeconds": job.termination_grace_seconds,
        "volumes": volumes,
    }
    node = {
        "name": NODE_JOB,
        "template": {"spec": {"template": {"metadata": template["metadata"], "spec": pod_spec}}},
    }
    return {
        "manager": PATCH_MANAGER,
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [node]}}},
    }


def trainjob(
    job: TrainingJob,
    labels: dict[str, str],
    annotations: dict[str, str],
    cluster: ClusterProfile | None = None,
    target: Target | None = None,
) -> dict[str, Any]:
    gpu = runtimes.job_gpu(job, cluster, target)
    # The runtime's container carries the cluster's NCCL env: the TrainJob's env is the job's.
    env = _env(job, target, None)
    node = training_replica(job, PYTORCH_CONTAINER, None)
    trainer: dict[str, Any] = {
        "image": job.image,
        "command": torchrun_command(job) if job.command else None,
        "args": program_args(job),
        "env": env,
        "numNodes": job.pods_on(target),
        "numProcPerNode": max(job.gpus_per_replica, 1),
        "resourcesPerNode": _resources(node, gpu, cluster),
    }
    spec: dict[str, Any] = {
        "runtimeRef": _runtime_ref(job, cluster, target),
        "trainer": trainer,
        "runtimePatches": [_runtime_patch(job)],
    }
    if job.run_policy.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.run_policy.active_deadline_seconds
    meta: dict[str, Any] = {
        "name": job.name,
        "namespace": job.namespace,
        "labels": dict(labels),
        "annotations": dict(annotations),
    }
    # Volcano's queue is the runtime's (runtimes.py): v2.3 ignores it on TrainJob metadata.
    if cluster is not None and cluster.scheduler.queue and cluster.scheduler.kind == "kueue":
        meta["labels"][KUEUE_QUEUE_LABEL] = cluster.scheduler.queue
    return {"apiVersion": TRAINER_API, "kind": TRAINJOB, "metadata": meta, "spec": spec}


def trainjob_objects(
    job: TrainingJob,
    labels: dict[str, str],
    annotations: dict[str, str],
    cluster: ClusterProfile | None = None,
    target: Target | None = None,
) -> list[dict[str, Any]]:
    """The TrainJob and, when it needs one, its own TrainingRuntime."""
    out = [trainjob(job, labels, annotations, cluster, target)]
    if runtimes.needs_own_runtime(job):
        out.append(runtimes.job_runtime(job, labels, cluster, target))
    return out
