"""NVIDIA's ComputeDomain (resource.nvidia.com/v1beta1), committed beside GB200 MPIJobs that
claim its IMEX channel, validates against a strict schema written from the GPU DRA driver's
API types (v25.12.0) instead of failing as an unknown kind. The driver's own ComputeDomain
samples (v25.12.0, `demo/` and `tests/`) were checked clean by hand, but for a template's
`${NVB_NUM_NODES}`."""

from __future__ import annotations

import copy

from trainops.core.manifest import Manifest
from trainops.validate.pipeline import validate_manifests
from trainops.validate.schemas import SchemaStore

DOMAIN = {
    "apiVersion": "resource.nvidia.com/v1beta1",
    "kind": "ComputeDomain",
    "metadata": {"name": "nccl-domain", "namespace": "team"},
    "spec": {"numNodes": 0, "channel": {"resourceClaimTemplate": {"name": "nccl-channel"}}},
}


def _messages(data: dict[str, object], store: SchemaStore) -> list[str]:
    found = validate_manifests([Manifest(copy.deepcopy(data), "m.yaml")], None, store, checkers=[])
    return [f.message for f in found]


def test_compute_domain_validates(ours: SchemaStore) -> None:
    assert _messages(DOMAIN, ours) == []


def test_compute_domain_is_strict(ours: SchemaStore) -> None:
    data = copy.deepcopy(DOMAIN)
    data["spec"]["channel"] = {"resourceClaimTemplate": {"name": "c"}, "allocationMode": "Many"}  # type: ignore[index]
    del data["spec"]["numNodes"]  # type: ignore[attr-defined]
    messages = _messages(data, ours)
    assert "spec: required field `numNodes` is missing" in messages, messages
    assert any(m.startswith("spec.channel.allocationMode: ") for m in messages), messages
