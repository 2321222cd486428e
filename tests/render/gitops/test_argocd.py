"""Argo CD objects: AppProject and ApplicationSet built from hand-made cluster profiles."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conformance import gotemplate
from tests.render.gitops.crdschema import crd_validator, errors
from tests.render.gitops.fixtures import flux_only_repo, mixed_repo
from tests.tools import REPO, require_kustomize, require_upstream
from trainops.build import write_tree
from trainops.diff import build_overlays
from trainops.jobspec.load import load_repository
from trainops.render import render_repository
from trainops.render.gitops import render_gitops
from trainops.render.gitops.argocd import app_project, application_set


def test_render_gitops_layout() -> None:
    files = render_gitops(mixed_repo())
    assert list(files) == [
        "gitops/argocd/applicationset.yaml",
        "gitops/argocd/appproject.yaml",
        "gitops/argocd/argocd-cm-health.yaml",
        # No job targets the Argo CD clusters here: they need no delivery account.
        "gitops/flux/eks-l4/rbac.yaml",
        "gitops/flux/eks-l4/source.yaml",
        "gitops/flux/eks-l4/training.yaml",
    ]


def test_no_argocd_files_without_argocd_clusters() -> None:
    assert not [p for p in render_gitops(flux_only_repo()) if p.startswith("gitops/argocd/")]


def test_appproject_confines_destinations_and_kinds() -> None:
    spec = app_project(mixed_repo())["spec"]
    assert spec["sourceRepos"] == ["https://git.example.com/ml/trainops.git"]
    # Each cluster only gets its own namespaces and the delivery account's (the Applications'
    # destination namespace); the Flux cluster gets nothing.
    assert spec["destinations"] == [
        {"name": "gke-h100", "namespace": "ml-research"},
        {"name": "gke-h100", "namespace": "trainops-delivery"},
        {"server": "https://kubernetes.default.svc", "namespace": "ml-prod"},
        {"server": "https://kubernetes.default.svc", "namespace": "ml-research"},
        {"server": "https://kubernetes.default.svc", "namespace": "trainops-delivery"},
    ]
    # No jobs and no platform manifests: nothing is delivered, so no kind is allowed.
    assert spec["clusterResourceWhitelist"] == []
    assert spec["namespaceResourceWhitelist"] == []


def test_applicationset_has_one_element_per_argocd_cluster() -> None:
    spec = application_set(mixed_repo())["spec"]
    elements = spec["generators"][0]["list"]["elements"]
    for element in elements:
        assert element.pop("ignoreDifferences")  # per cluster: see the Kueue test below
    assert elements == [
        {
            "cluster": "gke-h100",
            "destinationName": "gke-h100",
            "destinationServer": "https://kubernetes.default.svc",
            "prune": False,
            "selfHeal": False,
        },
        {
            "cluster": "onprem-a100",
            "destinationName": "",
            "destinationServer": "https://kubernetes.default.svc",
            "prune": True,
            "selfHeal": True,
        },
    ]
    template = spec["template"]["spec"]
    assert template["source"]["path"] == "overlays/{{ .cluster }}"
    assert template["project"] == "training"
    assert spec["syncPolicy"] == {"preserveResourcesOnDeletion": True}


def test_sync_options_suit_batch_jobs() -> None:
    """Each option by name, with its reason: test_delivery_guarantees.py (on rendered files)."""
    options = application_set(mixed_repo())["spec"]["template"]["spec"]["syncPolicy"]["syncOptions"]
    # Never replace a job wholesale: that deletes and re-creates it (and re-runs it).
    assert not [o for o in options if o.startswith("Replace=")]
    assert "ServerSideApply=true" in options
    assert "RespectIgnoreDifferences=true" in options


@pytest.mark.parametrize("scheduler", ["kueue", "volcano"])
def test_kueue_suspend_and_status_are_not_drift(scheduler: str) -> None:
    repo = mixed_repo()
    first = repo.clusters["onprem-a100"]
    first = replace(first, scheduler=replace(first.scheduler, kind=scheduler))
    repo = replace(repo, clusters={**repo.clusters, first.name: first})
    spec = application_set(repo)["spec"]
    assert "ignoreDifferences" not in spec["template"]["spec"]
    element = next(
        e for e in spec["generators"][0]["list"]["elements"] if e["cluster"] == first.name
    )
    ignores = _render_template_patch(spec["templatePatch"], element)["spec"]["ignoreDifferences"]
    by_kind = {i["kind"]: i for i in ignores}
    assert set(by_kind) == {"PyTorchJob", "TFJob", "MPIJob"}
    for entry in ignores:
        assert entry["group"] == "kubeflow.org"
        assert "/spec/runPolicy/suspend" in entry["jsonPointers"]
        assert "/status" in entry["jsonPointers"]
    tolerations = ".spec.pytorchReplicaSpecs[]?.template.spec.tolerations"
    # Kueue injects its flavor's selectors and tolerations; elsewhere they are ours, and drift.
    if scheduler == "kueue":
        assert tolerations in by_kind["PyTorchJob"]["jqPathExpressions"]
    else:
        assert "jqPathExpressions" not in by_kind["PyTorchJob"]


def _render_template_patch(patch: str, element: dict[str, Any]) -> dict[str, Any]:
    """The Go-template patch executed for one element as the ApplicationSet controller does
    (tests/conformance/gotemplate.py, `missingkey=error`), parsed as YAML."""
    result: dict[str, Any] = yaml.safe_load(
        gotemplate.execute(patch, element, ("missingkey=error",))
    )
    return result


@pytest.mark.parametrize("index", [0, 1])
def test_template_patch_sets_destination_and_automation(index: int) -> None:
    spec = application_set(mixed_repo())["spec"]
    element = spec["generators"][0]["list"]["elements"][index]
    patched = _render_template_patch(spec["templatePatch"], element)["spec"]
    destination = patched["destination"]
    if element["destinationName"]:
        assert destination == {"name": element["destinationName"]}
    else:
        assert destination == {"server": element["destinationServer"]}
    assert patched["syncPolicy"]["automated"] == {
        "prune": element["prune"],
        "selfHeal": element["selfHeal"],
        "allowEmpty": False,
    }


def test_objects_validate_against_upstream_argocd_crds() -> None:
    crds = require_upstream() / "crds" / "argoproj.io"
    repo = mixed_repo()
    for obj, crd in (
        (app_project(repo), "appprojects.yaml"),
        (application_set(repo), "applicationsets.yaml"),
    ):
        assert errors(crd_validator(crds / crd, "v1alpha1"), obj) == []


def test_upstream_validation_catches_a_wrong_field() -> None:
    crds = require_upstream() / "crds" / "argoproj.io"
    bad = application_set(mixed_repo())
    bad["spec"]["template"]["spec"]["syncPolicy"]["automatic"] = {}
    assert errors(crd_validator(crds / "applicationsets.yaml", "v1alpha1"), bad)


def test_appproject_allows_every_kind_the_renderer_builds(tmp_path: Path) -> None:
    """Build the shipped examples' overlays: each object's kind is allowed, and nothing
    in them would make Argo CD re-run a finished job (no TTL, no Replace, no suspend)."""
    require_kustomize()
    repo = load_repository(REPO)
    write_tree(render_repository(repo), tmp_path)
    spec = app_project(repo)["spec"]
    namespaced = {(k["group"], k["kind"]) for k in spec["namespaceResourceWhitelist"]}
    cluster_wide = {(k["group"], k["kind"]) for k in spec["clusterResourceWhitelist"]}
    assert "*" not in {k for _, k in namespaced | cluster_wide}
    built = build_overlays(tmp_path)
    assert sorted(built) == sorted(repo.clusters)
    for name, objects in built.items():
        for obj in objects.values():
            if repo.clusters[name].delivery.tool != "argocd":
                continue
            kind = (obj["apiVersion"].rpartition("/")[0], obj["kind"])
            assert kind in (namespaced if "namespace" in obj["metadata"] else cluster_wide), kind
            if obj["kind"] == "PyTorchJob":
                run_policy = obj["spec"]["runPolicy"]
                assert "ttlSecondsAfterFinished" not in run_policy
                assert run_policy["cleanPodPolicy"] == "All"
                assert "suspend" not in run_policy
            options = (
                obj["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-options", "")
            )
            assert "Replace=true" not in options
