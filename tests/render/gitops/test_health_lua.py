"""The Argo CD health Lua, run for real on Lua 5.1 (what Argo CD's gopher-lua implements)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import yaml

from tests.render.gitops.fixtures import SETTINGS
from tests.tools import require_module
from trainops.facts.kubeflow import KUBEFLOW_GROUP, TRAINING_JOB_KINDS
from trainops.render.gitops.health import (
    JOB_HEALTH_SCRIPT,
    TRAINJOB_HEALTH_SCRIPT,
    argocd_cm_patch,
    health_key,
    lua_source,
)

# A real Lua 5.1 runtime; required under CI, like every real tool.
lupa = require_module("lupa.lua51")


def condition(
    kind: str, status: str = "True", reason: str = "", message: str = ""
) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def job(kind: str, conditions: list[dict[str, Any]] | None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": "llama", "namespace": "ml"},
        "spec": {"runPolicy": {"cleanPodPolicy": "All"}},
    }
    if conditions is not None:
        obj["status"] = {"conditions": conditions, "replicaStatuses": {"Worker": {"active": 2}}}
    return obj


def run_health(script: str, obj: dict[str, Any]) -> dict[str, Any]:
    """Evaluate `script` the way Argo CD does: `obj` global in, table {status, message} out."""
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    runtime.globals().obj = runtime.table_from(obj, recursive=True)
    result = runtime.execute(script)
    return dict(result.items())


# Real condition sequences as the training operator leaves them: earlier
# conditions stay, flipped to False, when the job moves on.
CASES = [
    pytest.param(None, "Progressing", "Waiting", id="no-status"),
    pytest.param([], "Progressing", "Waiting", id="empty-conditions"),
    pytest.param(
        [condition("Created", reason="PyTorchJobCreated", message="PyTorchJob llama is created.")],
        "Progressing",
        "PyTorchJob llama is created.",
        id="created",
    ),
    pytest.param(
        [condition("Created"), condition("Running", message="Job llama is running.")],
        "Progressing",
        "Job llama is running.",
        id="running",
    ),
    pytest.param(
        [
            condition("Created"),
            condition("Running", "False"),
            condition("Restarting", message="Worker replica 1 restarting (exit 137)."),
        ],
        "Progressing",
        "Worker replica 1 restarting (exit 137).",
        id="restarting",
    ),
    pytest.param(
        [condition("Created"), condition("Suspended", reason="JobSuspended")],
        "Suspended",
        "JobSuspended",
        id="suspended-by-kueue",
    ),
    pytest.param(
        [condition("Created"), condition("Suspended", "False"), condition("Running")],
        "Progressing",
        "Job is running",
        id="resumed",
    ),
    pytest.param(
        [
            condition("Created"),
            condition("Running", "False"),
            condition("Succeeded", message="Job llama successfully completed."),
        ],
        "Healthy",
        "Job llama successfully completed.",
        id="succeeded",
    ),
    pytest.param(
        [
            condition("Created"),
            condition("Running", "False"),
            condition("Restarting", "False"),
            condition(
                "Failed", reason="BackoffLimitExceeded", message="Job has reached backoff limit"
            ),
        ],
        "Degraded",
        "Job has reached backoff limit",
        id="failed",
    ),
    pytest.param(
        # Failed wins over a stale Running=True: terminal states come first.
        [condition("Created"), condition("Running"), condition("Failed")],
        "Degraded",
        "Job failed",
        id="failed-beats-running",
    ),
]


@pytest.mark.parametrize("kind", [j.kind for j in TRAINING_JOB_KINDS])
@pytest.mark.parametrize(("conditions", "status", "message"), CASES)
def test_health_maps_conditions(
    kind: str, conditions: list[dict[str, Any]] | None, status: str, message: str
) -> None:
    result = run_health(lua_source(), job(kind, conditions))
    assert result["status"] == status
    assert message in result["message"]


# docs/gitops.md, "Health checks": the first True condition in this order decides; any other
# state (Restarting, Running, Created, none, no status) is Progressing.
PRECEDENCE = (("Failed", "Degraded"), ("Succeeded", "Healthy"), ("Suspended", "Suspended"))
CONDITION_TYPES = ("Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed")


def documented_health(conditions: list[dict[str, Any]] | None) -> str:
    true = {c["type"] for c in conditions or [] if c["status"] == "True"}
    return next((health for ctype, health in PRECEDENCE if ctype in true), "Progressing")


def test_every_condition_combination_gets_a_status_argo_cd_knows() -> None:
    """The shipped script, run on every combination of the operator's condition types (each
    True or absent, and each True or False), returns a health status Argo CD accepts with a
    message, and the one the documented precedence gives."""
    # Argo CD rejects any other health status string from a Lua check.
    known = {"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}
    combinations = [
        *itertools.product(("True", None), repeat=len(CONDITION_TYPES)),
        *itertools.product(("True", "False"), repeat=len(CONDITION_TYPES)),
    ]
    seen = set()
    for statuses in combinations:
        conditions = [
            condition(ctype, status)
            for ctype, status in zip(CONDITION_TYPES, statuses, strict=True)
            if status is not None
        ]
        result = run_health(lua_source(), job("PyTorchJob", conditions))
        assert result["status"] in known, (statuses, result)
        assert isinstance(result["message"], str) and result["message"], (statuses, result)
        assert result["status"] == documented_health(conditions), (statuses, result)
        seen.add(result["status"])
    assert seen == {"Degraded", "Healthy", "Suspended", "Progressing"}


def test_configmap_embeds_the_same_script_for_every_kind() -> None:
    cm = argocd_cm_patch(SETTINGS)
    assert cm["metadata"] == {
        "name": "argocd-cm",
        "namespace": "argocd",
        "labels": {"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"},
    }
    trainjob = "resource.customizations.health.trainer.kubeflow.org_TrainJob"
    assert sorted(cm["data"]) == sorted(
        [*(health_key(KUBEFLOW_GROUP, k) for k in ("PyTorchJob", "TFJob", "MPIJob")), trainjob]
    )
    assert "resource.customizations.health.kubeflow.org_PyTorchJob" in cm["data"]
    # What Argo CD reads back out of the YAML is the script that the tests above ran.
    data = yaml.safe_load(yaml.safe_dump(cm))["data"]
    assert data.pop(trainjob) == lua_source(TRAINJOB_HEALTH_SCRIPT)
    for script in data.values():
        assert script == lua_source()
        assert run_health(script, job("TFJob", [condition("Succeeded")]))["status"] == "Healthy"


@pytest.mark.parametrize("name", [JOB_HEALTH_SCRIPT, TRAINJOB_HEALTH_SCRIPT])
def test_shared_helpers_are_expanded_once(name: str) -> None:
    """Argo CD runs each script as one chunk: the shared helpers are inlined, once each."""
    script = lua_source(name)
    assert "--#include" not in script
    assert "--#body" not in script
    for helper in ("local function true_condition(", "local function describe("):
        assert script.count(helper) == 1, (name, helper)
