"""The training alerts of a cluster: one PrometheusRule per training namespace that has jobs,
each alert grouped by job (the `training_job` label, from the jobs' metrics Service).

Five alerts, thresholds from the cluster profile's `monitoring:` (docs/monitoring.md):
- TrainingStalled: no optimizer step completed for `stalledMinutes` (the trainer's last-step
  gauge; a job that never stepped is not judged, its gauge is still 0).
- TrainingRestarting: the elastic restart count grew by `restartsPerHour` within an hour.
- TrainingGpuUnderutilized: the job's mean DCGM GPU utilisation below `gpuUtilizationBelow` for
  30 minutes, counted only on pods that serve trainer metrics (so: while it trains).
- TrainingJobFailed: one of the namespace's trainops jobs has its `Failed` condition (every
  operator writes it, however the job failed: facts/monitoring.py), read through
  kube-state-metrics' custom resource state metrics (`render/kube_state_metrics.py` writes
  the configuration the platform gives kube-state-metrics).
- TrainingJobConditionsMissing: jobs train in the namespace but kube-state-metrics exports no
  job conditions there for 15 minutes: without its configuration TrainingJobFailed is blind.

The expressions are tested with the real `promtool test rules` (tests/render/test_alerts.py).
"""

from __future__ import annotations

from typing import Any

from trainops.facts import monitoring as m
from trainops.facts.kubeflow import KUBEFLOW_GROUP
from trainops.facts.trainer import TRAINER_GROUP
from trainops.jobspec.model import ClusterProfile, TrainingJob

RULE_NAME = "trainops-training"
PART_OF = {"app.kubernetes.io/part-of": "trainops"}
# The seeds' advice: a GPU below the threshold for half an hour is a bottleneck, not a blip
# (a checkpoint save or an evaluation pass lasts minutes).
GPU_UNDERUSED_FOR = "30m"
# A job's conditions reach Prometheus a scrape or two after its pods serve metrics: longer than
# that, kube-state-metrics is not exporting them (TrainingJobConditionsMissing).
CONDITIONS_MISSING_FOR = "15m"
BY_JOB = f"namespace, {m.TRAINING_JOB_LABEL}"


def _selector(metric: str, namespace: str) -> str:
    return m.job_of_service(f'{metric}{{namespace="{namespace}"}}')


def _alert(name: str, expr: str, severity: str, summary: str, description: str) -> dict[str, Any]:
    return {
        "alert": name,
        "expr": expr,
        "labels": {"severity": severity},
        "annotations": {"summary": summary, "description": description},
    }


def _failed(cluster: ClusterProfile, namespace: str, jobs: list[str]) -> dict[str, Any]:
    names = "|".join(sorted(jobs))  # DNS labels: nothing to escape in a regex
    selector = (
        f'{m.JOB_CONDITION_METRIC}{{namespace="{namespace}", type="{m.FAILED_CONDITION}",'
        f' {m.KSM_GROUP_LABEL}=~"{KUBEFLOW_GROUP}|{TRAINER_GROUP}", name=~"{names}"}}'
    )
    job = "{{ $labels.training_job }}"
    kind = f"{{{{ $labels.{m.KSM_KIND_LABEL} }}}}"
    return _alert(
        "TrainingJobFailed",
        f"max by (namespace, {m.TRAINING_JOB_LABEL}, {m.KSM_KIND_LABEL}) (label_replace("
        f'{selector}, "{m.TRAINING_JOB_LABEL}", "$1", "name", "(.+)")) == 1',
        "critical",
        f"Training job {job} failed",
        f"{kind} {job} in {namespace} on cluster {cluster.name} failed: see"
        f" `trainops explain {job} --cluster {cluster.name}`.",
    )


def alert_rules(cluster: ClusterProfile, namespace: str, jobs: list[str]) -> list[dict[str, Any]]:
    """The alerting rules for one namespace of `cluster`, whose trainops jobs are `jobs`."""
    watch = cluster.watch
    # Whole seconds: 15 minutes renders `> 900`, a local test's 0.25 minutes `> 15`.
    stalled_seconds = round(watch.stalled_minutes * 60)
    last_step = _selector(m.LAST_STEP_TIMESTAMP, namespace)
    restarts = f'{m.RESTARTS}{{namespace="{namespace}"}}[1h]'
    grown = m.job_of_service(f"max_over_time({restarts}) - min_over_time({restarts})")
    util = f'{m.DCGM_GPU_UTIL}{{namespace="{namespace}"}}'
    training_pods = (
        f"group by (namespace, pod, {m.TRAINING_JOB_LABEL}) ({_selector(m.STEP, namespace)})"
    )
    threshold = f"{watch.gpu_utilization_below:g}"
    job = "{{ $labels.training_job }}"
    return [
        _alert(
            "TrainingStalled",
            f"time() - max by ({BY_JOB}) ({last_step} > 0) > {stalled_seconds}",
            "critical",
            f"Training job {job} has not completed a step for {watch.stalled_minutes:g} minutes",
            f"No optimizer step of {job} in {namespace} for {{{{ $value | humanizeDuration }}}}:"
            " a rank is stuck (NCCL hang, dead peer, full disk). Read the pods' logs.",
        ),
        _alert(
            "TrainingRestarting",
            f"max by ({BY_JOB}) ({grown}) >= {watch.restarts_per_hour}",
            "warning",
            f"Training job {job} keeps restarting",
            f"{job} in {namespace} restarted {{{{ $value }}}} times within the last hour.",
        ),
        {
            **_alert(
                "TrainingGpuUnderutilized",
                f"avg by ({BY_JOB}) ({util} * on (namespace, pod) group_left"
                f" ({m.TRAINING_JOB_LABEL}) {training_pods}) < {threshold}",
                "warning",
                f"Training job {job} uses its GPUs below {threshold} %",
                f"The GPUs of {job} in {namespace} averaged {{{{ $value | humanize }}}} %"
                f" for {GPU_UNDERUSED_FOR}: usually communication (NCCL over TCP instead of"
                " RDMA) or input loading.",
            ),
            "for": GPU_UNDERUSED_FOR,
        },
        _failed(cluster, namespace, jobs),
        {
            **_alert(
                "TrainingJobConditionsMissing",
                f'absent({m.JOB_CONDITION_METRIC}{{namespace="{namespace}"}}) and on ()'
                f' (count({m.STEP}{{namespace="{namespace}"}}) > 0)',
                "warning",
                f"No job conditions from kube-state-metrics in {namespace}:"
                " TrainingJobFailed cannot fire",
                f"Jobs train in {namespace} on cluster {cluster.name}, but kube-state-metrics"
                f" exports no `{m.JOB_CONDITION_METRIC}`: give it the values in"
                f" gitops/monitoring/{cluster.name}.yaml (docs/monitoring.md).",
            ),
            "for": CONDITIONS_MISSING_FOR,
        },
    ]


def prometheus_rules(cluster: ClusterProfile, jobs: list[TrainingJob]) -> list[dict[str, Any]]:
    """One PrometheusRule per namespace that has `jobs` (those targeting `cluster`) serving
    the trainer's metrics (not `mpi.rankProgram: executable` ranks, which export none of them);
    none when the profile turns alerts off."""
    if not cluster.watch.alerts:
        return []
    by_namespace: dict[str, list[str]] = {}
    for job in (j for j in jobs if j.serves_trainer_metrics()):
        by_namespace.setdefault(job.namespace, []).append(job.name)
    return [
        {
            "apiVersion": m.PROMETHEUS_RULE_API,
            "kind": "PrometheusRule",
            "metadata": {
                "name": RULE_NAME,
                "namespace": namespace,
                "labels": {
                    **cluster.watch.prometheus_labels,
                    **cluster.watch.rule_labels,
                    **PART_OF,
                },
            },
            "spec": {
                "groups": [
                    {
                        "name": f"{RULE_NAME}.{namespace}",
                        "rules": alert_rules(cluster, namespace, sorted(jobs)),
                    }
                ]
            },
        }
        for namespace, jobs in sorted(by_namespace.items())
    ]
