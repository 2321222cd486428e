"""The cluster's Grafana dashboard for training, built with Grafana's typed
`grafana-foundation-sdk` (no hand-written dashboard JSON), delivered as a ConfigMap that
kube-prometheus-stack's dashboard sidecar loads (label `grafana_dashboard: "1"`), or as the
Grafana Operator's `GrafanaDashboard` where the profile says `dashboard: grafanaOperator`.

Panels per job (the `training_job` label, from the metrics Service's name): throughput, loss,
step time, restarts and time since the last step from the trainer's metrics; GPU utilisation and
memory per worker pod from NVIDIA's DCGM exporter, joined on `namespace`/`pod` to the pods
that serve trainer metrics. Every expression is parsed in tests (tests/render/test_dashboard.py).
"""

from __future__ import annotations

import json
from typing import Any

from grafana_foundation_sdk.builders.common import VizLegendOptions
from grafana_foundation_sdk.builders.dashboard import Dashboard, DatasourceVariable, QueryVariable
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.timeseries import Panel
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import LegendDisplayMode, LegendPlacement
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DataSourceRef,
    VariableRefresh,
)

from trainops.facts import monitoring as m
from trainops.jobspec.model import ClusterProfile

CONFIGMAP_NAME = "trainops-training-dashboard"
DATA_KEY = "trainops-training.json"
PART_OF = {"app.kubernetes.io/part-of": "trainops"}
# Grafana's own variable syntax, left for Grafana to expand.
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
SELECTOR = f'namespace=~"${{namespace:regex}}", service=~"${{job:regex}}{m.METRICS_SERVICE_SUFFIX}"'
RATE = "$__rate_interval"
BY_JOB = "namespace, service"
PANEL_WIDTH = 12
PANEL_HEIGHT = 8


def _per_job(expr: str) -> str:
    return m.job_of_service(expr)


def _training_pods() -> str:
    """1 for every pod that serves trainer metrics, with its job: the join for DCGM series."""
    return f"group by (namespace, pod, service) ({m.STEP}{{{SELECTOR}}})"


def _gpu(metric: str, how: str) -> str:
    joined = f"{metric} * on (namespace, pod) group_left (service) {_training_pods()}"
    return f"{how} by (namespace, pod) ({joined})"


# (title, unit, PromQL, legend): the panels, in reading order.
PANELS: tuple[tuple[str, str, str, str], ...] = (
    (
        "Throughput (samples/s)",
        "short",
        _per_job(f"max by ({BY_JOB}) ({m.SAMPLES_PER_SECOND}{{{SELECTOR}}})"),
        "{{training_job}}",
    ),
    (
        "Throughput (tokens/s)",
        "short",
        _per_job(f"max by ({BY_JOB}) ({m.TOKENS_PER_SECOND}{{{SELECTOR}}})"),
        "{{training_job}}",
    ),
    ("Loss", "none", _per_job(f"max by ({BY_JOB}) ({m.LOSS}{{{SELECTOR}}})"), "{{training_job}}"),
    (
        "Step time (p95)",
        "s",
        _per_job(
            f"histogram_quantile(0.95, sum by (le, {BY_JOB})"
            f" (rate({m.STEP_DURATION}_bucket{{{SELECTOR}}}[{RATE}])))"
        ),
        "{{training_job}}",
    ),
    ("GPU utilisation per worker", "percent", _gpu(m.DCGM_GPU_UTIL, "avg"), "{{pod}}"),
    ("GPU memory used per worker", "decmbytes", _gpu(m.DCGM_FB_USED, "sum"), "{{pod}}"),
    (
        "Restarts (elastic)",
        "short",
        _per_job(f"max by ({BY_JOB}) ({m.RESTARTS}{{{SELECTOR}}})"),
        "{{training_job}}",
    ),
    (
        "Time since last step",
        "s",
        _per_job(f"time() - max by ({BY_JOB}) ({m.LAST_STEP_TIMESTAMP}{{{SELECTOR}}} > 0)"),
        "{{training_job}}",
    ),
)


def _panel(title: str, unit: str, expr: str, legend: str) -> Panel:
    return (
        Panel()
        .title(title)
        .unit(unit)
        .datasource(DATASOURCE)
        .height(PANEL_HEIGHT)
        .span(PANEL_WIDTH)
        # Panel options written out: Grafana reads a panel's `options` as an object.
        .legend(
            VizLegendOptions()
            .display_mode(LegendDisplayMode.LIST)
            .placement(LegendPlacement.BOTTOM)
            .show_legend(True)
        )
        .with_target(Dataquery().expr(expr).legend_format(legend).ref_id("A"))
    )


def dashboard(cluster: ClusterProfile) -> dict[str, Any]:
    """The dashboard model, as Grafana's JSON (keys as the SDK writes them)."""
    namespaces = "|".join(cluster.namespaces)
    builder = (
        Dashboard(f"Training jobs — {cluster.name}")
        .uid(f"trainops-{cluster.name}"[:40])
        .tags(["trainops", "training"])
        .time("now-6h", "now")
        .refresh("1m")
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .readonly()
        .with_variable(DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
        .with_variable(
            QueryVariable("namespace")
            .label("Namespace")
            .datasource(DATASOURCE)
            .query(f"label_values({m.STEP}, namespace)")
            .regex(f"/^({namespaces})$/")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .multi(True)
            .include_all(True)
        )
        .with_variable(
            QueryVariable("job")
            .label("Training job")
            .datasource(DATASOURCE)
            .query(f'label_values({m.STEP}{{namespace=~"$namespace"}}, service)')
            .regex(f"/(.+){m.METRICS_SERVICE_SUFFIX}$/")
            .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
            .multi(True)
            .include_all(True)
        )
    )
    for panel in PANELS:
        builder = builder.with_panel(_panel(*panel))
    encoded: dict[str, Any] = json.loads(json.dumps(builder.build(), cls=JSONEncoder))
    return encoded


def dashboard_objects(cluster: ClusterProfile) -> list[dict[str, Any]]:
    """The dashboard as the profile's `monitoring.dashboard` delivers it: the sidecar's
    ConfigMap, the Grafana Operator's GrafanaDashboard, or nothing (`none`)."""
    watch = cluster.watch
    if watch.dashboard == "none":
        return []
    text = json.dumps(dashboard(cluster), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if watch.dashboard == "grafanaOperator":
        return [grafana_dashboard(cluster, text)]
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": CONFIGMAP_NAME,
                "namespace": watch.dashboard_namespace,
                "labels": {m.GRAFANA_DASHBOARD_LABEL: m.GRAFANA_DASHBOARD_LABEL_VALUE, **PART_OF},
            },
            "data": {DATA_KEY: text},
        }
    ]


def grafana_dashboard(cluster: ClusterProfile, text: str) -> dict[str, Any]:
    """The Grafana Operator (v5) custom resource holding the model `text`.

    The dashboard must live in a training namespace (the delivery writes nowhere else) while
    Grafana usually runs in a monitoring namespace: the operator imports a dashboard into
    instances of other namespaces only with `allowCrossNamespaceImport` (grafana-operator
    v5.24 controllers/controller_shared.go), so it is set, and the profile's
    `grafanaInstanceSelector` says which instances."""
    watch = cluster.watch
    return {
        "apiVersion": m.GRAFANA_OPERATOR_API,
        "kind": m.GRAFANA_DASHBOARD_KIND,
        "metadata": {
            "name": CONFIGMAP_NAME,
            "namespace": watch.dashboard_namespace,
            "labels": dict(PART_OF),
        },
        "spec": {
            "allowCrossNamespaceImport": True,
            "instanceSelector": {
                "matchLabels": dict(sorted(watch.grafana_instance_selector.items()))
            },
            "json": text,
        },
    }
