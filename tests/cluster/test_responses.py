"""The recorded API responses (tests/cluster/responses/) have the shapes real servers send.

The emulator serves these shapes, so a wrong one would make the cluster-facing tests
pass against a cluster that does not exist. PyTorchJob and PodGroup status blocks are
checked against the upstream CRDs' schemas (../shared/upstream), Pod statuses, Events
and v1 Status bodies against the Kubernetes JSON Schemas that kubernetes-validate ships.
Kueue's Workload has no CRD file there and is not checked.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import referencing
import yaml

from tests.cluster.conftest import RESPONSES, response
from tests.tools import require_upstream
from trainops.validate.crd import convert_schema
from trainops.validate.schemas import core_definitions

KUBERNETES = "1.31"


def _registry() -> referencing.Registry:  # type: ignore[type-arg]
    """The Kubernetes definitions under their $id, so no reference is fetched over the net."""
    definitions = core_definitions(KUBERNETES)
    resource = referencing.Resource.from_contents(definitions)
    return referencing.Registry().with_resource(definitions["$id"], resource)


def _core(definition: str) -> jsonschema.Draft202012Validator:
    ref = f"{core_definitions(KUBERNETES)['$id']}#/$defs/{definition}"
    return jsonschema.Draft202012Validator({"$ref": ref}, registry=_registry())


@functools.cache
def _crds(path: Path) -> list[Any]:
    """The CRDs of an upstream file, read once, with the C loader (megabytes of schema)."""
    text = path.read_text(encoding="utf-8")
    return list(yaml.load_all(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))


def _crd_status(file: str, version: str) -> jsonschema.Draft202012Validator:
    """The `status` schema of the CRD in `file` at `version`, strict (unknown fields fail).

    Converted with the validator's own converter; status itself, which Git must never
    carry, is what the cluster sends back.
    """
    for crd in _crds(require_upstream() / "crds" / file):
        for entry in crd["spec"]["versions"]:
            if entry["name"] == version:
                status = entry["schema"]["openAPIV3Schema"]["properties"]["status"]
                return jsonschema.Draft202012Validator(convert_schema(status))
    raise AssertionError(f"no version {version} in {file}")


def _errors(validator: jsonschema.Draft202012Validator, instance: Any) -> list[str]:
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(instance)]


@pytest.mark.parametrize(
    "state",
    sorted(yaml.safe_load((RESPONSES / "pytorchjob-status.yaml").read_text())),
)
def test_pytorchjob_status_matches_the_upstream_crd(state: str) -> None:
    status = response("pytorchjob-status", state)
    assert _errors(_crd_status("kubeflow.org/pytorchjobs.yaml", "v1"), status) == []


def test_mpijob_status_matches_the_upstream_crd() -> None:
    status = response("mpijob-status", "launcher-failed")
    assert _errors(_crd_status("kubeflow.org/mpijobs-v2beta1.yaml", "v2beta1"), status) == []


@pytest.mark.parametrize("state", ["running", "complete", "suspended"])
def test_trainjob_status_matches_the_upstream_crd(state: str) -> None:
    status = response("trainjob-status", state)
    assert _errors(_crd_status("trainer.kubeflow.org/trainjobs.yaml", "v1alpha1"), status) == []


@pytest.mark.parametrize("state", ["podgroup-pending", "podgroup-running", "podgroup-unknown"])
def test_podgroup_status_matches_the_upstream_crd(state: str) -> None:
    status = response("schedulers", state)
    assert _errors(_crd_status("scheduling.volcano.sh/podgroups.yaml", "v1beta1"), status) == []


@pytest.mark.parametrize("state", sorted(yaml.safe_load((RESPONSES / "pods.yaml").read_text())))
def test_pod_status_matches_the_kubernetes_schema(state: str) -> None:
    assert _errors(_core("io.k8s.api.core.v1.PodStatus"), response("pods", state)) == []


def test_events_match_the_kubernetes_schema() -> None:
    events = response("events", "")
    assert events and all(_errors(_core("io.k8s.api.core.v1.Event"), e) == [] for e in events)


@pytest.mark.parametrize(
    "incident", sorted(yaml.safe_load((RESPONSES / "incidents.yaml").read_text()))
)
def test_incident_events_match_the_kubernetes_schema(incident: str) -> None:
    events = response("incidents", incident)
    assert events and all(_errors(_core("io.k8s.api.core.v1.Event"), e) == [] for e in events)


@pytest.mark.parametrize("name", sorted(yaml.safe_load((RESPONSES / "errors.yaml").read_text())))
def test_error_bodies_are_v1_status(name: str) -> None:
    body = response("errors", name)
    assert _errors(_core("io.k8s.apimachinery.pkg.apis.meta.v1.Status"), body) == []
    assert body["kind"] == "Status" and body["status"] == "Failure"
