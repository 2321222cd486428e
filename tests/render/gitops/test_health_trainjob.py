"""TrainJob health (Trainer v2): the shipped Argo CD Lua (real Lua 5.1) and Flux CEL
(cel-python), on status objects that validate against the upstream TrainJob CRD.

A TrainJob has the conditions Suspended, Complete and Failed, and no Running: training shows
as active pods in `status.jobsStatus`. Expected states are docs/gitops.md's: Failed is
Degraded / Failed; Complete is Healthy / Current; Suspended (Kueue) is Suspended / Current;
active pods are Progressing / Current; nothing yet is Progressing / InProgress.
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
from trainops.render.gitops.health import TRAINJOB_HEALTH_SCRIPT, lua_source


def trainjob(conditions: list[tuple[str, str]], active: int | None = None) -> dict[str, Any]:
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
            {"name": "node", "active": active, "ready": 0, "succeeded": 0, "failed": 0,
             "suspended": 0}
        ]  # fmt: skip
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "llama", "namespace": "ml", "generation": 1},
        "spec": {"runtimeRef": {"name": "trainops-torch-h200-141gb"}},
        "status": status,
    }


# (conditions, active pods, Argo CD health, Flux status)
STATES = [
    pytest.param([], None, "Progressing", IN_PROGRESS, id="nothing-yet"),
    pytest.param([], 4, "Progressing", CURRENT, id="running"),
    pytest.param([("Suspended", "True")], 0, "Suspended", CURRENT, id="suspended-by-kueue"),
    pytest.param([("Suspended", "False")], 4, "Progressing", CURRENT, id="resumed"),
    pytest.param([("Complete", "True")], 0, "Healthy", CURRENT, id="complete"),
    pytest.param([("Failed", "True")], 0, "Degraded", FAILED, id="failed"),
    pytest.param([("Failed", "True")], 2, "Degraded", FAILED, id="failed-with-pods-left"),
    pytest.param([("Complete", "False")], 0, "Progressing", IN_PROGRESS, id="not-complete"),
]


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
