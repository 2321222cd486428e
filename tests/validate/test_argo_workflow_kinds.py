"""Argo Workflows' kinds (Workflow, WorkflowTemplate, ClusterWorkflowTemplate, CronWorkflow)
are checked as Argo's minimal CRDs check them (v4.1.2): the top level strictly, `spec` as an
object. A training pipeline that commits a WorkflowTemplate beside its jobs got a `no schema`
error for a valid object; a misspelt top-level key or a missing spec is still found."""

from __future__ import annotations

import copy

import pytest

from trainops.core.manifest import Manifest
from trainops.validate.pipeline import validate_manifests
from trainops.validate.schemas import SchemaStore

STEPS = {"entrypoint": "main", "templates": [{"name": "main", "container": {"image": "x:1"}}]}
SPECS = {
    "Workflow": STEPS,
    "WorkflowTemplate": STEPS,
    "ClusterWorkflowTemplate": STEPS,
    "CronWorkflow": {"schedules": ["0 3 * * *"], "workflowSpec": STEPS},
}


def _messages(data: dict[str, object], store: SchemaStore) -> list[str]:
    found = validate_manifests([Manifest(copy.deepcopy(data), "m.yaml")], None, store, checkers=[])
    return [f.message for f in found]


def _object(kind: str) -> dict[str, object]:
    meta = {"generateName": "train-"} if kind == "Workflow" else {"name": "train"}
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": kind, "metadata": meta,
            "spec": SPECS[kind]}  # fmt: skip


@pytest.mark.parametrize("kind", sorted(SPECS))
def test_argo_workflow_kinds_validate(kind: str, ours: SchemaStore) -> None:
    assert _messages(_object(kind), ours) == []


def test_the_top_level_is_strict(ours: SchemaStore) -> None:
    data = _object("WorkflowTemplate")
    data["specs"] = data.pop("spec")
    messages = _messages(data, ours)
    assert "specs: unknown field (not in the schema)" in messages, messages
    assert "(object): required field `spec` is missing" in messages, messages
