"""Where a failed sync or a failed job is told (issue 37 item 4): the profile's `notifications`
rendered as Flux Providers and Alerts (notification.toolkit.fluxcd.io/v1beta3, notification-
controller v1.9) and as Argo CD notification services, triggers and Application subscriptions
(Argo CD v3.5), behind the same fences: credentials only named, the objects in the tools' own
namespaces, applied by the platform, never by the delivery accounts. On main the profile had no
such field and nothing was rendered.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conformance.gitops_repos import rendered
from tests.conformance.test_argocd import applications
from tests.tools import REPO, copy_inputs, require_kustomize, trainops

FLUX_DIR = "gitops/flux/cloud-h100"
SUBSCRIBE = "notifications.argoproj.io/subscribe."
# kustomize-controller v1.9.4's event messages: a failed apply (the server's refusal of a
# dry run) and a failed health check (kustomization_controller.go, `health check failed after
# %s: %w`) when a job's `failed` expression is true.
APPLY_FAILED = (
    "PyTorchJob/ml-vision/resnet50-ddp dry-run failed (Invalid): PyTorchJob.kubeflow.org"
    ' "resnet50-ddp" is invalid: spec.pytorchReplicaSpecs.Worker.replicas: Invalid value: -1'
)
HEALTH_FAILED = (
    "health check failed after 2m0.0213s: failed early due to stalled resources:"
    " [PyTorchJob/ml-vision/resnet50-ddp status: 'Failed']"
)


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def test_flux_providers_and_alerts_name_their_secrets_and_validate() -> None:
    docs = _docs(REPO / FLUX_DIR / "notifications.yaml")
    providers = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Provider"}
    alerts = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Alert"}
    assert (
        set(providers)
        == set(alerts)
        == {
            "training-cloud-h100-ml-training",
            "training-cloud-h100-commit-status",
        }
    )
    slack = providers["training-cloud-h100-ml-training"]["spec"]
    assert slack == {
        "type": "slack",
        "channel": "ml-training",
        "address": "https://slack.com/api/chat.postMessage",
        "secretRef": {"name": "slack-bot-token"},
    }
    github = providers["training-cloud-h100-commit-status"]["spec"]
    settings = yaml.safe_load((REPO / "trainops.yaml").read_text())
    assert github["address"] == settings["repoURL"].removesuffix(".git")
    for alert in alerts.values():
        assert alert["metadata"]["namespace"] == "flux-system"
        assert alert["spec"]["providerRef"]["name"] == alert["metadata"]["name"]
        sources = {(s["kind"], s["name"]) for s in alert["spec"]["eventSources"]}
        kustomizations = {
            (d["kind"], d["metadata"]["name"])
            for f in ("training.yaml", "platform.yaml")
            for d in _docs(REPO / FLUX_DIR / f)
        }
        assert sources == kustomizations
    assert alerts["training-cloud-h100-commit-status"]["spec"]["eventSeverity"] == "info"
    assert alerts["training-cloud-h100-ml-training"]["spec"]["eventSeverity"] == "error"
    checked = trainops(REPO, "validate", "--manifests", str(REPO / FLUX_DIR / "notifications.yaml"))
    assert checked.returncode == 0, checked.stdout


def _alert_passes(spec: dict[str, Any], message: str) -> bool:
    """notification-controller's filter (internal/server/event_handlers.go): an event must
    match one of `inclusionList` (when given) and none of `exclusionList` (Go regexps)."""
    included = not spec.get("inclusionList") or any(
        re.search(p, message) for p in spec["inclusionList"]
    )
    return included and not any(re.search(p, message) for p in spec.get("exclusionList", []))


@pytest.mark.parametrize(
    ("events", "apply", "health"),
    [
        (["sync-failed", "job-failed"], True, True),
        (["sync-failed"], True, False),
        (["job-failed"], False, True),
    ],
)
def test_flux_alert_keeps_the_events_asked_for(
    tmp_path: Path, events: list[str], apply: bool, health: bool
) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    profile = root / "clusters" / "cloud-h100.yaml"
    text = profile.read_text(encoding="utf-8")
    profile.write_text(text.replace("    channel: ml-training\n", f"    channel: ml-training\n"
                                    f"    events: {events}\n", 1))  # fmt: skip
    assert trainops(root, "render").returncode == 0
    docs = _docs(root / FLUX_DIR / "notifications.yaml")
    (alert,) = [d for d in docs if d["kind"] == "Alert" and "ml-training" in d["metadata"]["name"]]
    assert _alert_passes(alert["spec"], APPLY_FAILED) is apply
    assert _alert_passes(alert["spec"], HEALTH_FAILED) is health


def test_argocd_applications_subscribe_to_the_services_the_configmap_defines() -> None:
    require_kustomize()
    repo = rendered("shipped")
    (cm,) = repo.gitops["gitops/argocd/argocd-notifications-cm.yaml"]
    data = cm["data"]
    assert cm["metadata"]["namespace"] == "argocd"
    apps = {a["metadata"]["name"]: a for a in applications(repo)}
    annotations = apps["training-onprem-a100"]["metadata"]["annotations"]
    # The ApplicationSet's own annotation survives the patch.
    assert annotations["argocd.argoproj.io/compare-options"] == "ServerSideDiff=true"
    subscriptions = {k: v for k, v in annotations.items() if k.startswith(SUBSCRIBE)}
    assert subscriptions == {
        f"{SUBSCRIBE}trainops-on-sync-failed.onprem-a100-ml-training": "ml-training",
        f"{SUBSCRIBE}trainops-on-health-degraded.onprem-a100-ml-training": "ml-training",
        f"{SUBSCRIBE}trainops-on-health-degraded.onprem-a100-oncall": "",
    }
    assert not any(k.startswith(SUBSCRIBE) for k in apps["training-onprem-h200"]["metadata"]
                   .get("annotations", {}))  # fmt: skip
    for key in subscriptions:
        trigger, service = key.removeprefix(SUBSCRIBE).split(".", 1)
        assert f"trigger.{trigger}" in data, trigger
        assert any(k.endswith(f".{service}") and k.startswith("service.") for k in data), service
        for rule in yaml.safe_load(data[f"trigger.{trigger}"]):
            for template in rule["send"]:
                assert f"template.{template}" in data
    # Secrets by reference: `$key` of argocd-notifications-secret, never a value.
    assert yaml.safe_load(data["service.slack.onprem-a100-ml-training"]) == {
        "token": "$slack-token"
    }
    assert yaml.safe_load(data["service.webhook.onprem-a100-oncall"]) == {
        "url": "$oncall-webhook-url"
    }
    job_failed = yaml.safe_load(data["template.trainops-job-failed"])
    assert set(job_failed["webhook"]) == {"onprem-a100-oncall"}
    degraded = yaml.safe_load(data["trigger.trainops-on-health-degraded"])
    assert degraded[0]["when"] == "app.status.health.status == 'Degraded'"


def test_the_delivery_accounts_do_not_apply_notifications() -> None:
    """The fence: no Secret anywhere; the notification objects in the tools' namespaces,
    which no delivery Role reaches, and no notification kind in any Role."""
    gitops = REPO / "gitops"
    for path in gitops.rglob("*.yaml"):
        for doc in _docs(path):
            assert doc.get("kind") != "Secret", path
            if path.name == "rbac.yaml" or path.parent.name == "rbac":
                for rule in doc.get("rules", []):
                    assert "notification.toolkit.fluxcd.io" not in rule["apiGroups"], path
                if doc["kind"] in ("Role", "RoleBinding"):
                    assert doc["metadata"]["namespace"] not in ("argocd", "flux-system"), path
    (project,) = _docs(gitops / "argocd" / "appproject.yaml")
    assert "argocd" not in {d.get("namespace") for d in project["spec"]["destinations"]}


def _profile_error(tmp_path: Path, old: str, new: str) -> str:
    root = copy_inputs(REPO, tmp_path / "repo")
    profile = root / "clusters" / "onprem-a100.yaml"
    text = profile.read_text(encoding="utf-8")
    assert old in text
    profile.write_text(text.replace(old, new, 1))
    before = sorted(p.name for p in (root / "gitops").rglob("*"))
    result = trainops(root, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    assert sorted(p.name for p in (root / "gitops").rglob("*")) == before
    shutil.rmtree(root)
    return result.stderr


def test_a_credential_written_in_the_profile_is_refused(tmp_path: Path) -> None:
    err = _profile_error(
        tmp_path, "    secret: slack-token", "    secret: slack-token\n    token: xoxb-1234"
    )
    assert "clusters/onprem-a100.yaml:" in err and "token" in err


def test_slack_needs_a_channel_and_github_on_argocd_its_app(tmp_path: Path) -> None:
    err = _profile_error(tmp_path, "    channel: ml-training\n", "")
    assert "clusters/onprem-a100.yaml:" in err and "channel" in err
    github = "  - name: oncall\n    type: github\n    secret: github-app-key"
    webhook = "  - name: oncall\n    type: webhook\n    secret: oncall-webhook-url"
    err = _profile_error(tmp_path, webhook, github)
    assert "a `github` notification posts the commit status of every sync" in err
    assert "needs `githubApp: {appID, installationID}`" in err
