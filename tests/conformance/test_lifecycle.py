"""The fields `trainops diff` calls refused by the API server are exactly the transition rules
(`self == oldSelf`) of the upstream CRDs of our job kinds (`../shared/upstream/crds`: the
Training Operator v1.9.4, the MPI Operator v0.8, Kubeflow Trainer v2.3.0), so a rule added
upstream, or one we invented, fails here (trainops/facts/lifecycle.py)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.tools import require_upstream
from trainops.facts.lifecycle import IMMUTABLE, Path

CRDS = {
    ("kubeflow.org/v1", "PyTorchJob"): "kubeflow.org/pytorchjobs.yaml",
    ("kubeflow.org/v1", "TFJob"): "kubeflow.org/tfjobs.yaml",
    ("kubeflow.org/v1", "MPIJob"): "kubeflow.org/mpijobs.yaml",
    ("kubeflow.org/v2beta1", "MPIJob"): "kubeflow.org/mpijobs-v2beta1.yaml",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "trainer.kubeflow.org/trainjobs.yaml",
}


def transition_rules(node: Any, at: Path = ()) -> set[Path]:
    """The paths of an OpenAPI schema with a `self == oldSelf` rule (`*`: list items, map
    values)."""
    if not isinstance(node, dict):
        return set()
    found = {at} if any(
        v.get("rule", "").replace(" ", "") == "self==oldSelf"
        for v in node.get("x-kubernetes-validations") or []
    ) else set()  # fmt: skip
    for key, sub in (node.get("properties") or {}).items():
        found |= transition_rules(sub, (*at, key))
    for key in ("items", "additionalProperties"):
        found |= transition_rules(node.get(key), (*at, "*"))
    return found


@pytest.mark.parametrize(("api_version", "kind"), sorted(CRDS))
def test_the_api_servers_refusals_are_the_crds_transition_rules(
    api_version: str, kind: str
) -> None:
    path = require_upstream() / "crds" / CRDS[api_version, kind]
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    version = api_version.rsplit("/", 1)[1]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version]
    upstream = transition_rules(served["schema"]["openAPIV3Schema"])
    ours = {i.path for i in IMMUTABLE[api_version, kind] if i.who.startswith("the API server")}
    assert ours == upstream


def test_every_job_kind_has_an_entry() -> None:
    assert set(IMMUTABLE) == set(CRDS)
