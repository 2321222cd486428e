"""Flux kustomize-controller v1.9.4 over our output (ported logic: flux_port.py,
rbac_port.py): each Flux cluster's Kustomizations together apply exactly the cluster's
overlay, what a job's admission looks up is applied by a Kustomization the job's depends on
(issue 23, item 3: a TrainJob beside its ClusterTrainingRuntime was dry-run before the
runtime existed and refused), and each applies as an account allowed to apply its objects."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance import flux_port, rbac_port
from tests.conformance.gitops_repos import Rendered, labels_delivered_by, rendered
from tests.conformance.references import ADMISSION_CHECKED, key, references
from tests.tools import require_kustomize
from trainops.facts.platform import PLATFORM_KINDS

pytestmark = pytest.mark.slow
LABELS = labels_delivered_by("flux")
# What must be applied before the jobs naming it: what admission looks up, and (trainops'
# design, docs/gitops.md) the platform's queues, networks and priority classes. Not ConfigMaps:
# those a job mounts are its own (its DeepSpeed config, in its folder, read by the kubelet when
# the pod starts); the platform's are Grafana dashboards no job names.
BEFORE_JOBS = ADMISSION_CHECKED | {kind for _, kind in PLATFORM_KINDS} - {"ConfigMap"}


def _kustomizations(repo: Rendered, cluster: str) -> dict[str, dict[str, Any]]:
    out = {}
    for path, docs in repo.gitops.items():
        if path.startswith(f"gitops/flux/{cluster}/"):
            for doc in docs:
                if doc["kind"] == "Kustomization":
                    out[doc["metadata"]["name"]] = doc
    return out


def _flux(label: str) -> tuple[Rendered, dict[str, dict[str, dict[str, Any]]]]:
    require_kustomize()
    repo = rendered(label)
    return repo, {cluster: _kustomizations(repo, cluster) for cluster in repo.tool("flux")}


@pytest.mark.parametrize("label", LABELS)
def test_the_kustomizations_apply_exactly_the_overlay_once(label: str) -> None:
    """Split or not, a cluster receives `overlays/<cluster>` (what validate checks and Argo
    CD would sync): every object once, none twice (two owners would fight over it)."""
    repo, clusters = _flux(label)
    for cluster, kustomizations in clusters.items():
        applied: list[tuple[str, str, str]] = []
        for ks in kustomizations.values():
            applied += [key(o) for o in repo.build(ks["spec"]["path"])]
        assert len(applied) == len(set(applied)), cluster
        assert set(applied) == {key(o) for o in repo.build(f"overlays/{cluster}")}, cluster


@pytest.mark.parametrize("label", LABELS)
def test_what_a_job_needs_first_is_applied_by_a_kustomization_it_depends_on(label: str) -> None:
    """A runtime (looked up by the Trainer's TrainJob webhook during the dry run of the same
    stage) or a platform object a job names is applied in an earlier stage or by a
    Kustomization the job's depends on, never beside it in one stage."""
    repo, clusters = _flux(label)
    checked = 0
    for cluster, kustomizations in clusters.items():
        owner = {
            key(o): name
            for name, ks in kustomizations.items()
            for o in repo.build(ks["spec"]["path"])
        }
        built = {
            key(o): o for ks in kustomizations.values() for o in repo.build(ks["spec"]["path"])
        }
        for obj_key, obj in built.items():
            before = flux_port.dependencies(kustomizations, owner[obj_key])
            for ref in references(obj):
                if ref not in owner or ref[0] not in BEFORE_JOBS:
                    continue
                checked += 1
                same = owner[ref] == owner[obj_key]
                earlier_stage = same and flux_port.stage(built[ref]) < flux_port.stage(obj)
                assert owner[ref] in before or earlier_stage, (cluster, obj_key, ref)
    split = any(len(kustomizations) > 1 for kustomizations in clusters.values())
    assert checked or not split, "a platform Kustomization that no job needs"


@pytest.mark.parametrize("label", LABELS)
def test_each_kustomization_applies_as_an_account_allowed_to_apply_its_objects(
    label: str,
) -> None:
    """kustomize-controller impersonates `serviceAccountName` of the Kustomization's
    namespace; Kubernetes RBAC (rbac.yaml beside it) lets that account server-side apply,
    read and prune every object the Kustomization builds."""
    repo, clusters = _flux(label)
    for cluster, kustomizations in clusters.items():
        rbac = repo.gitops[f"gitops/flux/{cluster}/rbac.yaml"]
        for name, ks in kustomizations.items():
            user = flux_port.account(ks)
            assert user, f"{name} applies as the controller itself"
            for obj in repo.build(ks["spec"]["path"]):
                for verb in ("get", "patch", "delete"):
                    assert rbac_port.allowed(rbac, user, verb, obj), (name, verb, key(obj))
