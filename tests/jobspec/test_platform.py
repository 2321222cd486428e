"""Platform manifests (`clusters/<name>/manifests/`): loaded beside the profiles without
confusing them, checked for kind, scope, namespace and duplicates at the door (file:line,
exit 2, nothing written), delivered in the cluster's overlay by the real kustomize, and
validated against their schemas like every other built object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.render.repos import build_overlay, render
from tests.tools import require_kustomize, trainops, tree

QUEUE = "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: research}\n"


def _platform(root: Path, cluster: str, name: str, text: str) -> Path:
    directory = root / "clusters" / cluster / "manifests"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(text)
    return path


def _fails(root: Path) -> str:
    before = tree(root)
    result = trainops(root, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert tree(root) == before, "a refused input leaves the previous output alone"
    return result.stderr


def test_shipped_platform_manifests_reach_the_overlay_in_a_wave_before_the_jobs(
    scratch: Path,
) -> None:
    require_kustomize()
    render(scratch)
    built = build_overlay(scratch, "onprem-a100")
    platform = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
                for o in built if o["kind"] in {"Queue", "PriorityClass",
                                                "NetworkAttachmentDefinition"}}  # fmt: skip
    assert set(platform) == {
        ("Queue", "", "research"),
        ("PriorityClass", "", "training"),
        ("NetworkAttachmentDefinition", "ai-training", "rdma-net"),
        ("NetworkAttachmentDefinition", "ml-vision", "rdma-net"),
    }
    job = next(o for o in built if o["kind"] == "PyTorchJob")
    # What the profile names exists in the same delivery.
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["queue"] == "research"
    assert job["spec"]["runPolicy"]["schedulingPolicy"]["priorityClass"] == "training"
    for obj in platform.values():
        wave = int(obj["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"])
        assert wave < -1, "before the claims (-1) and the jobs (0)"


def test_a_bad_platform_object_fails_validate_with_its_source(scratch: Path) -> None:
    require_kustomize()
    _platform(
        scratch,
        "onprem-a100",
        "broken.yaml",
        "apiVersion: k8s.cni.cncf.io/v1\nkind: NetworkAttachmentDefinition\n"
        "metadata: {name: other-net, namespace: ml-vision}\nspec: {confg: '{}'}\n",
    )
    result = trainops(scratch, "validate", "--cluster", "onprem-a100", "--format", "json")
    assert result.returncode == 1, result.stderr
    findings = json.loads(result.stdout)["findings"]
    bad = [f for f in findings if f["name"] == "other-net"]
    # Told in the file the author wrote (line 4: `spec`), found in its copy in the overlay.
    assert {(f["rule"], f["file"], f["line"]) for f in bad} == {
        ("schema", "clusters/onprem-a100/manifests/broken.yaml", 4)
    }
    assert {r["file"] for f in bad for r in f["relatedLocations"]} == {
        "overlays/onprem-a100/platform/broken.yaml"
    }
    messages = " ".join(f["message"] for f in bad)
    assert "confg" in messages and "config" in messages


@pytest.mark.parametrize(
    ("name", "text", "needle", "message"),
    [
        (
            "job.yaml",
            "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
            "metadata: {name: x, namespace: ml-vision}\n",
            "kind:",
            "PyTorchJob (kubeflow.org) is not a platform kind trainops delivers",
        ),
        (
            "lq.yaml",
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\n"
            "metadata: {name: q, namespace: kube-system}\nspec: {clusterQueue: c}\n",
            "namespace:",
            "must be one of cluster `onprem-a100`'s namespaces (ml-vision, ai-training)",
        ),
        (
            "queue.yaml",
            QUEUE.replace("{name: research}", "{name: research, namespace: ml-vision}"),
            "metadata:",
            "Queue is cluster-scoped: remove the namespace",
        ),
        ("twice.yaml", QUEUE + "---\n" + QUEUE, "metadata:", "Queue `research` is also in"),
    ],
)
def test_platform_objects_are_checked_at_the_door(
    scratch: Path, name: str, text: str, needle: str, message: str
) -> None:
    render(scratch)
    path = _platform(scratch, "onprem-a100", name, text)
    err = _fails(scratch)
    lines = [i for i, line in enumerate(path.read_text().splitlines(), 1) if needle in line]
    assert f"clusters/onprem-a100/manifests/{name}:{lines[-1]}:" in err
    assert message in err


def test_the_layout_cannot_be_mistaken_for_profiles(scratch: Path) -> None:
    render(scratch)
    _platform(scratch, "gpu-lab", "queue.yaml", QUEUE)
    (scratch / "clusters" / "onprem-a100").mkdir(exist_ok=True)
    (scratch / "clusters" / "onprem-a100" / "profile.yaml").write_text("name: x\n")
    err = _fails(scratch)
    assert "clusters/gpu-lab: no cluster profile clusters/gpu-lab.yaml" in err
    assert "clusters/onprem-a100/profile.yaml: only manifests/ belongs in" in err


WATCH_AND_RUN = """\
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: team-slo, namespace: ml-vision, labels: {release: kube-prometheus-stack}}
spec:
  groups:
    - name: team
      rules:
        - alert: CheckpointSlow
          expr: >-
            histogram_quantile(0.9,
            rate(trainops_trainer_checkpoint_duration_seconds_bucket[10m])) > 600
          for: 15m
          labels: {severity: warning}
---
apiVersion: monitoring.coreos.com/v1
kind: PodMonitor
metadata: {name: dcgm, namespace: ml-vision}
spec:
  selector: {matchLabels: {app: nvidia-dcgm-exporter}}
  podMetricsEndpoints: [{port: metrics, honorLabels: true}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: team-dashboard, namespace: ml-vision, labels: {grafana_dashboard: "1"}}
data: {team.json: '{"title": "Team", "panels": []}'}
---
apiVersion: external-secrets.io/v1
kind: ExternalSecret
metadata: {name: hf-token, namespace: ml-vision}
spec:
  refreshInterval: 1h
  secretStoreRef: {name: vault, kind: ClusterSecretStore}
  target: {name: hf-token, creationPolicy: Owner}
  data:
    - secretKey: HF_TOKEN
      remoteRef: {key: ml/huggingface, property: token}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: ml-vision}
spec: {hard: {requests.nvidia.com/gpu: "32"}}
---
apiVersion: v1
kind: LimitRange
metadata: {name: defaults, namespace: ml-vision}
spec:
  limits: [{type: Container, defaultRequest: {cpu: "1", memory: 1Gi}}]
"""
WATCH_KINDS = {
    ("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
    ("monitoring.coreos.com", "PodMonitor", "podmonitors"),
    ("", "ConfigMap", "configmaps"),
    ("external-secrets.io", "ExternalSecret", "externalsecrets"),
    ("", "ResourceQuota", "resourcequotas"),
    ("", "LimitRange", "limitranges"),
}


def test_platform_teams_deliver_alerts_dashboards_secrets_and_quotas(scratch: Path) -> None:
    """Issue 25.6: what goes with training passes the same door, validates clean against its
    strict schema, and the delivery may write exactly those kinds: the Argo CD AppProject's
    namespaced whitelist (onprem-a100) and the Flux Role of the namespace (cloud-h100)."""
    require_kustomize()
    for cluster in ("onprem-a100", "cloud-h100"):
        _platform(scratch, cluster, "watch.yaml", WATCH_AND_RUN)
    render(scratch)
    for cluster in ("onprem-a100", "cloud-h100"):
        result = trainops(scratch, "validate", "--cluster", cluster, "--format", "json")
        assert result.returncode == 0, result.stdout + result.stderr
        built = {(o["kind"], o["metadata"]["name"]) for o in build_overlay(scratch, cluster)}
        assert {("ExternalSecret", "hf-token"), ("LimitRange", "defaults")} <= built
    project = yaml.safe_load((scratch / "gitops/argocd/appproject.yaml").read_text())
    allowed = {(k["group"], k["kind"]) for k in project["spec"]["namespaceResourceWhitelist"]}
    assert {(group, kind) for group, kind, _ in WATCH_KINDS} <= allowed
    flux = list(yaml.safe_load_all((scratch / "gitops/flux/cloud-h100/rbac.yaml").read_text()))
    (role,) = [o for o in flux if o["kind"] == "Role" and o["metadata"]["namespace"] == "ml-vision"]
    granted = {
        (g, r) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
    }
    assert {(group, plural) for group, _, plural in WATCH_KINDS} <= granted


def test_an_external_secret_is_held_to_its_strict_schema(scratch: Path) -> None:
    require_kustomize()
    typo = WATCH_AND_RUN.split("---\n")[3].replace("refreshInterval", "refreshInterva")
    _platform(scratch, "onprem-a100", "secret.yaml", typo)
    result = trainops(scratch, "validate", "--cluster", "onprem-a100", "--format", "json")
    assert result.returncode == 1, result.stderr
    findings = [f for f in json.loads(result.stdout)["findings"] if f["name"] == "hf-token"]
    assert [f["rule"] for f in findings] == ["schema"]
    assert "refreshInterva" in findings[0]["message"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: ml-vision}\n"
            "data: {a: b}\n",
            'a platform ConfigMap is a Grafana dashboard: label it `grafana_dashboard: "1"`',
        ),
        (
            "apiVersion: v1\nkind: Secret\nmetadata: {name: token, namespace: ml-vision}\n"
            "stringData: {token: hunter2}\n",
            "a Secret never goes in Git: deliver an ExternalSecret",
        ),
    ],
)
def test_only_dashboards_and_no_secrets(scratch: Path, text: str, message: str) -> None:
    render(scratch)
    _platform(scratch, "onprem-a100", "x.yaml", text)
    assert message in _fails(scratch)
