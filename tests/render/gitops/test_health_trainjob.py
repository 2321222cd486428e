"""TrainJob health (Trainer v2): the shipped Argo CD Lua (real Lua 5.1) and Flux CEL
(cel-python), on status objects that validate against the upstream TrainJob CRD.

A TrainJob has the conditions Suspended, Complete and Failed, and no Running: training shows
in `status.jobsStatus` (JobSet's counts of child Jobs). Expected states are docs/gitops.md's:
Failed is Degraded / Failed; Complete is Healthy / Current; Suspended (Kueue) is Suspended /
Current; child Jobs whose pods are all ready are Progressing / Current; child Jobs with
Pending pods (`active` but not `ready`: a gang waiting for GPUs) and nothing yet are
Progressing / InProgress, like a v1 job that is Created but not Running (issue 33 item 5).
"""

from __future__ import annotations

import itertools
from typing import Any

import jsonschema
import pytest
import yaml

from tests.render.gitops.crdschema import _strict
from tests.render.gitops.test_health_cel import CURRENT, FAILED, IN_PROGRESS, flux_status
from tests.render.gitops.test_health_cel import shipped_exprs as cel_exprs
from tests.render.gitops.test_health_lua import run_health
from tests.tools import require_upstream
from trainops.facts.trainer import trainjob_running
from trainops.render.gitops.health import TRAINJOB_HEALTH_SCRIPT, lua_source


def trainjob(
    conditions: list[tuple[str, str]], active: int | None = None, ready: int | None = None
) -> dict[str, Any]:
    """A TrainJob with `conditions`, and one `node` child Job entry when `active` is given
    (`ready`: child Jobs whose pods are all ready; default: all `active` ones)."""
    status: dict[str, Any] = {
        "conditions": [
            {
                "type": t,
                "status": s,
                "reason": f"TrainJob{t}",
                "message": f"TrainJob llama {t.lower()}",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
            for t, s in conditions
        ]
    }
    if active is not None:
        status["jobsStatus"] = [
            {"name": "node", "active": active, "ready": active if ready is None else ready,
             "succeeded": 0, "failed": 0, "suspended": 0}
        ]  # fmt: skip
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "llama", "namespace": "ml", "generation": 1},
        "spec": {"runtimeRef": {"name": "trainops-torch-h200-141gb"}},
        "status": status,
    }


# (conditions, active child Jobs (all ready), Argo CD health, Flux status)
STATES = [
    pytest.param([], None, "Progressing", IN_PROGRESS, id="nothing-yet"),
    pytest.param([], 1, "Progressing", CURRENT, id="running"),
    pytest.param([("Suspended", "True")], 0, "Suspended", CURRENT, id="suspended-by-kueue"),
    pytest.param([("Suspended", "False")], 4, "Progressing", CURRENT, id="resumed"),
    pytest.param([("Complete", "True")], 0, "Healthy", CURRENT, id="complete"),
    pytest.param([("Failed", "True")], 0, "Degraded", FAILED, id="failed"),
    pytest.param([("Failed", "True")], 2, "Degraded", FAILED, id="failed-with-pods-left"),
    pytest.param([("Complete", "False")], 0, "Progressing", IN_PROGRESS, id="not-complete"),
]


def test_pending_pods_are_not_running() -> None:
    """JobSet counts a child Job `active` from its first Pending pod: a TrainJob whose gang
    waits (Volcano) or whose pods wait for GPUs is in progress, not current; once its pods are
    ready it is (failed on the expressions that read `active`)."""
    (entry,) = cel_exprs()["TrainJob"]
    script = lua_source(TRAINJOB_HEALTH_SCRIPT)
    waiting = trainjob([("Suspended", "False")], active=1, ready=0)
    assert flux_status(entry, waiting) == IN_PROGRESS
    health = run_health(script, waiting)
    assert (health["status"], "waiting for pods" in health["message"]) == ("Progressing", True)
    running = trainjob([("Suspended", "False")], active=1, ready=1)
    assert flux_status(entry, running) == CURRENT
    assert "is running" in run_health(script, running)["message"]
    # An initializer finished (succeeded, no longer ready or active) and the node job waits.
    initialised = trainjob([], active=1, ready=0)
    done = {"name": "dataset-initializer", "active": 0, "ready": 0, "succeeded": 1,
            "failed": 0, "suspended": 0}  # fmt: skip
    initialised["status"]["jobsStatus"].insert(0, done)
    assert flux_status(entry, initialised) == IN_PROGRESS
    initialised["status"]["jobsStatus"][1]["ready"] = 1
    assert flux_status(entry, initialised) == CURRENT


@pytest.mark.parametrize(("conditions", "active", "argocd", "flux"), STATES)
def test_trainjob_health(
    conditions: list[tuple[str, str]], active: int | None, argocd: str, flux: str
) -> None:
    obj = trainjob(conditions, active)
    assert run_health(lua_source(TRAINJOB_HEALTH_SCRIPT), obj)["status"] == argocd
    (entry,) = cel_exprs()["TrainJob"]
    assert entry["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
    assert flux_status(entry, obj) == flux


def test_the_states_are_real_trainjob_status_objects() -> None:
    path = require_upstream() / "crds" / "trainer.kubeflow.org" / "trainjobs.yaml"
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    schema = _strict(version["schema"]["openAPIV3Schema"]["properties"]["status"])
    validator = jsonschema.Draft4Validator(schema)
    for param in STATES:
        status = trainjob(param.values[0], param.values[1])["status"]
        assert [e.message for e in validator.iter_errors(status)] == [], param.id


def test_argo_cd_and_flux_agree_on_failed_and_done() -> None:
    """On every combination of the three condition types, True / False / absent."""
    (entry,) = cel_exprs()["TrainJob"]
    types = ("Suspended", "Complete", "Failed")
    for statuses in itertools.product(("True", "False", None), repeat=len(types)):
        conditions = [(t, s) for t, s in zip(types, statuses, strict=True) if s is not None]
        obj = trainjob(conditions, 1)
        health = run_health(lua_source(TRAINJOB_HEALTH_SCRIPT), obj)["status"]
        assert (health == "Degraded") == (flux_status(entry, obj) == FAILED), conditions
        assert health != "Missing"


def test_status_and_both_tools_agree_on_running() -> None:
    """`trainops status` (`trainjob_running`), the Flux CEL and the Argo CD Lua read every
    (active, ready) pair of two child Jobs alike."""
    (entry,) = cel_exprs()["TrainJob"]
    script = lua_source(TRAINJOB_HEALTH_SCRIPT)
    for a1, r1, a2, r2 in itertools.product(range(3), repeat=4):
        obj = trainjob([], a1, r1)
        obj["status"]["jobsStatus"].append(
            {
                "name": "launcher",
                "active": a2,
                "ready": r2,
                "succeeded": 0,
                "failed": 0,
                "suspended": 0,
            }
        )
        running = trainjob_running(obj["status"])
        assert running == (flux_status(entry, obj) == CURRENT), (a1, r1, a2, r2)
        assert running == ("is running" in run_health(script, obj)["message"]), (a1, r1, a2, r2)
