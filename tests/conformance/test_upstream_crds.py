"""Every custom resource we build conforms to the upstream CRD of its apiVersion.

The CRDs are read from `../shared/upstream/crds/` at test time (see its SOURCES.md: the
Kubeflow operators, Trainer v2, JobSet, Volcano, Kueue (ClusterQueue, LocalQueue,
ResourceFlavor), Multus's NetworkAttachmentDefinition, Prometheus Operator, Argo CD, Flux)
and converted the way kubeconform's tooling does (`trainops.validate.crd`). Our own strict
schemas are tested elsewhere; this is the API server's view of every built overlay.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conformance.built_repos import IDS, overlay
from tests.conformance.discovery import NOT_IN_SHARED
from tests.tools import require_upstream
from trainops.validate.crd import load_crd_dir
from trainops.validate.load import load_manifests
from trainops.validate.pipeline import validate_manifests
from trainops.validate.schemas import SchemaStore

pytestmark = pytest.mark.slow


@functools.cache
def _crds() -> dict[tuple[str, str, str], dict[str, Any]]:
    return load_crd_dir(require_upstream() / "crds")


def _builtin(group: str) -> bool:
    """Kubernetes' own API groups: `apps`, `batch`, ... and `*.k8s.io` (not SIG projects'
    `*.x-k8s.io`, which are CRDs)."""
    return "." not in group or (group.endswith(".k8s.io") and not group.endswith(".x-k8s.io"))


def _custom(objects: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    return [o for o in objects if "/" in o["apiVersion"] and not _builtin(_gvk(o)[0])]


def _gvk(obj: dict[str, Any]) -> tuple[str, str, str]:
    group, version = obj["apiVersion"].split("/")
    return group, version, obj["kind"]


@pytest.mark.parametrize("overlay_id", IDS)
def test_every_built_custom_resource_conforms_to_its_upstream_crd(
    overlay_id: str, tmp_path: Path
) -> None:
    crds = _crds()
    custom = _custom(overlay(overlay_id).objects)
    missing = sorted(
        gvk for gvk in {_gvk(o) for o in custom} - set(crds) if gvk[::2] not in NOT_IN_SHARED
    )
    custom = [o for o in custom if _gvk(o) in crds]  # the others: our strict schema only
    assert not missing, f"no upstream CRD for {missing}: add it to ../shared/upstream/crds"
    path = tmp_path / "built.yaml"
    path.write_text(yaml.safe_dump_all(custom))
    store = SchemaStore(crd_schemas={k: v for k, v in crds.items()})
    findings = validate_manifests(load_manifests([path]), None, store, checkers=[])
    assert [f"{f.kind}/{f.name}: {f.message}" for f in findings] == []


def test_the_built_objects_include_kueue_and_multus_platform_objects() -> None:
    """The ResourceFlavor and NetworkAttachmentDefinition CRDs are exercised."""
    kinds = {_gvk(o)[2] for i in IDS for o in _custom(overlay(i).objects)}
    assert {"ResourceFlavor", "NetworkAttachmentDefinition", "LocalQueue", "Queue"} <= kinds


def test_the_kinds_checked_only_by_our_schema_are_still_missing_upstream() -> None:
    """PrometheusRule and ExternalSecret are held to trainops' strict schemas alone until their
    CRDs are in ../shared/upstream: once one is, it must be checked here like the others."""
    present = {(group, kind) for group, _, kind in _crds()}
    assert not present & set(NOT_IN_SHARED), "drop it from discovery.NOT_IN_SHARED"
