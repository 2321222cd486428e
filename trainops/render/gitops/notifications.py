"""Where a cluster's sync and job-failure notifications go (`notifications:` in its profile),
as the objects each delivery tool reads.

Flux (notification-controller v1.9, Flux v2.9: `notification.toolkit.fluxcd.io/v1beta3`): per
notification a `Provider` (slack: the bot token API, `chat.postMessage`; webhook: `generic`,
whose Secret holds the URL as `address`; github: commit status of the repository) and an
`Alert` on the cluster's Kustomizations, in the Flux namespace, in
`gitops/flux/<cluster>/notifications.yaml`. kustomize-controller emits an error event when an
apply fails and, with `wait: true`, when a health check fails (`health check failed after
...`, kustomization_controller.go v1.9.4): the Alert's `inclusionList`/`exclusionList` keep
the events asked for. The github Provider takes every event (`eventSeverity: info`): it posts
the revision's status, success or failure.

Argo CD (v3.5, notifications in `argocd-notifications-cm`): a service per notification
(`service.<type>.<cluster>-<name>`), the templates and triggers (the catalog's `on-sync-failed`
and `on-health-degraded` conditions, `oncePer` the synced revision; a job that Failed makes the
Application Degraded through trainops' health check), and the subscriptions as annotations of
each cluster's Application (`notifications.argoproj.io/subscribe.<trigger>.<service>`), in
`gitops/argocd/argocd-notifications-cm.yaml` and the ApplicationSet.

The fence: credentials are only named (a Secret the platform creates, a `$key` of
`argocd-notifications-secret`); these objects live in the tools' own namespaces and are applied
by the platform's bootstrap like `rbac.yaml` and `argocd-cm-health.yaml`, never by the delivery
accounts, whose Roles gain no notification kind.
"""

from __future__ import annotations

from typing import Any

import yaml

from trainops.jobspec.model import ClusterProfile, Notification, Repository

NOTIFICATION_API = "notification.toolkit.fluxcd.io/v1beta3"
PART_OF = {"app.kubernetes.io/part-of": "trainops"}
SLACK_API = "https://slack.com/api/chat.postMessage"
FLUX_TYPES = {"slack": "slack", "webhook": "generic", "github": "github"}
# kustomize-controller's message when a health check fails (wait: true): a failed job.
HEALTH_FAILED = "^health check failed"
ARGOCD_NOTIFICATIONS_CM = "argocd-notifications-cm"
SUBSCRIBE = "notifications.argoproj.io/subscribe"
# trigger -> (condition, template): the catalog's conditions (notifications_catalog/triggers,
# Argo CD v3.5.1), under trainops' own names so that the catalog's stay untouched.
TRIGGERS = {
    "trainops-on-sync-failed": (
        "app.status.operationState != nil and app.status.operationState.phase in"
        " ['Error', 'Failed']",
        "trainops-sync-failed",
    ),
    "trainops-on-health-degraded": (
        "app.status.health.status == 'Degraded'",
        "trainops-job-failed",
    ),
    "trainops-on-sync-succeeded": (
        "app.status.operationState != nil and app.status.operationState.phase in ['Succeeded']",
        "trainops-sync-succeeded",
    ),
}
ONCE_PER = "app.status.operationState?.syncResult?.revision"
EVENT_TRIGGERS = {
    "sync-failed": "trainops-on-sync-failed",
    "job-failed": "trainops-on-health-degraded",
}


def _flux_name(cluster: ClusterProfile, n: Notification) -> str:
    return f"training-{cluster.name}-{n.name}"


def _kustomizations(cluster: ClusterProfile, platform: bool) -> list[dict[str, str]]:
    names = [f"training-{cluster.name}"] + ([f"training-{cluster.name}-platform"] * platform)
    return [{"kind": "Kustomization", "name": name} for name in names]


def flux_notifications(
    repo: Repository, cluster: ClusterProfile, platform: bool
) -> list[dict[str, Any]]:
    """The Providers and Alerts of a Flux cluster (`platform`: whether it has the platform
    Kustomization too)."""
    out: list[dict[str, Any]] = []
    namespace = repo.settings.flux_namespace
    for n in cluster.notifications:
        name = _flux_name(cluster, n)
        meta = {"labels": dict(PART_OF), "name": name, "namespace": namespace}
        spec: dict[str, Any] = {"type": FLUX_TYPES[n.type], "secretRef": {"name": n.secret}}
        if n.type == "slack":
            spec.update(address=SLACK_API, channel=n.channel)
        elif n.type == "github":
            spec["address"] = (n.repository or repo.settings.repo_url).removesuffix(".git")
        out.append({"apiVersion": NOTIFICATION_API, "kind": "Provider", "metadata": meta,
                    "spec": spec})  # fmt: skip
        alert: dict[str, Any] = {
            "providerRef": {"name": name},
            "eventSources": _kustomizations(cluster, platform),
            "eventSeverity": "info" if n.type == "github" else "error",
            "eventMetadata": {"cluster": cluster.name},
            "summary": f"trainops: training on cluster {cluster.name}",
        }
        if n.type != "github" and set(n.events) == {"job-failed"}:
            alert["inclusionList"] = [HEALTH_FAILED]
        elif n.type != "github" and set(n.events) == {"sync-failed"}:
            alert["exclusionList"] = [HEALTH_FAILED]
        out.append({"apiVersion": NOTIFICATION_API, "kind": "Alert", "metadata": dict(meta),
                    "spec": alert})  # fmt: skip
    return out


def _service(cluster: ClusterProfile, n: Notification) -> str:
    return f"{cluster.name}-{n.name}"


def argocd_subscriptions(cluster: ClusterProfile) -> dict[str, str]:
    """The annotations subscribing a cluster's Application to its notifications."""
    out: dict[str, str] = {}
    for n in cluster.notifications:
        service = _service(cluster, n)
        if n.type == "github":
            triggers = ["trainops-on-sync-succeeded", *EVENT_TRIGGERS.values()]
        else:
            triggers = [EVENT_TRIGGERS[e] for e in n.events]
        for trigger in triggers:
            out[f"{SUBSCRIBE}.{trigger}.{service}"] = n.channel or ""
    return dict(sorted(out.items()))


def _service_config(n: Notification) -> dict[str, Any]:
    secret = f"${n.secret}"
    if n.type == "slack":
        return {"token": secret}
    if n.type == "webhook":
        return {"url": secret}
    assert n.github_app is not None  # the loader requires it on Argo CD
    return {"appID": n.github_app[0], "installationID": n.github_app[1], "privateKey": secret}


def _template(what: str, webhooks: list[str], status: str | None) -> dict[str, Any]:
    """One template with the part each service type reads: the message (Slack), the JSON body
    of every webhook service, the GitHub commit status."""
    message = (
        f"{{{{.app.metadata.name}}}}: {what} at revision"
        " {{.app.status.operationState.syncResult.revision}}:"
        " {{.app.status.operationState.message}}"
    )
    body = (
        '{"application": "{{.app.metadata.name}}", "event": "' + what + '",'
        ' "revision": "{{.app.status.operationState.syncResult.revision}}",'
        ' "health": "{{.app.status.health.status}}", "sync": "{{.app.status.sync.status}}"}'
    )
    out: dict[str, Any] = {"message": message}
    if webhooks:
        out["webhook"] = {w: {"method": "POST", "body": body} for w in sorted(webhooks)}
    if status is not None:
        out["github"] = {
            "repoURLPath": "{{.app.spec.source.repoURL}}",
            "revisionPath": "{{.app.status.operationState.syncResult.revision}}",
            "status": {
                "state": status,
                "label": "trainops/{{.app.metadata.name}}",
                "targetURL": "{{.context.argocdUrl}}/applications/{{.app.metadata.name}}",
            },
        }
    return out


def argocd_notifications_cm(repo: Repository) -> dict[str, Any] | None:
    """`argocd-notifications-cm`'s keys for every Argo CD cluster's notifications; None when
    no Argo CD cluster has any. Applied server-side, it leaves the ConfigMap's other keys (the
    catalog's triggers) to their owners."""
    clusters = [c for c in repo.delivered_by("argocd") if c.notifications]
    if not clusters:
        return None
    data: dict[str, str] = {}
    webhooks: list[str] = []
    github = False
    for cluster in clusters:
        for n in cluster.notifications:
            service = _service(cluster, n)
            data[f"service.{n.type}.{service}"] = yaml.safe_dump(_service_config(n), sort_keys=True)
            webhooks += [service] if n.type == "webhook" else []
            github = github or n.type == "github"
    templates = {
        "trainops-sync-failed": ("sync failed", "failure"),
        "trainops-job-failed": ("a training job failed (the Application is Degraded)", "failure"),
    }
    if github:  # a commit status for every sync: success too
        templates["trainops-sync-succeeded"] = ("synced", "success")
    for name, (what, state) in templates.items():
        template = _template(what, webhooks, state if github else None)
        data[f"template.{name}"] = yaml.safe_dump(template, sort_keys=True, width=1000)
    for trigger, (when, template_name) in TRIGGERS.items():
        if template_name in templates:
            rule = [{"when": when, "send": [template_name], "oncePer": ONCE_PER}]
            data[f"trigger.{trigger}"] = yaml.safe_dump(rule, sort_keys=True, width=1000)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "labels": {**PART_OF, "app.kubernetes.io/name": ARGOCD_NOTIFICATIONS_CM},
            "name": ARGOCD_NOTIFICATIONS_CM,
            "namespace": repo.settings.argocd_namespace,
        },
        "data": dict(sorted(data.items())),
    }
