"""The cluster's Grafana dashboard, read as its consumers read it.

- kube-prometheus-stack's Grafana dashboard sidecar (kiwigrid/k8s-sidecar, chart values
  `grafana.sidecar.dashboards.label: grafana_dashboard`, `labelValue: "1"`) loads ConfigMaps
  carrying that label and writes each data key to a file Grafana provisions: one key, `.json`.
- Grafana expands the template variables, then sends each target's `expr` to Prometheus: every
  expression, expanded the way Grafana does (`${var:regex}` -> `(a|b)`, `$__rate_interval` ->
  an interval), must parse as PromQL (promql-parser, a port of Prometheus' own parser).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.tools import REPO, require_module
from trainops.render import dashboard as dashboard_render
from trainops.render.delivered import monitoring_objects
from trainops.spec.load import load_repository

# Values Grafana would put in for the variables (multi-value `regex` format for the first).
EXPANSIONS = {
    "${namespace:regex}": "(ml-vision|ai-training)",
    "${job:regex}": "(llm-finetune|resnet50-ddp)",
    "$namespace": "ml-vision",
    "$__rate_interval": "1m",
}


def _expand(expr: str) -> str:
    for variable, value in EXPANSIONS.items():
        expr = expr.replace(variable, value)
    assert "$" not in expr.replace("$1", ""), f"unexpanded variable in {expr}"
    return expr


@pytest.fixture(scope="module")
def configmaps() -> dict[str, dict[str, Any]]:
    repo = load_repository(REPO)
    return {
        name: obj
        for name, cluster in repo.clusters.items()
        for obj in monitoring_objects(repo, cluster)
        if obj["kind"] == "ConfigMap"
    }


def _model(configmap: dict[str, Any]) -> dict[str, Any]:
    (key,) = configmap["data"]
    assert key.endswith(".json")
    model: dict[str, Any] = json.loads(configmap["data"][key])
    return model


def test_every_shipped_cluster_delivers_a_dashboard_the_sidecar_loads(
    configmaps: dict[str, dict[str, Any]],
) -> None:
    assert set(configmaps) == {"cloud-h100", "onprem-a100", "onprem-h200"}
    for name, configmap in configmaps.items():
        assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1", name
        model = _model(configmap)
        # Grafana refuses a dashboard uid longer than 40 characters.
        assert 0 < len(model["uid"]) <= 40
        assert name in model["title"]


def test_every_expression_parses_as_promql(configmaps: dict[str, dict[str, Any]]) -> None:
    promql = require_module("promql_parser")
    for name, configmap in configmaps.items():
        model = _model(configmap)
        exprs = [t["expr"] for p in model["panels"] for t in p["targets"]]
        queries = [v["query"] for v in model["templating"]["list"] if v["type"] == "query"]
        assert exprs and queries
        for query in queries:
            # Grafana's `label_values(selector, label)`: the selector is PromQL.
            match = re.fullmatch(r"label_values\((.*), (\w+)\)", query)
            assert match, query
            exprs.append(match.group(1))
        for expr in exprs:
            try:
                promql.parse(_expand(expr))
            except ValueError as err:
                pytest.fail(f"{name}: {expr!r} does not parse: {err}")


def test_panels_cover_what_the_seeds_watch(configmaps: dict[str, dict[str, Any]]) -> None:
    """Throughput, loss, step time, GPU utilisation and memory per worker, restarts."""
    model = _model(configmaps["cloud-h100"])
    exprs = " ".join(t["expr"] for p in model["panels"] for t in p["targets"])
    for metric in (
        "trainops_trainer_samples_per_second",
        "trainops_trainer_loss",
        "trainops_trainer_step_duration_seconds_bucket",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "trainops_trainer_restarts",
    ):
        assert metric in exprs, metric
    per_worker = [p for p in model["panels"] if "DCGM" in p["targets"][0]["expr"]]
    assert per_worker and all(p["targets"][0]["legendFormat"] == "{{pod}}" for p in per_worker)
    # The namespace variable offers this cluster's training namespaces only.
    (namespace,) = [v for v in model["templating"]["list"] if v["name"] == "namespace"]
    assert namespace["regex"] == "/^(ml-vision|ai-training)$/"


def test_dashboard_json_is_byte_identical_across_renders(tmp_path: Path) -> None:
    repo = load_repository(REPO)
    cluster = repo.clusters["cloud-h100"]
    first = dashboard_render.dashboard_configmap(cluster)
    second = dashboard_render.dashboard_configmap(load_repository(REPO).clusters["cloud-h100"])
    assert first == second
    text = first[0]["data"][dashboard_render.DATA_KEY]
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
