"""What kube-state-metrics needs so that TrainingJobFailed can fire: its custom resource state
configuration for the training job kinds a cluster runs, and the permission to list and watch
them, as values of the prometheus-community `kube-state-metrics` chart (under
`kube-state-metrics:` in kube-prometheus-stack: `customResourceState.enabled/config`,
`rbac.extraRules`).

trainops cannot deliver them: kube-state-metrics reads its configuration from its own
deployment in the monitoring namespace, which the delivery accounts may not write. So they are
rendered to `gitops/monitoring/<cluster>.yaml`, for the platform's install of the chart
(docs/monitoring.md). One series per condition of each job (kube-state-metrics v2.17
pkg/customresourcestate: a Gauge over the `status.conditions` list, labels from each item's
`type`, value from its `status`).
"""

from __future__ import annotations

from typing import Any

from trainops.core.paths import MONITORING_VALUES_DIR
from trainops.facts import monitoring as m
from trainops.jobspec.installed import rendered_kind
from trainops.jobspec.model import ClusterProfile, Repository
from trainops.render.delivered import targets_on

CHART_KEY = "kube-state-metrics"
# The plural each kind's CRD serves (kube-state-metrics defaults it with flect.Pluralize,
# which gives these; written out for the RBAC rule).
PLURALS = {
    "PyTorchJob": "pytorchjobs",
    "TFJob": "tfjobs",
    "MPIJob": "mpijobs",
    "TrainJob": "trainjobs",
}


def _resource(api_version: str, kind: str) -> dict[str, Any]:
    group, _, version = api_version.rpartition("/")
    return {
        "groupVersionKind": {"group": group, "version": version, "kind": kind},
        "labelsFromPath": {"name": ["metadata", "name"], "namespace": ["metadata", "namespace"]},
        "metrics": [
            {
                "name": m.JOB_CONDITION,
                "help": "A training job's conditions (1: the condition's status is True).",
                "each": {
                    "type": "Gauge",
                    "gauge": {
                        "path": ["status", "conditions"],
                        "labelsFromPath": {"type": ["type"]},
                        "valueFrom": ["status"],
                    },
                },
            }
        ],
    }


def job_kinds(repo: Repository, cluster: ClusterProfile) -> list[tuple[str, str]]:
    """(apiVersion, kind) of the training jobs `cluster` runs, sorted."""
    return sorted({rendered_kind(job, cluster) for job, _ in targets_on(repo, cluster)})


def values(kinds: list[tuple[str, str]]) -> dict[str, Any]:
    """The chart values for these (apiVersion, kind)s."""
    by_group: dict[str, set[str]] = {}
    for api_version, kind in kinds:
        by_group.setdefault(api_version.rpartition("/")[0], set()).add(PLURALS[kind])
    rules = [
        {"apiGroups": [group], "resources": sorted(plurals), "verbs": ["list", "watch"]}
        for group, plurals in sorted(by_group.items())
    ]
    config = {
        "kind": "CustomResourceStateMetrics",
        "spec": {"resources": [_resource(api, kind) for api, kind in kinds]},
    }
    return {
        CHART_KEY: {
            "rbac": {"extraRules": rules},
            "customResourceState": {"enabled": True, "config": config},
            # The series' own `namespace` (the job's) kept, not renamed `exported_namespace`.
            "prometheus": {"monitor": {"honorLabels": True}},
        }
    }


def kube_state_metrics_files(repo: Repository) -> dict[str, tuple[str, dict[str, Any]]]:
    """`gitops/monitoring/<cluster>.yaml` (with the profile it follows) for each cluster whose
    alerts are on and that runs jobs."""
    files = {}
    for cluster in repo.clusters.values():
        kinds = job_kinds(repo, cluster)
        if cluster.watch.alerts and kinds:
            files[f"{MONITORING_VALUES_DIR}/{cluster.name}.yaml"] = (cluster.file, values(kinds))
    return files
