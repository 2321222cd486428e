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
import yaml

from tests.tools import REPO, add_monitoring, copy_inputs, require_module
from trainops.cli import main
from trainops.jobspec.load import load_repository
from trainops.render import dashboard as dashboard_render
from trainops.render.delivered import monitoring_objects

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
    first = dashboard_render.dashboard_objects(cluster)
    second = dashboard_render.dashboard_objects(load_repository(REPO).clusters["cloud-h100"])
    assert first == second
    text = first[0]["data"][dashboard_render.DATA_KEY]
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


GRAFANA_OPERATOR = """
monitoring:
  dashboard: grafanaOperator
  grafanaInstanceSelector: {dashboards: grafana}
"""


def test_grafana_operator_profiles_deliver_a_grafanadashboard(tmp_path: Path) -> None:
    """`dashboard: grafanaOperator`: the same model as a grafana-operator v5 `GrafanaDashboard`
    (grafana.integreatly.org/v1beta1, api/v1beta1/grafanadashboard_types.go at v5.24.0): the
    model in `spec.json`, `spec.instanceSelector` (required by the CRD) from the profile. The
    operator imports a dashboard only into instances of its own namespace unless
    `allowCrossNamespaceImport` (controllers/controller_shared.go
    `GetScopedMatchingInstances`); the dashboard sits in a training namespace and Grafana in
    another, so it must be set. The result validates against the strict schema, and the
    delivery (Flux Role on cloud-h100, the Argo CD AppProject of the others) may write it."""
    root = copy_inputs(REPO, tmp_path / "repo")
    for profile in (root / "clusters").glob("*.yaml"):
        add_monitoring(profile, GRAFANA_OPERATOR)
    repo = load_repository(root)
    shipped = load_repository(REPO)
    (sidecar,) = [
        o
        for o in monitoring_objects(shipped, shipped.clusters["cloud-h100"])
        if o["kind"] == "ConfigMap"
    ]
    objects = monitoring_objects(repo, repo.clusters["cloud-h100"])
    assert [o["kind"] for o in objects if o["kind"] in {"ConfigMap", "GrafanaDashboard"}] == [
        "GrafanaDashboard"
    ]
    (crd,) = [o for o in objects if o["kind"] == "GrafanaDashboard"]
    assert crd["apiVersion"] == "grafana.integreatly.org/v1beta1"
    assert crd["metadata"]["namespace"] == "ml-vision"
    assert crd["spec"]["instanceSelector"] == {"matchLabels": {"dashboards": "grafana"}}
    assert crd["spec"]["allowCrossNamespaceImport"] is True
    (text,) = sidecar["data"].values()
    assert json.loads(crd["spec"]["json"]) == json.loads(text)
    assert main(["--root", str(root), "render"]) == 0
    assert main(["--root", str(root), "validate"]) == 0
    rbac = yaml.safe_load_all((root / "gitops" / "flux" / "cloud-h100" / "rbac.yaml").read_text())
    assert any(
        "grafana.integreatly.org" in rule.get("apiGroups", [])
        and "grafanadashboards" in rule["resources"]
        for doc in rbac
        if doc and doc["kind"] == "Role"
        for rule in doc["rules"]
    )
    projects = [
        doc
        for path in (root / "gitops" / "argocd").rglob("*.yaml")
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc["kind"] == "AppProject"
    ]
    (project,) = projects
    assert {"group": "grafana.integreatly.org", "kind": "GrafanaDashboard"} in project["spec"][
        "namespaceResourceWhitelist"
    ]


def test_a_grafanadashboard_without_instance_selector_is_refused(tmp_path: Path) -> None:
    """The CRD requires `spec.instanceSelector`; the strict schema says so, naming the line."""
    path = tmp_path / "dashboard.yaml"
    path.write_text(
        "apiVersion: grafana.integreatly.org/v1beta1\nkind: GrafanaDashboard\n"
        "metadata: {name: d, namespace: ml-vision}\nspec:\n  json: '{}'\n"
    )
    assert main(["validate", "--manifests", str(path)]) == 1
