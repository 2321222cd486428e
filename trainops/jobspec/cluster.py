"""A cluster profile (`clusters/<name>.yaml`): its schema, the checks the schema cannot say,
and the typed `ClusterProfile` built from it with the schema's defaults filled in."""

from __future__ import annotations

import difflib
from collections.abc import Collection
from pathlib import Path
from typing import Any

from trainops.core.errors import Addition
from trainops.core.yamlio import Document
from trainops.facts.nccl import RDMA_CAPABILITY
from trainops.facts.pod_fence import PodFence
from trainops.facts.schedulers import DEFAULT_SCHEDULER, VOLCANO_SCHEDULER
from trainops.facts.trainer import (
    MIN_TRAINER_VERSION,
    SUPPORTED_RELEASES,
    TRAINER,
    TRAINING_OPERATOR,
)
from trainops.jobspec import model, schemas
from trainops.jobspec.admission import PRIVILEGED, check_admission
from trainops.jobspec.policy import read_policy
from trainops.jobspec.problems import Collector, schema_problems


def _checks(d: dict[str, Any], stem: str, out: Collector) -> None:
    """What the schema cannot say (run on the profile as written, before defaults)."""
    if d["name"] != stem:
        out.add(["name"], f"`name` must equal the file name `{stem}`, got {d['name']!r}")
    _check_network(d, out)
    sched = d.get("scheduler", {})
    if sched.get("name") == "kueue" and "queue" not in sched:
        out.add(["scheduler"], "scheduler `kueue` needs `queue` (the LocalQueue jobs are sent to)")
    _check_gpu_names(d, out)
    operator = d.get("operator")
    if operator is not None:
        _check_operator(operator, out)
    where = d.get("monitoring", {}).get("dashboardNamespace")
    if where is not None and where not in d["namespaces"]:
        out.add(
            ["monitoring", "dashboardNamespace"],
            f"`monitoring.dashboardNamespace` must be one of `namespaces` (the delivery writes"
            f" nowhere else: {', '.join(d['namespaces'])}), got {where!r}",
        )
    delivery = d["delivery"]
    if "server" in delivery and "destinationName" in delivery:
        out.add(["delivery"], "give either `server` or `destinationName`, not both")
    check_admission(d, out)
    _check_notifications(d, out)


# What each notification field applies to.
_NOTIFICATION_KEYS = {
    "channel": ("slack",),
    "repository": ("github",),
    "githubApp": ("github",),
}


def _check_notifications(d: dict[str, Any], out: Collector) -> None:
    """Names unique; GitHub commit status on Argo CD needs the GitHub App it posts as."""
    seen: set[str] = set()
    for i, n in enumerate(d.get("notifications", [])):
        if n["name"] in seen:
            out.add(["notifications", i, "name"], f"notification `{n['name']}` is named twice")
        seen.add(n["name"])
        for key, types in _NOTIFICATION_KEYS.items():
            if key in n and n["type"] not in types:
                out.add(
                    ["notifications", i, key],
                    f"`{key}` is for {' and '.join(f'`{t}`' for t in types)} notifications, not"
                    f" `{n['type']}`; remove it",
                )
        if n["type"] == "slack" and "channel" not in n:
            out.add(["notifications", i], "a `slack` notification needs `channel`")
        if n["type"] == "github" and "events" in n:
            out.add(
                ["notifications", i, "events"],
                "`events` is for `slack` and `webhook`: a `github` notification posts the"
                " commit status of every sync (success or failure); remove it",
            )
        if n["type"] == "github" and d["delivery"]["tool"] == "argocd" and "githubApp" not in n:
            out.add(
                ["notifications", i],
                "a `github` notification on an Argo CD cluster needs `githubApp: {appID,"
                " installationID}` (Argo CD posts commit statuses as a GitHub App; its private"
                " key is the `secret` key of argocd-notifications-secret)",
            )


def _check_network(d: dict[str, Any], out: Collector) -> None:
    """`network.rdma` exactly with transport `rdma`, whose IPC_LOCK the cluster must admit."""
    net = d["network"]
    rdma = net.get("rdma")
    if net["transport"] == "rdma" and rdma is None:
        out.add(["network"], "transport `rdma` needs a `network.rdma` block (hca, gidIndex, ...)")
    if net["transport"] == "tcp" and rdma is not None:
        out.add(["network", "rdma"], "`network.rdma` is only for transport `rdma`: remove it")
    if net["transport"] == "rdma":
        _check_rdma_admitted(d, out)


def _check_gpu_names(d: dict[str, Any], out: Collector) -> None:
    """Each GPU product once; `capacity.nodes` names listed products only."""
    names = [g["name"] for g in d["gpus"]]
    for i, name in enumerate(names):
        if name in names[:i]:
            out.add(["gpus", i, "name"], f"GPU product `{name}` is listed twice")
        for j, toleration in enumerate(d["gpus"][i].get("tolerations", ())):
            _check_toleration(toleration, ["gpus", i, "tolerations", j], out)
    for product in d.get("capacity", {}).get("nodes", {}):
        if product not in names:
            hint = difflib.get_close_matches(product, names, n=1)
            out.add(
                ["capacity", "nodes", product],
                f"`capacity.nodes` names GPU product `{product}`, which `gpus` does not list"
                + (f"; did you mean `{hint[0]}`?" if hint else "")
                + f" (known: {', '.join(names)})",
            )


def _check_toleration(t: dict[str, Any], path: list[str | int], out: Collector) -> None:
    """What the API server refuses in a Toleration (k8s.io/kubernetes pkg/apis/core/validation
    `ValidateTolerations`), which every pod on the product would carry: no pod would start."""
    exists = t.get("operator") == "Exists"
    if exists and t.get("value"):
        out.add(
            [*path, "value"],
            "a toleration with `operator: Exists` matches any value: the API server refuses a"
            " `value` beside it; remove `value`, or use `operator: Equal`",
        )
    if not t.get("key") and not exists:
        out.add(
            path,
            "a toleration without `key` must be `operator: Exists` (every taint): the API"
            " server refuses it; name the taint's `key`",
        )
    if "tolerationSeconds" in t and t.get("effect") != "NoExecute":
        out.add(
            [*path, "tolerationSeconds"],
            "`tolerationSeconds` needs `effect: NoExecute` (the API server refuses it with"
            " another effect)",
        )


def _check_rdma_admitted(d: dict[str, Any], out: Collector) -> None:
    """An RDMA profile renders IPC_LOCK on every NCCL container; Pod Security admits it at the
    `privileged` level only, so the profile must say its namespaces are labelled so and what
    for, or `validate` would blame the user's CI for our own output (`pod-security`). Refused
    here with the exact addition (a level that refuses it: `admission.check_admission`)."""
    pod_security = d.get("podSecurity")
    if RDMA_CAPABILITY in (pod_security or {}).get("allowCapabilities", ()):
        return
    level = "" if (pod_security or {}).get("level") == PRIVILEGED else "level: privileged, "
    if pod_security is None:
        where: list[str | int] = ["network", "transport"]
        add = f"add `podSecurity: {{level: privileged, allowCapabilities: [{RDMA_CAPABILITY}]}}`"
    elif "allowCapabilities" in pod_security:
        where, add = ["podSecurity", "allowCapabilities"], f"add `{RDMA_CAPABILITY}` to it"
        add += "" if not level else " and set `level: privileged`"
    else:
        where = ["podSecurity"]
        add = f"add `{level}allowCapabilities: [{RDMA_CAPABILITY}]` under it"
    out.add(
        where,
        f"transport `rdma` renders the {RDMA_CAPABILITY} capability on NCCL containers (RDMA"
        " pins memory) and Pod Security admits it at the `privileged` level only (admission"
        " has no per-capability exception): the training namespaces must be labelled"
        f" `privileged`, and the profile say so and what for: {add}"
        " (docs/security.md#rdma-what-needs-ipc_lock)",
        _rdma_additions(d),
    )


def _rdma_additions(d: dict[str, Any]) -> tuple[Addition, ...]:
    """What `trainops upgrade` adds for RDMA: the capability, and the level that admits it."""
    name = str(d.get("name"))
    capability = Addition(name, ("podSecurity", "allowCapabilities"), (RDMA_CAPABILITY,))
    level = Addition(name, ("podSecurity", "level"), (PRIVILEGED,), replace=True)
    return (level, capability)


def _check_operator(operator: dict[str, Any], out: Collector) -> None:
    """Only a release trainops renders for (facts/trainer.py `SUPPORTED_RELEASES`)."""
    name, written = operator["name"], operator["version"]
    release = tuple(int(p) for p in written.split(".")[:2])
    supported = SUPPORTED_RELEASES[name]
    if release in supported:
        return
    listed = ", ".join(".".join(map(str, r)) for r in supported)
    if name == TRAINING_OPERATOR and release[0] != 1:
        advice = "for Kubeflow Trainer v2 write `name: trainer`"
    elif name == TRAINER and release < MIN_TRAINER_VERSION:
        advice = (
            "earlier v2 releases had podTemplateOverrides, trainops writes runtimePatches:"
            " upgrade the Trainer, or use `training-operator` on this cluster"
        )
    elif release < supported[0]:
        advice = (
            f"releases before {'.'.join(map(str, supported[0]))} do not serve fields trainops"
            " renders (e.g. PyTorchJob `spec.nprocPerNode`, which the API server would drop):"
            f' upgrade the operator, e.g. `kubectl apply --server-side -k "github.com/kubeflow/'
            f'trainer.git/manifests/overlays/standalone?ref=v1.9.4"`'
        )
    else:
        advice = (
            "trainops has not been checked against it (docs/cluster.md#operator-releases):"
            " write the newest supported release the cluster is compatible with, or upgrade"
            " trainops"
        )
    out.add(
        ["operator", "version"],
        f"`{name}` {written!r} is not a release trainops renders for (supported: {listed});"
        f" {advice}",
    )


def build_cluster(
    doc: Document, out: Collector, rule_slugs: Collection[str] = ()
) -> model.ClusterProfile | None:
    """The profile in `doc`, or None with the problems in `out` (`rule_slugs`: the rules a
    `policy:` may name; empty: not checked)."""
    doc, policy_problems = read_policy(doc, rule_slugs)
    for path, message in policy_problems:
        out.add(path, message)
    schema_problems(doc, schemas.CLUSTER, out)
    if out.problems:
        return None
    _checks(doc.data, Path(doc.file).stem, out)
    if out.problems:
        return None
    d = schemas.with_defaults(schemas.CLUSTER, doc.data)
    net, delivery, sched = d["network"], d["delivery"], d["scheduler"]
    rdma = net.get("rdma")
    pod_security = d["podSecurity"]
    return model.ClusterProfile(
        name=d["name"],
        file=doc.file,
        kubernetes_version=d["kubernetesVersion"],
        network=model.Network(
            transport=net["transport"],
            socket_interface=net["socketInterface"],
            allow_host_network=net["allowHostNetwork"],
            rdma=model.Rdma(
                hca=rdma["hca"],
                gid_index=rdma["gidIndex"],
                gdr_level=str(rdma["gdrLevel"]),
                device_resource=rdma["deviceResource"],
                device_count=rdma["deviceCount"],
                multus_network=rdma.get("multusNetwork"),
            )
            if rdma
            else None,
        ),
        gpus=tuple(
            model.GpuProduct(
                name=g["name"],
                resource=g["resource"],
                per_node=g["perNode"],
                node_selector=dict(g["nodeSelector"]),
                tolerations=tuple(g.get("tolerations", ())),
            )
            for g in d["gpus"]
        ),
        scheduler=model.Scheduler(
            kind=sched["name"], queue=sched.get("queue"), priority_class=sched.get("priorityClass")
        ),
        storage=model.Storage(
            default_class=d["storage"]["defaultClass"], classes=tuple(d["storage"]["classes"])
        ),
        namespaces=tuple(d["namespaces"]),
        delivery=model.Delivery(
            tool=delivery["tool"],
            destination_server=delivery["server"],
            destination_name=delivery.get("destinationName"),
            self_heal=delivery["selfHeal"],
            prune=delivery["prune"],
        ),
        operator=model.Operator(name=d["operator"]["name"], version=d["operator"]["version"]),
        crds=d.get("crds"),
        policy=dict(d["policy"]),
        context=d.get("context"),
        capacity=model.Capacity(
            nodes=dict(d.get("capacity", {}).get("nodes", {})),
            queue_gpus={q: v["gpus"] for q, v in d.get("capacity", {}).get("queues", {}).items()},
        ),
        pod_security=model.PodSecurityLevel(
            level=pod_security["level"],
            allow_capabilities=tuple(pod_security["allowCapabilities"]),
            allow_host_paths=tuple(pod_security["allowHostPaths"]),
        ),
        monitoring_namespace=d["monitoringNamespace"],
        provided_by_platform=model.ProvidedByPlatform(
            queues=tuple(d["providedByPlatform"]["queues"]),
            networks=tuple(d["providedByPlatform"]["networks"]),
            priority_classes=tuple(d["providedByPlatform"]["priorityClasses"]),
        ),
        job_access=_job_access(d),
        installed=_installed(d["installed"]),
        monitoring=_monitoring(d),
        notifications=tuple(_notification(n) for n in d["notifications"]),
    )


def _notification(n: dict[str, Any]) -> model.Notification:
    app = n.get("githubApp")
    return model.Notification(
        name=n["name"],
        type=n["type"],
        secret=n["secret"],
        channel=n.get("channel"),
        events=tuple(n["events"]) if n["type"] != "github" else (),
        repository=n.get("repository"),
        github_app=(app["appID"], app["installationID"]) if app else None,
    )


def _job_access(d: dict[str, Any]) -> PodFence:
    """The profile's `jobAccess`, plus what the profile renders itself: its scheduler
    (Volcano's name; kube-scheduler's default), priority class and GPU tolerations."""
    access, sched = d["jobAccess"], d["scheduler"]
    scheduler = VOLCANO_SCHEDULER if sched["name"] == "volcano" else DEFAULT_SCHEDULER
    accounts = access["serviceAccounts"]
    return PodFence(
        service_accounts=frozenset(a["name"] for a in accounts),
        token_accounts=frozenset(a["name"] for a in accounts if a["automountToken"]),
        priority_classes=frozenset(
            [
                *access["priorityClasses"],
                *([sched["priorityClass"]] if sched.get("priorityClass") else []),
            ]
        ),
        schedulers=frozenset([scheduler, *access["schedulerNames"]]),
        tolerations=(
            *access["tolerations"],
            *(t for g in d["gpus"] for t in g.get("tolerations", ())),
        ),
        secret_volumes=frozenset(access["secretVolumes"]),
        shared_claims=tuple((c["name"], c["writable"]) for c in access["sharedClaims"]),
        claim_creators=tuple(
            (c["name"], c["createdBy"]) for c in access["sharedClaims"] if "createdBy" in c
        ),
        pull_secrets=frozenset(access["imagePullSecrets"]),
    )


def _installed(installed: dict[str, Any]) -> model.Installed:
    kueue = installed["kueue"]
    declared = kueue.get("integrations")
    return model.Installed(
        kueue_version=kueue["version"],
        kueue_integrations=frozenset(declared) if declared is not None else None,
        mpi_jobs=installed["mpiJobs"],
    )


def _monitoring(d: dict[str, Any]) -> model.Monitoring:
    m = d["monitoring"]
    return model.Monitoring(
        dashboard_namespace=m.get("dashboardNamespace", d["namespaces"][0]),
        alerts=m["alerts"],
        prometheus_labels=dict(m["prometheusLabels"]),
        rule_labels=dict(m["ruleLabels"]),
        stalled_minutes=m["stalledMinutes"],
        restarts_per_hour=m["restartsPerHour"],
        gpu_utilization_below=m["gpuUtilizationBelow"],
        dashboard=m["dashboard"],
        grafana_instance_selector=dict(m["grafanaInstanceSelector"]),
        prometheus_url=m.get("prometheusUrl"),
        nccl_tests_image=m.get("ncclTestsImage"),
        min_bus_bandwidth_gbps=m.get("minBusBandwidthGBps"),
    )
