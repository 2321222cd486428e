"""The Flux CEL health checks we ship, evaluated by a real CEL implementation.

The expressions are read from the rendered `gitops/flux/<cluster>/training.yaml` of the
shipped and rich repositories and read the way kustomize-controller does, through the port of
fluxcd/pkg `runtime/cel` (`tests/conformance/flux_port.py`: `NewStatusReader` keyed by
GroupKind, the StatusEvaluator's order, cel-python with cel-go's `has()`), on job objects in
each state the Kubeflow Training Operator leaves them in. docs/gitops.md states what each
state must read as. A job with no `status` field at all (before the operator's first
reconcile) reads Unknown: cel-go's `has(status.conditions)` is an error there.
"""

from __future__ import annotations

import functools
import itertools
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.conformance import flux_port
from tests.render.gitops.crdschema import _strict
from tests.render.gitops.test_health_lua import run_health
from tests.render.repos import REPOS, read_yaml, render
from tests.tools import copy_inputs, require_module, require_upstream
from trainops.render.gitops.health import lua_source

require_module("celpy")

KINDS = ("PyTorchJob", "TFJob", "MPIJob")
# Every (apiVersion, kind) a job can be rendered as: Flux keys health checks by GroupKind
# (one entry per kind), and MPIJob has the MPI Operator's v2beta1 beside the Training
# Operator's v1: the one MPIJob entry must read both.
SERVED = (
    ("kubeflow.org/v1", "PyTorchJob"),
    ("kubeflow.org/v1", "TFJob"),
    ("kubeflow.org/v1", "MPIJob"),
    ("kubeflow.org/v2beta1", "MPIJob"),
)
CRD_FILES = {
    ("kubeflow.org/v1", "PyTorchJob"): "pytorchjobs.yaml",
    ("kubeflow.org/v1", "TFJob"): "tfjobs.yaml",
    ("kubeflow.org/v1", "MPIJob"): "mpijobs.yaml",
    ("kubeflow.org/v2beta1", "MPIJob"): "mpijobs-v2beta1.yaml",
}
# kstatus results, as Flux names them.
CURRENT, FAILED, IN_PROGRESS = flux_port.CURRENT, flux_port.FAILED, flux_port.IN_PROGRESS


@functools.cache
def shipped_exprs() -> dict[str, tuple[dict[str, str], ...]]:
    """kind -> every distinct healthCheckExprs entry in every rendered Flux Kustomization."""
    found: dict[str, set[tuple[tuple[str, str], ...]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, source in REPOS.items():
            root = render(copy_inputs(source, Path(tmp) / label))
            for path in sorted((root / "gitops" / "flux").glob("*/training.yaml")):
                for entry in read_yaml(path)["spec"]["healthCheckExprs"]:
                    found.setdefault(entry["kind"], set()).add(tuple(sorted(entry.items())))
    return {kind: tuple(dict(e) for e in sorted(entries)) for kind, entries in found.items()}


def flux_status(entry: dict[str, str], obj: dict[str, Any]) -> str:
    """What kustomize-controller's status reader makes of `obj` with this entry."""
    return flux_port.StatusReader.new([entry]).read_status_for_object(obj)


def condition(kind: str, ctype: str, status: str = "True") -> dict[str, str]:
    """A JobCondition as the training operator (kubeflow.org/v1) writes it."""
    return {
        "type": ctype,
        "status": status,
        "reason": f"{kind}{ctype}",
        "message": f"{kind} llama is {ctype.lower()}.",
        "lastUpdateTime": "2026-01-01T00:00:00Z",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }


def job(
    kind: str, conditions: list[tuple[str, str]] | None, api_version: str = "kubeflow.org/v1"
) -> dict[str, Any]:
    """A job whose status holds `conditions` ((type, status) pairs, oldest first)."""
    status: dict[str, Any] = {}
    if conditions is not None:
        status = {
            "conditions": [condition(kind, t, s) for t, s in conditions],
            "replicaStatuses": {"Worker": {"active": 2}},
            "startTime": "2026-01-01T00:00:00Z",
        }
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {"name": "llama", "namespace": "ml", "generation": 1},
        "spec": {"runPolicy": {"cleanPodPolicy": "All"}},
        "status": status,
    }


# docs/gitops.md (Flux Kustomization, healthCheckExprs): started, finished or queued by Kueue
# is current (delivery worked); Failed is failed; anything else is in progress.
STATES = [
    pytest.param(None, IN_PROGRESS, id="status-empty"),
    pytest.param([], IN_PROGRESS, id="no-conditions"),
    pytest.param([("Created", "True")], IN_PROGRESS, id="created"),
    pytest.param([("Created", "True"), ("Running", "True")], CURRENT, id="running"),
    pytest.param(
        [("Created", "True"), ("Running", "False"), ("Restarting", "True")],
        IN_PROGRESS,
        id="restarting",
    ),
    pytest.param([("Created", "True"), ("Suspended", "True")], CURRENT, id="suspended"),
    pytest.param(
        [("Created", "True"), ("Suspended", "False"), ("Running", "True")], CURRENT, id="resumed"
    ),
    pytest.param(
        [("Created", "True"), ("Running", "False"), ("Succeeded", "True")],
        CURRENT,
        id="succeeded",
    ),
    pytest.param(
        [("Created", "True"), ("Running", "False"), ("Failed", "True")], FAILED, id="failed"
    ),
    pytest.param(
        [("Created", "True"), ("Running", "True"), ("Failed", "True")],
        FAILED,
        id="failed-with-stale-running",
    ),
    pytest.param(
        [("Created", "True"), ("Running", "False"), ("Succeeded", "False")],
        IN_PROGRESS,
        id="nothing-true-but-created",
    ),
]


def test_every_job_kind_has_one_expression_set() -> None:
    """One entry per kind, the same on every cluster (a second entry for one GroupKind stops
    the Kustomization: test_flux_health.py)."""
    exprs = shipped_exprs()
    assert sorted(exprs) == sorted((*KINDS, "TrainJob"))  # TrainJob: test_health_trainjob.py
    for kind, entries in exprs.items():
        assert len(entries) == 1, f"{kind}: clusters disagree or a kind has two entries"


def test_a_job_with_no_status_yet_reads_unknown() -> None:
    """Before the operator's first reconcile: cel-go errs on `has(status.conditions)` and
    kstatus reports Unknown, then polls again (not Failed, not Current)."""
    (entry,) = shipped_exprs()["PyTorchJob"]
    obj = job("PyTorchJob", None)
    del obj["status"]
    assert flux_status(entry, obj) == flux_port.UNKNOWN


@pytest.mark.parametrize(("api_version", "kind"), SERVED)
@pytest.mark.parametrize(("conditions", "expected"), STATES)
def test_flux_reads_each_job_state(
    api_version: str, kind: str, conditions: list[tuple[str, str]] | None, expected: str
) -> None:
    (entry,) = shipped_exprs()[kind]
    assert flux_status(entry, job(kind, conditions, api_version)) == expected


@pytest.mark.parametrize(("api_version", "kind"), SERVED)
def test_the_states_are_real_operator_status_objects(api_version: str, kind: str) -> None:
    """Every status above validates against the kind's upstream CRD status schema (the MPI
    Operator's v2beta1 MPIJob included: same condition types)."""
    path = require_upstream() / "crds" / "kubeflow.org" / CRD_FILES[api_version, kind]
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    name = api_version.rsplit("/", 1)[1]
    version = next(v for v in crd["spec"]["versions"] if v["name"] == name)
    schema = _strict(version["schema"]["openAPIV3Schema"]["properties"]["status"])
    validator = jsonschema.Draft4Validator(schema)
    for param in STATES:
        status = job(kind, param.values[0])["status"]
        assert [e.message for e in validator.iter_errors(status)] == [], param.id


def test_a_changed_generation_is_in_progress() -> None:
    """Flux's own rule, before any expression: the spec changed and the status is older."""
    (entry,) = shipped_exprs()["PyTorchJob"]
    obj = job("PyTorchJob", [("Created", "True"), ("Running", "True")])
    obj["status"]["observedGeneration"] = 1
    assert flux_status(entry, obj) == CURRENT
    obj["metadata"]["generation"] = 2
    assert flux_status(entry, obj) == IN_PROGRESS


def test_flux_agrees_with_the_argo_cd_lua_on_every_condition_set() -> None:
    """Both delivery tools must call the same job failed: run the shipped Lua (real Lua 5.1)
    and the shipped CEL on every combination of the operator's condition types."""
    (entry,) = shipped_exprs()["PyTorchJob"]
    types = ("Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed")
    checked = 0
    # Each type True or absent, and each True or False (the operator flips old ones to False).
    combinations = [
        *itertools.product(("True", None), repeat=len(types)),
        *itertools.product(("True", "False"), repeat=len(types)),
    ]
    for statuses in combinations:
        conditions = [(t, s) for t, s in zip(types, statuses, strict=True) if s is not None]
        obj = job("PyTorchJob", conditions)
        lua = run_health(lua_source(), obj)["status"]
        flux = flux_status(entry, obj)
        assert (lua == "Degraded") == (flux == FAILED), (conditions, lua, flux)
        if lua == "Healthy":  # succeeded: delivered, and over
            assert flux == CURRENT, conditions
        checked += 1
    assert checked == 2 * 2 ** len(types)
