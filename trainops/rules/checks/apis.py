"""API versions the operators no longer serve, or the cluster's Kueue does not (yet)."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.facts.kubeflow import REMOVED_APIS
from trainops.facts.schedulers import (
    KUEUE_GROUP,
    KUEUE_V1BETA1_DEPRECATED_SINCE,
    KUEUE_V1BETA2_SINCE,
    kueue_api_version,
)
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation


def _removed(obj: Object, ctx: Context) -> Iterator[Violation]:
    replacement = REMOVED_APIS.get((obj.kind, obj.manifest.api_version))
    if replacement is not None:
        yield Violation(
            f"{obj.kind} {obj.manifest.api_version} is no longer served by any operator"
            f" release: the API server rejects it (no such resource); use {replacement}."
            " The other rules still checked what they could read of it",
            ("apiVersion",),
        )


def _kueue_version(obj: Object, ctx: Context) -> Iterator[Violation]:
    group, _, version = obj.manifest.api_version.partition("/")
    if group != KUEUE_GROUP or ctx.cluster is None:
        return
    installed = ctx.cluster.installed
    wanted = kueue_api_version(installed.kueue_minor)
    if obj.manifest.api_version == wanted:
        return
    release = f"Kueue {installed.kueue_version} (`installed.kueue.version`)"
    if version == "v1beta2":
        since = ".".join(map(str, KUEUE_V1BETA2_SINCE))
        yield Violation(
            f"{obj.kind} {obj.manifest.api_version} is not served by {release}: v1beta2"
            f" arrived in {since}; write {wanted}, or upgrade Kueue",
            ("apiVersion",),
        )
    elif version == "v1beta1" and installed.kueue_minor >= KUEUE_V1BETA1_DEPRECATED_SINCE:
        yield Violation(
            f"{obj.kind} {obj.manifest.api_version} is deprecated in {release} (served, with a"
            f" deprecation warning, until its removal): write {wanted}",
            ("apiVersion",),
            severity=Severity.WARNING,
        )


RULES = (
    Rule(
        slug="api-removed",
        code="TO405",
        severity=Severity.ERROR,
        summary="A Kubeflow job in an API version the operators removed (MPIJob v1alpha1/"
        "v1alpha2, TFJob v1alpha*/v1beta*, PyTorchJob v1alpha2/v1beta*).",
        why="No operator release serves these versions any more: `kubectl apply` fails with no"
        " matching resource, so the job never exists. Old tutorials still show them.",
        fix="Move to the served version the message names (MPIJob kubeflow.org/v2beta1, the"
        " other kinds kubeflow.org/v1); the replica specs mostly carry over.",
        example="apiVersion: kubeflow.org/v1alpha2\nkind: MPIJob",
        check=_removed,
        references=("https://github.com/kubeflow/mpi-operator",),
    ),
    Rule(
        slug="kueue-api-version",
        code="TO470",
        severity=Severity.ERROR,
        summary="A Kueue object (LocalQueue, ClusterQueue, ResourceFlavor, ...) in an API"
        " version the cluster's Kueue does not serve (v1beta2 before v0.15); warning: in"
        " v1beta1, deprecated since v0.16.",
        why="The API server refuses a version the installed Kueue's CRDs do not serve, so the"
        " queue never exists and every job sent to it waits. v1beta1 is still served by"
        " v0.16 to v0.19 but deprecated (`deprecated: true` in the CRDs), with removal ahead.",
        fix="Write the version the profile's `installed.kueue.version` serves"
        " (`kueue.x-k8s.io/v1beta2` from v0.15), or state the release the cluster runs.",
        example='# installed: {kueue: {version: "0.19"}}\napiVersion: kueue.x-k8s.io/v1beta1\n'
        "kind: LocalQueue",
        check=_kueue_version,
        needs_cluster=True,
        references=(
            "https://kueue.sigs.k8s.io/docs/reference/kueue.v1beta2/",
            "https://github.com/kubernetes-sigs/kueue/blob/v0.19.2/config/components/crd/"
            "bases/kueue.x-k8s.io_localqueues.yaml",
        ),
    ),
)
