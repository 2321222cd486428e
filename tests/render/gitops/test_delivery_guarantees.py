"""docs/gitops.md, checked on the `gitops/` files `trainops render` writes.

The shipped repository and the rich fixture are rendered with the CLI; the Argo CD and Flux
objects are read back from disk as YAML, the way Argo CD and Flux read them. Each documented
setting is named here with the reason the docs give, and expected values come from the
cluster profiles and `trainops.yaml` as written — never from `trainops.render.gitops` constants, so
a setting dropped or changed in the generator fails here.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.render.gitops.test_argocd import _render_template_patch
from tests.render.repos import REPOS, build_overlay, read_yaml, render
from tests.tools import REPO, copy_inputs, require_kustomize

# docs/gitops.md, "ApplicationSet": every sync option we ship, and why. A new option must be
# documented (and added here); a removed one fails.
SYNC_OPTIONS = {
    "ServerSideApply=true": "job manifests can exceed the 256 KiB last-applied annotation; "
    "fields Kueue or the operator set stay theirs",
    "RespectIgnoreDifferences=true": "a sync must not write back the fields we ignore "
    "(re-suspending a job Kueue admitted)",
    "ApplyOutOfSyncOnly=true": "finished, immutable jobs are never re-applied",
    "PruneLast=true": "a renamed job's new version exists before the old one is deleted",
    "PrunePropagationPolicy=foreground": "a pruned job is gone only once its pods (GPUs) are",
    "FailOnSharedResource=true": "two Applications must not fight over one job",
    "CreateNamespace=false": "namespaces (quotas, LocalQueues, RBAC) are the platform's",
}
# Options that would re-run or kill jobs (trap 2) or create namespaces behind the platform.
FORBIDDEN_OPTIONS = ("Replace=true", "CreateNamespace=true", "Force=true")
# The kinds the renderer emits (docs/gitops.md, AppProject): everything else is denied.
DOCUMENTED_KINDS = {
    ("", "ConfigMap"),
    ("", "PersistentVolumeClaim"),
    ("", "Service"),
    ("kubeflow.org", "PyTorchJob"),
    ("monitoring.coreos.com", "ServiceMonitor"),
    ("trainer.kubeflow.org", "TrainJob"),
    ("trainer.kubeflow.org", "TrainingRuntime"),
}
# docs/gitops.md: the only cluster-scoped kind, on Argo CD clusters running Trainer v2.
CLUSTER_SCOPED = {("trainer.kubeflow.org", "ClusterTrainingRuntime")}
# Argo CD's in-cluster address, what a profile without `server` or `destinationName` means.
IN_CLUSTER = "https://kubernetes.default.svc"
# The job kinds whose Kueue/operator-owned fields must not be drift.
JOB_KINDS = ("PyTorchJob", "TFJob", "MPIJob")
# The shipped repository with its Flux cluster's `prune` turned off: both repositories prune
# on Flux, so without it a Kustomization ignoring the profile would pass.
FLUX_NO_PRUNE = "shipped-flux-no-prune"
LABELS = [*sorted(REPOS), FLUX_NO_PRUNE]


@functools.cache
def _rendered(label: str, tmp: Path) -> Path:
    if label != FLUX_NO_PRUNE:
        return render(copy_inputs(REPOS[label], tmp / label))
    root = copy_inputs(REPOS["shipped"], tmp / label)
    for path in sorted((root / "clusters").glob("*.yaml")):
        profile = read_yaml(path)
        if profile["delivery"]["tool"] == "flux":
            profile["delivery"]["prune"] = False
            path.write_text(yaml.safe_dump(profile))
    return render(root)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("delivery")
    return lambda label: _rendered(label, tmp)


def profiles(root: Path) -> dict[str, dict[str, Any]]:
    return {p.stem: read_yaml(p) for p in sorted((root / "clusters").glob("*.yaml"))}


def settings(root: Path) -> dict[str, Any]:
    path = root / "trainops.yaml"
    return dict(read_yaml(path) or {}) if path.is_file() else {}


def by_tool(root: Path, tool: str) -> dict[str, dict[str, Any]]:
    return {n: p for n, p in profiles(root).items() if p["delivery"]["tool"] == tool}


def applicationset(root: Path) -> dict[str, Any]:
    doc: dict[str, Any] = read_yaml(root / "gitops" / "argocd" / "applicationset.yaml")
    return doc


def test_both_repositories_deliver_with_both_tools(rendered: Any) -> None:
    """Without an Argo CD and a Flux cluster, the tests below would check nothing."""
    tools = {p["delivery"]["tool"] for label in LABELS for p in profiles(rendered(label)).values()}
    assert tools == {"argocd", "flux"}
    prunes = {
        p["delivery"].get("prune", True)
        for label in LABELS
        for p in by_tool(rendered(label), "flux").values()
    }
    assert prunes == {True, False}


# ----------------------------------------------------------------------------- Argo CD


@pytest.mark.parametrize("label", LABELS)
def test_sync_options_are_the_documented_ones(rendered: Any, label: str) -> None:
    template = applicationset(rendered(label))["spec"]["template"]["spec"]
    options = template["syncPolicy"]["syncOptions"]
    for option, reason in SYNC_OPTIONS.items():
        assert option in options, f"{option} missing: {reason}"
    assert sorted(options) == sorted(SYNC_OPTIONS), "an undocumented sync option"
    for option in FORBIDDEN_OPTIONS:
        assert option not in options


def test_docs_explain_every_sync_option() -> None:
    """docs/gitops.md has a row for each option we ship (the docs stay true)."""
    text = (REPO / "docs" / "gitops.md").read_text(encoding="utf-8")
    for option in SYNC_OPTIONS:
        assert re.search(rf"^\| `{re.escape(option)}` \|", text, re.MULTILINE), option


@pytest.mark.parametrize("label", LABELS)
def test_applicationset_syncs_each_argocd_cluster_overlay(rendered: Any, label: str) -> None:
    """One Application per Argo CD cluster, `overlays/<cluster>` of this repository at the
    configured revision; prune and selfHeal from the profile; never allowEmpty (a broken
    render that empties an overlay must not prune every job)."""
    root = rendered(label)
    spec = applicationset(root)["spec"]
    repo = settings(root)
    elements = spec["generators"][0]["list"]["elements"]
    clusters = by_tool(root, "argocd")
    assert [e["cluster"] for e in elements] == sorted(clusters)
    template = spec["template"]
    assert template["metadata"]["name"] == "training-{{ .cluster }}"
    assert template["spec"]["source"] == {
        "path": "overlays/{{ .cluster }}",
        "repoURL": repo.get("repoURL", template["spec"]["source"]["repoURL"]),
        "targetRevision": repo.get("revision", "main"),
    }
    assert template["spec"]["project"] == repo.get("argocdProject", "training")
    for element in elements:
        delivery = clusters[element["cluster"]]["delivery"]
        patched = _render_template_patch(spec["templatePatch"], element)["spec"]
        assert patched["syncPolicy"]["automated"] == {
            "prune": delivery.get("prune", True),
            "selfHeal": delivery.get("selfHeal", False),
            "allowEmpty": False,
        }
        if "destinationName" in delivery:
            assert patched["destination"] == {"name": delivery["destinationName"]}
        else:
            assert patched["destination"] == {"server": delivery.get("server", IN_CLUSTER)}


@pytest.mark.parametrize("label", LABELS)
def test_kueue_and_operator_fields_are_not_drift(rendered: Any, label: str) -> None:
    """`/status` and `/spec/runPolicy/suspend` of every job kind are ignored (and, with
    RespectIgnoreDifferences, never written back); pod-template nodeSelector/tolerations
    only on Kueue clusters, where Kueue injects its flavor's."""
    root = rendered(label)
    spec = applicationset(root)["spec"]
    clusters = by_tool(root, "argocd")
    for element in spec["generators"][0]["list"]["elements"]:
        patched = _render_template_patch(spec["templatePatch"], element)["spec"]
        ignores = {i["kind"]: i for i in patched["ignoreDifferences"]}
        profile = clusters[element["cluster"]]
        trainer_v2 = profile.get("operator", {}).get("name") == "trainer"
        assert set(ignores) == set(JOB_KINDS) | ({"TrainJob"} if trainer_v2 else set())
        kueue = profile.get("scheduler", {}).get("name") == "kueue"
        if trainer_v2:
            # Kueue flips suspend; the Trainer's webhook stamps each runtime patch's time;
            # other managers' runtime patches are theirs.
            entry = ignores.pop("TrainJob")
            assert {"/status", "/spec/suspend"} <= set(entry["jsonPointers"])
            jq = entry["jqPathExpressions"]
            assert ".spec.runtimePatches[]?.time" in jq
            assert any("select(.manager !=" in e for e in jq)
        for kind, entry in ignores.items():
            assert entry["group"] == "kubeflow.org"
            assert {"/status", "/spec/runPolicy/suspend"} <= set(entry["jsonPointers"]), kind
            jq = " ".join(entry.get("jqPathExpressions", []))
            assert ("nodeSelector" in jq and "tolerations" in jq) is kueue, kind


@pytest.mark.parametrize("label", LABELS)
def test_applicationset_keeps_jobs_when_applications_go(rendered: Any, label: str) -> None:
    """Deleting an Application must not kill running jobs; server-side diff so operator
    defaults are not drift; bounded retries; Argo CD's default history, stated."""
    spec = applicationset(rendered(label))["spec"]
    assert spec["syncPolicy"]["preserveResourcesOnDeletion"] is True
    template = spec["template"]
    compare = template["metadata"]["annotations"]["argocd.argoproj.io/compare-options"]
    assert "ServerSideDiff=true" in compare.split(",")
    assert template["spec"]["revisionHistoryLimit"] == 10
    assert template["spec"]["syncPolicy"]["retry"] == {
        "limit": 5,
        "backoff": {"duration": "30s", "factor": 2, "maxDuration": "10m"},
    }
    assert spec["goTemplateOptions"] == ["missingkey=error"]


def _as_set(dicts: list[dict[str, str]]) -> list[tuple[tuple[str, str], ...]]:
    return sorted(tuple(sorted(d.items())) for d in dicts)


@pytest.mark.parametrize("label", LABELS)
def test_appproject_fences_repo_namespaces_and_kinds(rendered: Any, label: str) -> None:
    """Our repository only; each Argo CD cluster gets its own namespaces only; nothing
    cluster-scoped; exactly the namespaced kinds the renderer emits — and every object the
    real kustomize builds from each overlay is one of them."""
    require_kustomize()
    root = rendered(label)
    doc = read_yaml(root / "gitops" / "argocd" / "appproject.yaml")
    spec = doc["spec"]
    repo_url = settings(root).get("repoURL")
    if repo_url:
        assert spec["sourceRepos"] == [repo_url]
    assert len(spec["sourceRepos"]) == 1 and "*" not in spec["sourceRepos"][0]
    wanted = []
    for profile in by_tool(root, "argocd").values():
        delivery = profile["delivery"]
        where = (
            {"name": delivery["destinationName"]}
            if "destinationName" in delivery
            else {"server": delivery.get("server", IN_CLUSTER)}
        )
        wanted += [{**where, "namespace": ns} for ns in profile["namespaces"]]
    # The order is the generator's; the set is the rule.
    assert _as_set(spec["destinations"]) == _as_set(wanted)
    v2 = any(
        p.get("operator", {}).get("name") == "trainer" for p in by_tool(root, "argocd").values()
    )
    cluster_scoped = {(k["group"], k["kind"]) for k in spec["clusterResourceWhitelist"]}
    assert cluster_scoped == (CLUSTER_SCOPED if v2 else set())
    allowed = {(k["group"], k["kind"]) for k in spec["namespaceResourceWhitelist"]}
    assert allowed == DOCUMENTED_KINDS
    argocd = by_tool(root, "argocd")
    for cluster in profiles(root):
        # Flux has no allow-list: its v2 clusters' runtimes need no AppProject entry.
        here = allowed | (cluster_scoped if cluster in argocd else CLUSTER_SCOPED)
        for obj in build_overlay(root, cluster):
            group = obj["apiVersion"].rpartition("/")[0]
            assert (group, obj["kind"]) in here, (cluster, obj["kind"])
            assert obj["kind"] != "Namespace"


# ----------------------------------------------------------------------------- Flux


@pytest.mark.parametrize("label", LABELS)
def test_flux_kustomization_per_cluster(rendered: Any, label: str) -> None:
    """`training-<cluster>` syncs `./overlays/<cluster>`; prune from the profile; wait for
    health; never force (trap 2: recreating on an immutable-field error re-runs jobs);
    timeout, interval and retry as documented; CEL health for each job kind, no
    `inProgress` (Flux evaluates it first and a running job keeps Created=True)."""
    root = rendered(label)
    flux = by_tool(root, "flux")
    assert sorted(p.name for p in (root / "gitops" / "flux").iterdir()) == sorted(flux)
    for name, profile in flux.items():
        ks = read_yaml(root / "gitops" / "flux" / name / "training.yaml")
        assert ks["kind"] == "Kustomization"
        assert ks["metadata"]["name"] == f"training-{name}"
        spec = ks["spec"]
        assert spec["path"] == f"./overlays/{name}"
        assert spec["prune"] is profile["delivery"].get("prune", True)
        assert spec["wait"] is True
        assert spec["force"] is False
        assert (spec["timeout"], spec["interval"], spec["retryInterval"]) == ("15m", "10m", "2m")
        assert spec["sourceRef"] == {"kind": "GitRepository", "name": "trainops"}
        assert sorted(e["kind"] for e in spec["healthCheckExprs"]) == sorted(
            (*JOB_KINDS, "TrainJob")
        )
        for entry in spec["healthCheckExprs"]:
            assert set(entry) == {"apiVersion", "kind", "current", "failed"}


@pytest.mark.parametrize("label", LABELS)
def test_flux_source_ships_only_manifests(rendered: Any, label: str) -> None:
    """The GitRepository follows the configured revision and keeps only base/ and overlays/
    in the artifact (the cluster needs neither trainer/ nor tests/)."""
    root = rendered(label)
    repo = settings(root)
    for name in by_tool(root, "flux"):
        source = read_yaml(root / "gitops" / "flux" / name / "source.yaml")
        assert source["kind"] == "GitRepository"
        assert source["metadata"]["name"] == "trainops"
        spec = source["spec"]
        if "repoURL" in repo:
            assert spec["url"] == repo["repoURL"]
        assert spec["ref"] == {"branch": repo.get("revision", "main")}
        assert spec["ignore"].split() == ["/*", "!/base/", "!/overlays/"]


@pytest.mark.parametrize("label", LABELS)
def test_nothing_in_gitops_creates_namespaces_or_forces(rendered: Any, label: str) -> None:
    """No namespace creation (the platform's), no Replace / force anywhere we ship."""
    for path in sorted((rendered(label) / "gitops").rglob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        for forbidden in (*FORBIDDEN_OPTIONS, "force: true", "kind: Namespace"):
            assert forbidden not in text, (path.name, forbidden)
