"""Flux objects: a GitRepository and a Kustomization per Flux cluster."""

from __future__ import annotations

from tests.render.gitops.crdschema import crd_validator, errors
from tests.render.gitops.fixtures import flux_only_repo, mixed_repo
from tests.tools import require_upstream
from trainops.render.gitops import render_gitops
from trainops.render.gitops.flux import git_repository, health_check_exprs, kustomization


def test_kustomization_syncs_the_cluster_overlay() -> None:
    repo = mixed_repo()
    ks = kustomization(repo, repo.clusters["eks-l4"])
    assert ks["metadata"] == {
        "name": "training-eks-l4",
        "namespace": "flux-system",
        "labels": {"app.kubernetes.io/part-of": "trainops"},
    }
    spec = ks["spec"]
    assert spec["path"] == "./overlays/eks-l4/_jobs"
    assert "dependsOn" not in spec  # no platform manifests, no runtimes: nothing to wait for
    assert spec["sourceRef"] == {"kind": "GitRepository", "name": "trainops"}
    assert spec["prune"] is True
    assert spec["wait"] is True
    assert spec["force"] is False
    assert spec["timeout"] == "15m"


def test_prune_follows_the_profile() -> None:
    repo = flux_only_repo()
    assert kustomization(repo, repo.clusters["eks-l4"])["spec"]["prune"] is False


def test_health_exprs_cover_the_job_kinds() -> None:
    # One entry per GroupKind: fluxcd/pkg runtime/cel NewStatusReader refuses a second one
    # for the same GroupKind whatever its version (tests/conformance/test_flux_health.py).
    exprs = {(e["apiVersion"], e["kind"]): e for e in health_check_exprs()}
    v1 = {("kubeflow.org/v1", k) for k in ("PyTorchJob", "TFJob", "MPIJob")}
    trainjob_key = ("trainer.kubeflow.org/v1alpha1", "TrainJob")
    assert set(exprs) == v1 | {trainjob_key}
    trainjob = exprs.pop(trainjob_key)  # its own conditions: test_health_trainjob.py
    assert "inProgress" not in trainjob
    for e in exprs.values():
        assert "'Failed'" in e["failed"]
        assert "'Running'" in e["current"] and "'Succeeded'" in e["current"]
        # Flux evaluates inProgress first; a running job keeps Created=True, so none is given.
        assert "inProgress" not in e
        assert e["current"].startswith("has(status.conditions) && ")


def test_git_repository_tracks_the_revision_and_ships_only_manifests() -> None:
    spec = git_repository(mixed_repo())["spec"]
    assert spec["url"] == "https://git.example.com/ml/trainops.git"
    assert spec["ref"] == {"branch": "main"}
    assert spec["ignore"].splitlines() == ["/*", "!/base/", "!/overlays/"]


def test_every_flux_cluster_gets_its_own_directory() -> None:
    files = render_gitops(mixed_repo())
    assert files["gitops/flux/eks-l4/source.yaml"]["kind"] == "GitRepository"
    assert files["gitops/flux/eks-l4/training.yaml"]["kind"] == "Kustomization"
    assert not [p for p in files if "onprem-a100" in p and p.startswith("gitops/flux/")]


def test_objects_validate_against_upstream_flux_crds() -> None:
    crds = require_upstream() / "crds"
    repo = mixed_repo()
    source = crd_validator(crds / "source.toolkit.fluxcd.io" / "gitrepositories.yaml", "v1")
    kustomize = crd_validator(crds / "kustomize.toolkit.fluxcd.io" / "kustomizations.yaml", "v1")
    assert errors(source, git_repository(repo)) == []
    assert errors(kustomize, kustomization(repo, repo.clusters["eks-l4"])) == []
    bad = kustomization(repo, repo.clusters["eks-l4"])
    bad["spec"]["timeout"] = "fifteen minutes"
    assert errors(kustomize, bad)
