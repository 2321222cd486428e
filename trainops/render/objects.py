"""Pure functions: a job (and, for an overlay, one target cluster) to Kubernetes objects.

`job_objects(job)` is the cluster-agnostic base; `job_objects(job, cluster, target)`
is what must run on that cluster. The overlay is the difference between the two
(`trainops.render.patch`), so overlays only patch and the invariant test can
compare `kustomize build overlays/<cluster>` with `job_objects(job, cluster, target)`.
"""

from __future__ import annotations

from typing import Any

from trainops.facts import argocd, zero_tuning
from trainops.facts import deepspeed as ds_config
from trainops.facts.gpus import gang_minimum
from trainops.facts.kubeflow import JOB_NAME_LABEL
from trainops.facts.monitoring import METRICS_PORT_NAME
from trainops.facts.trainer import JOBSET_NAME_LABEL, TRAINER_GROUP, TRAINING_RUNTIME
from trainops.jobspec.installed import rendered_kind
from trainops.jobspec.model import ClusterProfile, Target, TrainingJob
from trainops.render import mpijob, tfjob
from trainops.render.common import job_metadata, labels, replica_spec, run_policy
from trainops.render.common import metadata as _metadata
from trainops.render.netpol import NETWORKING_API, network_policy
from trainops.render.pod import JOB_LABEL, deepspeed_configmap_name, pod_template
from trainops.render.runtimes import needs_own_runtime
from trainops.render.trainjob import trainjob_objects

API_PYTORCHJOB = "kubeflow.org/v1"
# Argo CD applies lower waves first: claims and configs must exist before the pods mounting them.
SYNC_WAVE = argocd.SYNC_WAVE
SYNC_WAVE_BEFORE_JOBS = argocd.BEFORE_JOBS_WAVE
# Checkpoint and dataset claims outlive the job that wrote them: never pruned by GitOps.
NO_PRUNE_ANNOTATIONS = {
    "argocd.argoproj.io/sync-options": "Prune=false",
    "kustomize.toolkit.fluxcd.io/prune": "disabled",
}
METRICS_LABEL = "trainops.dev/metrics"
SERVICE_MONITOR_API = "monitoring.coreos.com/v1"
# (API group, kind, namespace; None for a cluster-scoped object) of an object an overlay delivers.
Placed = tuple[str, str, str | None]


def pytorchjob(
    job: TrainingJob, cluster: ClusterProfile | None = None, target: Target | None = None
) -> dict[str, Any]:
    pods = job.pods_on(target)
    template = pod_template(
        job, cluster, target, replica_type="Worker" if job.elastic else "Master"
    )
    replica_specs: dict[str, Any] = {}
    if job.elastic:
        replica_specs["Worker"] = replica_spec(pods, "OnFailure", template)
    else:
        replica_specs["Master"] = replica_spec(1, "OnFailure", template)
        if pods > 1:
            replica_specs["Worker"] = replica_spec(
                pods - 1, "OnFailure", pod_template(job, cluster, target, replica_type="Worker")
            )
    spec: dict[str, Any] = {"nprocPerNode": str(job.slots()), "pytorchReplicaSpecs": replica_specs}
    if job.elastic:
        spec["elasticPolicy"] = {
            "rdzvBackend": "c10d",
            "minReplicas": job.elastic.min_replicas,
            "maxReplicas": job.elastic.max_replicas,
            "maxRestarts": job.elastic.max_restarts,
        }
    # The gang: every pod of a fixed-size job, the elastic minimum of an elastic one.
    spec["runPolicy"] = run_policy(
        job, cluster, gang_minimum({"apiVersion": API_PYTORCHJOB, "spec": spec})
    )
    meta = job_metadata(job, cluster)
    return {"apiVersion": API_PYTORCHJOB, "kind": "PyTorchJob", "metadata": meta, "spec": spec}


def training_job(
    job: TrainingJob, cluster: ClusterProfile | None = None, target: Target | None = None
) -> dict[str, Any]:
    """The job's training job object, of the kind its framework names."""
    if job.framework == "tensorflow":
        return tfjob.tfjob(job, cluster, target)
    if job.framework == "mpi":
        return mpijob.mpijob(job, cluster, target)
    return pytorchjob(job, cluster, target)


def claims(job: TrainingJob, cluster: ClusterProfile | None = None) -> list[dict[str, Any]]:
    out = []
    for vol in job.volumes:
        if not vol.create:
            continue
        spec: dict[str, Any] = {
            "accessModes": [vol.access_mode],
            "resources": {"requests": {"storage": vol.size}},
        }
        if cluster is not None:
            spec["storageClassName"] = vol.storage_class or cluster.storage.default_class
        annotations = {SYNC_WAVE: SYNC_WAVE_BEFORE_JOBS, **NO_PRUNE_ANNOTATIONS}
        out.append(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": _metadata(job, vol.claim_name, annotations),
                "spec": spec,
            }
        )
    return out


def metrics_service(job: TrainingJob, trainer_v2: bool = False) -> dict[str, Any]:
    meta = _metadata(job, f"{job.name}-metrics")
    meta["labels"][METRICS_LABEL] = "true"
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {
            "clusterIP": "None",
            "ports": [
                {
                    "name": METRICS_PORT_NAME,
                    "port": job.metrics_port,
                    "protocol": "TCP",
                    "targetPort": METRICS_PORT_NAME,
                }
            ],
            # The operator (v1) or JobSet (Trainer v2) labels every pod of the job with its
            # name; our own template labels would do too, but this is the label users query
            # (`kubectl get pods -l`).
            "selector": {JOBSET_NAME_LABEL if trainer_v2 else JOB_NAME_LABEL: job.name},
        },
    }


def service_monitor(job: TrainingJob, cluster: ClusterProfile | None = None) -> dict[str, Any]:
    """The job's ServiceMonitor, with the labels the cluster's Prometheus selects it by
    (`monitoring.prometheusLabels`; prometheus-operator reads `serviceMonitorSelector`)."""
    meta = _metadata(job, job.name)
    if cluster is not None:
        meta["labels"] = {**cluster.watch.prometheus_labels, **meta["labels"]}
    return {
        "apiVersion": SERVICE_MONITOR_API,
        "kind": "ServiceMonitor",
        "metadata": meta,
        "spec": {
            "endpoints": [{"interval": "30s", "path": "/metrics", "port": METRICS_PORT_NAME}],
            "selector": {"matchLabels": {JOB_LABEL: job.name, METRICS_LABEL: "true"}},
        },
    }


def deepspeed_configmap(job: TrainingJob) -> dict[str, Any] | None:
    """The ConfigMap as the model expects it (kustomize generates it, adding a hash suffix)."""
    if job.deepspeed is None:
        return None
    annotations = {SYNC_WAVE: SYNC_WAVE_BEFORE_JOBS}
    hidden = job.model.hidden_size if job.model else None
    tuning = zero_tuning.explain(job.deepspeed.zero_stage, hidden, job.deepspeed.config)
    if tuning:
        annotations[zero_tuning.ANNOTATION] = tuning
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(job, deepspeed_configmap_name(job), annotations),
        "data": {ds_config.CONFIG_FILE: ds_config.config_json(job.deepspeed_config() or {})},
    }


def job_objects(
    job: TrainingJob,
    cluster: ClusterProfile | None = None,
    target: Target | None = None,
    trainer_v2: bool = False,
) -> list[dict[str, Any]]:
    """The job's objects but the generated ConfigMap: the base, or for one target cluster.

    The workload follows the cluster's operator: a PyTorchJob (Training Operator v1) or a
    TrainJob and maybe its own TrainingRuntime (Trainer v2, `trainjob.py`); `trainer_v2`
    picks for the base, which has no cluster.
    """
    if cluster is not None:
        trainer_v2 = cluster.operator.trainer_v2
    if trainer_v2:
        annotations = {**job.annotations, "trainops.dev/source": job.file}
        workload = trainjob_objects(job, labels(job), annotations, cluster, target)
    else:
        workload = [training_job(job, cluster, target)]
    monitoring = (
        [metrics_service(job, trainer_v2), service_monitor(job, cluster)]
        if job.serves_trainer_metrics()
        else []
    )
    return [
        *workload,
        *claims(job, cluster),
        *monitoring,
        network_policy(job, _metadata(job, job.name), cluster),
    ]


def job_placed(job: TrainingJob, cluster: ClusterProfile) -> set[Placed]:
    """(API group, kind, namespace) of each object `job_objects(job, cluster, target)` and
    `deepspeed_configmap(job)` return, without building them: gitops/ needs every job's kinds
    on every cluster, and building 22,500 pod templates to read them was most of a one-job
    pull request's `validate --changed` at 5,000 jobs. tests/render/test_job_placed.py holds
    the two equal on every shipped and generated job."""
    namespace = job.namespace
    api, kind = rendered_kind(job, cluster)
    out: set[Placed] = {
        (api.rpartition("/")[0], kind, namespace),
        (NETWORKING_API.rpartition("/")[0], "NetworkPolicy", namespace),
    }
    if cluster.operator.trainer_v2 and needs_own_runtime(job):
        out.add((TRAINER_GROUP, TRAINING_RUNTIME, namespace))
    if any(vol.create for vol in job.volumes):
        out.add(("", "PersistentVolumeClaim", namespace))
    if job.serves_trainer_metrics():
        out.add(("", "Service", namespace))
        out.add((SERVICE_MONITOR_API.rpartition("/")[0], "ServiceMonitor", namespace))
    if job.deepspeed is not None:
        out.add(("", "ConfigMap", namespace))
    return out
