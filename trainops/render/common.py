"""What every training job object shares, whatever its kind: labels, metadata (the Kueue queue
label on a Kueue cluster) and the operators' common `runPolicy` (clean-up, restarts, deadline,
TTL, and Volcano's gang `schedulingPolicy` counting every pod of every replica type)."""

from __future__ import annotations

from typing import Any

from trainops.facts.schedulers import KUEUE_QUEUE_LABEL, VOLCANO_SCHEDULER
from trainops.jobspec.model import ClusterProfile, TrainingJob
from trainops.render.pod import JOB_LABEL

# Where the job object names the spec it was rendered from.
SOURCE_ANNOTATION = "trainops.dev/source"


def labels(job: TrainingJob) -> dict[str, str]:
    return {
        **job.labels,
        "app.kubernetes.io/name": job.name,
        "app.kubernetes.io/managed-by": "trainops",
        JOB_LABEL: job.name,
    }


def metadata(
    job: TrainingJob, name: str, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": job.namespace, "labels": labels(job)}
    if annotations:
        meta["annotations"] = dict(annotations)
    return meta


def job_metadata(job: TrainingJob, cluster: ClusterProfile | None) -> dict[str, Any]:
    """The training job object's metadata; Kueue admits it by the queue label alone."""
    meta = metadata(job, job.name, {**job.annotations, SOURCE_ANNOTATION: job.file})
    if cluster is not None and cluster.scheduler.kind == "kueue" and cluster.scheduler.queue:
        meta["labels"][KUEUE_QUEUE_LABEL] = cluster.scheduler.queue
    return meta


def run_policy(job: TrainingJob, cluster: ClusterProfile | None, pods: int) -> dict[str, Any]:
    """`runPolicy` (kubeflow.org/v1 RunPolicy, also MPIJob v2beta1's): `pods` is the gang,
    what Volcano's `minAvailable` must count so that the job starts only when it fits: every
    pod of a fixed-size job, the elastic minimum of an elastic one (`facts.gpus.gang_minimum`)."""
    policy: dict[str, Any] = {"cleanPodPolicy": job.run_policy.clean_pod_policy}
    if job.run_policy.backoff_limit is not None:
        policy["backoffLimit"] = job.run_policy.backoff_limit
    if job.run_policy.active_deadline_seconds is not None:
        policy["activeDeadlineSeconds"] = job.run_policy.active_deadline_seconds
    if job.run_policy.ttl_seconds_after_finished is not None:
        policy["ttlSecondsAfterFinished"] = job.run_policy.ttl_seconds_after_finished
    if cluster is not None and cluster.scheduler.kind == VOLCANO_SCHEDULER:
        gang: dict[str, Any] = {"minAvailable": pods}
        if cluster.scheduler.queue:
            gang["queue"] = cluster.scheduler.queue
        if cluster.scheduler.priority_class:
            gang["priorityClass"] = cluster.scheduler.priority_class
        policy["schedulingPolicy"] = gang
    return policy


def replica_spec(replicas: int, restart_policy: str, template: dict[str, Any]) -> dict[str, Any]:
    return {"replicas": replicas, "restartPolicy": restart_policy, "template": template}


def total_pods(replica_specs: dict[str, Any]) -> int:
    return sum(int(spec["replicas"]) for spec in replica_specs.values())
