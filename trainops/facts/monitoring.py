"""What the programs that watch training expose and read, stated once: the trainer's metric
names, the labels Prometheus gives what the jobs' ServiceMonitor scrapes, NVIDIA's DCGM exporter,
the Training Operator's job counters, prometheus-operator's PrometheusRule and the Grafana
dashboard sidecar of kube-prometheus-stack.

Sources (read at these releases):
- trainer/metrics.py (this repository): the `trainops_trainer_*` metrics, one endpoint per pod.
- prometheus-operator v0.93, pkg/prometheus/promcfg.go: a ServiceMonitor's targets get the
  labels `namespace`, `service`, `pod` and `job` (the Service's name unless `jobLabel` says
  otherwise) from the endpoints' Kubernetes metadata.
- dcgm-exporter 4.x, docs "DCGM Exporter Metrics": `DCGM_FI_DEV_GPU_UTIL` (percent),
  `DCGM_FI_DEV_FB_USED` (MiB), with `pod`/`namespace` of the pod holding the GPU when its
  Kubernetes mapping is on (`DCGM_EXPORTER_KUBERNETES=true`, the GPU Operator's default) and
  its ServiceMonitor sets `honorLabels: true` (the GPU Operator's does); otherwise Prometheus
  renames them `exported_pod`/`exported_namespace`.
- A failed job: what the operators publish. kubeflow/trainer v1.9.4 counts
  `training_operator_jobs_failed_total` only where a replica with `restartPolicy: Never` ends
  Failed (`pkg/controller.v1/pytorch/pytorchjob_controller.go:442`); a job that fails through
  `backoffLimit` or `activeDeadlineSeconds` (`pkg/controller.v1/common/job.go:206`), as ours
  with `OnFailure` replicas do, only gets its `Failed` condition, and the MPI Operator counts
  `mpi_operator_jobs_failed_total` instead. Every operator writes the condition (`type:
  Failed, status: "True"` in `status.conditions`: Training Operator `JobFailed`, MPI Operator
  v0.8 `JobFailed`, Trainer v2.3 `TrainJobFailed`), so the alert reads it, exported by
  kube-state-metrics' custom resource state metrics (kube-state-metrics v2.17,
  pkg/customresourcestate: the metric is `<metricNamePrefix, default kube_customresource>_
  <name>` (registry_factory.go fullName), with the labels `customresource_group`,
  `customresource_version`, `customresource_kind` (registry_factory.go:44) and those of its
  `labelsFromPath`; a condition's `"True"` reads as 1 (toFloat64)).
- kube-prometheus-stack's Grafana: the dashboards sidecar loads every ConfigMap labelled
  `grafana_dashboard: "1"` (values.yaml `grafana.sidecar.dashboards.label`/`labelValue`).
- grafana-operator v5.24 (api/v1beta1/grafanadashboard_types.go, controllers/
  controller_shared.go `GetScopedMatchingInstances`): a `GrafanaDashboard` holds the model in
  `spec.json` and is imported into the ready `Grafana` instances that `spec.instanceSelector`
  (required) matches, in its own namespace only unless `spec.allowCrossNamespaceImport`.
"""

from __future__ import annotations

PROMETHEUS_RULE_API = "monitoring.coreos.com/v1"

# trainer/metrics.py: PREFIX and the metric names (the trainer must not import trainops, so the
# prefix is restated here; tests/facts/test_monitoring.py checks the two agree).
TRAINER_PREFIX = "trainops_trainer"
SAMPLES_PER_SECOND = f"{TRAINER_PREFIX}_samples_per_second"
TOKENS_PER_SECOND = f"{TRAINER_PREFIX}_tokens_per_second"
STEP_DURATION = f"{TRAINER_PREFIX}_step_duration_seconds"
LOSS = f"{TRAINER_PREFIX}_loss"
STEP = f"{TRAINER_PREFIX}_step"
RESTARTS = f"{TRAINER_PREFIX}_restarts"
LAST_STEP_TIMESTAMP = f"{TRAINER_PREFIX}_last_step_timestamp_seconds"

# The Service trainops renders per job is `<job>-metrics` (render/objects.py); Prometheus puts
# its name in the `service` label. Queries turn it back into the job's name in this label.
METRICS_SERVICE_SUFFIX = "-metrics"
# The container port (and the Service's port) the trainer's metrics are served on, by name: the
# ServiceMonitor's endpoint selects it (render/objects.py), run-local maps it to a local port.
METRICS_PORT_NAME = "metrics"
TRAINING_JOB_LABEL = "training_job"

DCGM_GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
DCGM_FB_USED = "DCGM_FI_DEV_FB_USED"

# kube-state-metrics' custom resource state metric of a training job's conditions, as
# render/kube_state_metrics.py configures it: one series per condition, labels `namespace`,
# `name` and `type` (and the customresource_* labels kube-state-metrics adds), value 1 when the
# condition's status is "True".
KSM_PREFIX = "kube_customresource"
JOB_CONDITION = "training_job_condition"
JOB_CONDITION_METRIC = f"{KSM_PREFIX}_{JOB_CONDITION}"
KSM_GROUP_LABEL = "customresource_group"
KSM_KIND_LABEL = "customresource_kind"
KSM_VERSION_LABEL = "customresource_version"
FAILED_CONDITION = "Failed"

GRAFANA_DASHBOARD_LABEL = "grafana_dashboard"
GRAFANA_DASHBOARD_LABEL_VALUE = "1"

GRAFANA_OPERATOR_API = "grafana.integreatly.org/v1beta1"
GRAFANA_DASHBOARD_KIND = "GrafanaDashboard"


def job_of_service(selector: str) -> str:
    """A PromQL vector selector with the `training_job` label added from `service`
    (`llm-finetune-metrics` -> `llm-finetune`), so alerts and panels name the job itself."""
    return (
        f'label_replace({selector}, "{TRAINING_JOB_LABEL}", "$1",'
        f' "service", "(.+){METRICS_SERVICE_SUFFIX}")'
    )
