"""API versions the operators no longer serve."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.facts.kubeflow import REMOVED_APIS
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation
from trainops.rules.objects import Object


def _removed(obj: Object, ctx: Context) -> Iterator[Violation]:
    replacement = REMOVED_APIS.get((obj.kind, obj.manifest.api_version))
    if replacement is not None:
        yield Violation(
            f"{obj.kind} {obj.manifest.api_version} is no longer served by any operator"
            f" release: the API server rejects it (no such resource); use {replacement}."
            " The other rules still checked what they could read of it",
            ("apiVersion",),
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
)
