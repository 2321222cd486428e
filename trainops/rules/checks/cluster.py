"""Rules that need the cluster profile: GPU products and namespaces it has."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_list
from trainops.facts.platform import KUEUE_GROUP, MULTUS_GROUP
from trainops.facts.schedulers import VOLCANO_SCHEDULING_GROUP
from trainops.jobspec.model import ClusterProfile
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

# Node label GPU feature discovery sets; the selector jobs use to pick a GPU model.
# https://github.com/NVIDIA/k8s-device-plugin#catalog-of-labels
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# API groups of GitOps machinery, which lives outside the training namespaces by design.
GITOPS_GROUPS = ("argoproj.io", "toolkit.fluxcd.io")


def _gpu_product(obj: Object, ctx: Context) -> Iterator[Violation]:
    if ctx.cluster is None:
        return
    known: dict[str, set[str]] = {}
    for gpu in ctx.cluster.gpus:
        for key, value in gpu.node_selector.items():
            known.setdefault(key, set()).add(value)
    known.setdefault(GPU_PRODUCT_LABEL, set())
    for pod in obj.pods:
        selector = as_dict(pod.spec.get("nodeSelector"))
        for key, value in selector.items():
            if key in known and str(value) not in known[key]:
                yield Violation(
                    f"nodeSelector {key}={value} matches no GPU product of cluster"
                    f" `{ctx.cluster.name}` ({', '.join(sorted(known[key])) or 'none'}):"
                    " the pods stay Pending",
                    (*pod.spec_path, "nodeSelector", str(key)),
                )
        affinity = as_dict(as_dict(pod.spec.get("affinity")).get("nodeAffinity"))
        required = as_dict(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))
        for t, term in enumerate(as_list(required.get("nodeSelectorTerms"))):
            for e, raw in enumerate(as_list(as_dict(term).get("matchExpressions"))):
                expr = as_dict(raw)
                key = str(expr.get("key"))
                if key not in known or expr.get("operator") != "In":
                    continue
                values = [str(v) for v in as_list(expr.get("values"))]
                if values and not set(values) & known[key]:
                    yield Violation(
                        f"node affinity {key} in [{', '.join(values)}] matches no GPU product"
                        " of cluster"
                        f" `{ctx.cluster.name}`",
                        (
                            *pod.spec_path, "affinity", "nodeAffinity",
                            "requiredDuringSchedulingIgnoredDuringExecution",
                            "nodeSelectorTerms", t, "matchExpressions", e,
                        ),
                    )  # fmt: skip


def _namespace(obj: Object, ctx: Context) -> Iterator[Violation]:
    if ctx.cluster is None or obj.namespace is None:
        return
    if any(obj.group.endswith(g) for g in GITOPS_GROUPS):
        return
    if obj.namespace not in ctx.cluster.namespaces:
        yield Violation(
            f"namespace `{obj.namespace}` is not one cluster `{ctx.cluster.name}` allows"
            f" ({', '.join(ctx.cluster.namespaces)})",
            ("metadata", "namespace"),
        )


# The platform kinds that exist only for one scheduler or network (facts/platform.py): on a
# cluster whose profile uses another, they are left behind from before a switch.
_VOLCANO = {(VOLCANO_SCHEDULING_GROUP, "Queue")}
_KUEUE = {
    (KUEUE_GROUP, "ResourceFlavor"),
    (KUEUE_GROUP, "ClusterQueue"),
    (KUEUE_GROUP, "LocalQueue"),
}
_MULTUS = {(MULTUS_GROUP, "NetworkAttachmentDefinition")}


def _unused_by(obj: Object, cluster: ClusterProfile) -> str | None:
    """What the profile uses instead, when `obj` belongs to a scheduler or network it does not."""
    kind = (obj.group, obj.kind)
    scheduler = cluster.scheduler.kind
    if kind in _VOLCANO and scheduler != "volcano":
        return f"the profile schedules with `{scheduler}`, not Volcano (scheduler.name)"
    if kind in _KUEUE and scheduler != "kueue":
        return f"the profile schedules with `{scheduler}`, not Kueue (scheduler.name)"
    rdma = cluster.network.rdma
    if kind in _MULTUS and (rdma is None or not rdma.multus_network):
        return "the profile attaches no Multus network (network.rdma.multusNetwork)"
    return None


def _platform_unused(obj: Object, ctx: Context) -> Iterator[Violation]:
    if ctx.cluster is None:
        return
    reason = _unused_by(obj, ctx.cluster)
    if reason is not None:
        yield Violation(
            f"{obj.kind} `{obj.name}` is delivered to cluster `{ctx.cluster.name}` but {reason}:"
            f" it and the delivery account's rights to it stay on the cluster unused",
            ("kind",),
        )


RULES = (
    Rule(
        slug="gpu-product-unknown",
        code="TO901",
        severity=Severity.ERROR,
        summary="A GPU product selector the cluster does not have.",
        why="No node carries the label, so every pod stays Pending forever.",
        fix="Select one of the cluster profile's GPU products (or drop the selector and let"
        " the overlay set it).",
        example="nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}  # cluster has A100",
        check=_gpu_product,
        needs_cluster=True,
    ),
    Rule(
        slug="namespace-not-allowed",
        code="TO902",
        severity=Severity.ERROR,
        summary="A namespace outside the cluster's allow-list.",
        why="The GitOps project confines training to these namespaces: the sync fails, or the"
        " job lands where quotas and RBAC are not set up for it.",
        fix="Use one of the cluster profile's namespaces.",
        example="metadata: {namespace: default}",
        check=_namespace,
        needs_cluster=True,
    ),
    Rule(
        slug="platform-unused",
        code="TO915",
        # A warning: a switch may keep both for a while, on purpose; it is never silent.
        severity=Severity.WARNING,
        summary="A platform object of a scheduler or network the cluster profile does not use.",
        why="Left behind by a switch (Volcano to Kueue, RDMA to TCP): the GitOps tool keeps"
        " delivering it, and the delivery account keeps the rights to its kind; where that"
        " scheduler or network is uninstalled, the object's kind is unknown and the sync fails.",
        fix="Delete it from clusters/<cluster>/manifests/ (the rendered overlay, the AppProject"
        " and the delivery Roles drop it), or deliver it from the platform's own repository.",
        example="kind: Queue  # scheduling.volcano.sh, on a cluster with `scheduler.name: kueue`",
        check=_platform_unused,
        needs_cluster=True,
    ),
)
