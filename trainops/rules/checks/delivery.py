"""The `delivery-fence` rule: Argo CD and Flux objects that would let a merged change reach
beyond its namespaces (docs/security.md).

trainops renders fenced objects; this checks any manifests (`validate --manifests` on a
hand-written AppProject too): a wildcard or system namespace, a wildcard server or
source repository, the open `default` project, cluster-scoped or wildcard kinds, and a
Flux Kustomization that applies as the controller itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_list
from trainops.facts.platform import PLATFORM_KINDS
from trainops.facts.trainer import CLUSTER_TRAINING_RUNTIME, TRAINER_GROUP
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

ARGOCD_GROUP = "argoproj.io"
FLUX_KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
# Namespaces a training delivery must never write to; the cluster profile schema's
# `namespaces` refuses the same (tests/rules/test_delivery_fence.py checks they agree).
SYSTEM_NAMESPACE = re.compile(r"^(kube-.*|.*-system|default|argocd|kubeflow)$")
_GLOB = re.compile(r"[*?\[!]")


# The Trainer v2 runtimes trainops renders for a v2 cluster (a cluster-scoped kind it owns).
TRAINER_RUNTIME = (TRAINER_GROUP, CLUSTER_TRAINING_RUNTIME)


def _glob(value: object) -> bool:
    return isinstance(value, str) and bool(_GLOB.search(value))


def _project(obj: Object) -> Iterator[Violation]:
    """An AppProject that fences: not `default`, named repositories and destinations, no
    cluster-scoped kinds beyond the platform's, no wildcard kinds."""
    spec = obj.spec
    if obj.name == "default":
        yield Violation(
            "the `default` AppProject lets every Argo CD user deploy anything", ("metadata", "name")
        )
    for i, repo in enumerate(as_list(spec.get("sourceRepos"))):
        if _glob(repo):
            yield Violation(
                f"source repository `{repo}` is a wildcard: name this repository",
                ("spec", "sourceRepos", i),
            )
    for i, raw in enumerate(as_list(spec.get("destinations"))):
        yield from _destination(as_dict(raw), ("spec", "destinations", i))
    yield from _whitelists(spec)


def _destination(dest: dict[str, Any], at: tuple[str | int, ...]) -> Iterator[Violation]:
    for key in ("server", "name"):
        if _glob(dest.get(key)):
            yield Violation(
                f"destination {key} `{dest[key]}` is a wildcard: name one cluster", (*at, key)
            )
    ns = dest.get("namespace")
    if ns is None or _glob(ns):
        yield Violation(
            f"destination namespace `{ns}` is a wildcard: list the training namespaces",
            (*at, "namespace"),
        )
    elif isinstance(ns, str) and SYSTEM_NAMESPACE.match(ns):
        yield Violation(f"destination namespace `{ns}` is a system namespace", (*at, "namespace"))


def _whitelists(spec: dict[str, Any]) -> Iterator[Violation]:
    for i, raw in enumerate(as_list(spec.get("clusterResourceWhitelist"))):
        entry = as_dict(raw)
        group_kind = (str(entry.get("group")), str(entry.get("kind")))
        if PLATFORM_KINDS.get(group_kind) is False or group_kind == TRAINER_RUNTIME:
            continue  # a platform manifest's kind (a queue, a flavor, a priority class)
        yield Violation(
            f"cluster-scoped kind `{entry.get('group')}/{entry.get('kind')}` allowed: training"
            " delivery needs none but the platform manifests' queues, flavors and priority"
            " classes (namespaces, CRDs and RBAC are the platform's)",
            ("spec", "clusterResourceWhitelist", i),
        )
    for i, raw in enumerate(as_list(spec.get("namespaceResourceWhitelist"))):
        entry = as_dict(raw)
        if _glob(entry.get("kind")) or _glob(entry.get("group")):
            yield Violation(
                "a wildcard kind is allowed: list the kinds delivered",
                ("spec", "namespaceResourceWhitelist", i),
            )


def _check(obj: Object, ctx: Context) -> Iterator[Violation]:
    if obj.group == ARGOCD_GROUP and obj.kind == "AppProject":
        yield from _project(obj)
    elif obj.group == ARGOCD_GROUP and obj.kind in ("Application", "ApplicationSet"):
        spec = (
            obj.spec
            if obj.kind == "Application"
            else as_dict(as_dict(obj.spec.get("template")).get("spec"))
        )
        at = (
            ("spec", "project")
            if obj.kind == "Application"
            else ("spec", "template", "spec", "project")
        )
        if spec.get("project") == "default":
            yield Violation("in the `default` AppProject nothing fences what it deploys", at)
    elif (
        obj.group == FLUX_KUSTOMIZE_GROUP
        and obj.kind == "Kustomization"
        and not obj.spec.get("serviceAccountName")
    ):
        yield Violation(
            "no `serviceAccountName`: kustomize-controller applies as itself (normally"
            " cluster-admin) whatever the path holds",
            ("spec",),
        )


RULES = (
    Rule(
        slug="delivery-fence",
        code="TO604",
        severity=Severity.ERROR,
        summary="An AppProject with wildcard or system-namespace destinations, wildcard"
        " sources or kinds, cluster-scoped kinds, or named `default`; an Application in the"
        " `default` project; a Flux Kustomization without `serviceAccountName`.",
        why="The delivery tools run with far more rights than a job author: a fence left"
        " open lets one merged pull request write RBAC, namespaces or pods in kube-system.",
        fix="Name one repository, one server, the training namespaces and the kinds"
        " delivered; give the Kustomization a service account limited to them"
        " (`trainops render` writes both).",
        example='spec:\n  destinations: [{server: "*", namespace: "*"}]',
        check=_check,
        references=(
            "https://argo-cd.readthedocs.io/en/stable/user-guide/projects/",
            "https://fluxcd.io/flux/installation/configuration/multitenancy/",
        ),
    ),
)
