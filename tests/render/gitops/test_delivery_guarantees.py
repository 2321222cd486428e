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

from tests.render.gitops.plurals import PLURALS
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
# docs/gitops.md, "Who applies": each Argo CD Application's destination namespace, where the
# platform creates the delivery account its syncs impersonate (nothing is delivered there).
DELIVERY_NAMESPACE = "trainops-delivery"
# Options that would re-run or kill jobs (trap 2) or create namespaces behind the platform.
FORBIDDEN_OPTIONS = ("Replace=true", "CreateNamespace=true", "Force=true")
# Kinds every job of the fixture repositories renders (docs/gitops.md).
JOB_OBJECT_KINDS = {
    ("", "Service"),
    ("kubeflow.org", "MPIJob"),
    ("kubeflow.org", "PyTorchJob"),
    ("kubeflow.org", "TFJob"),
    ("monitoring.coreos.com", "ServiceMonitor"),
    ("networking.k8s.io", "NetworkPolicy"),
}
# What a training repository must never deliver: the platform team's by other means.
NEVER_DELIVERED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
# What applying with server-side apply, pruning and health-checking needs; nothing more.
APPLY_VERBS = {"create", "delete", "get", "list", "patch", "update", "watch"}
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
        wanted += [
            {**where, "namespace": ns} for ns in [*profile["namespaces"], DELIVERY_NAMESPACE]
        ]
    # The order is the generator's; the set is the rule.
    assert _as_set(spec["destinations"]) == _as_set(wanted)
    # Exactly the kinds the Argo CD clusters' overlays deliver, by scope (platform manifests
    # are the only cluster-scoped objects); never a namespace, a CRD or RBAC.
    namespaced = {(k["group"], k["kind"]) for k in spec["namespaceResourceWhitelist"]}
    cluster_wide = {(k["group"], k["kind"]) for k in spec["clusterResourceWhitelist"]}
    built_namespaced: set[tuple[str, str]] = set()
    built_cluster_wide: set[tuple[str, str]] = set()
    for cluster in by_tool(root, "argocd"):
        for obj in build_overlay(root, cluster):
            kind = (obj["apiVersion"].rpartition("/")[0], obj["kind"])
            (built_namespaced if "namespace" in obj["metadata"] else built_cluster_wide).add(kind)
    assert namespaced == built_namespaced
    assert cluster_wide == built_cluster_wide
    assert namespaced >= JOB_OBJECT_KINDS
    assert {k for _, k in namespaced | cluster_wide}.isdisjoint(NEVER_DELIVERED)


# ----------------------------------------------------------------------------- Flux


@pytest.mark.parametrize("label", LABELS)
def test_flux_kustomization_per_cluster(rendered: Any, label: str) -> None:
    """`training-<cluster>` syncs the jobs, `./overlays/<cluster>/_jobs`, after
    `training-<cluster>-platform` (`./overlays/<cluster>/_platform`: the platform manifests and
    Trainer v2 runtimes) when the cluster has any; prune from the profile; wait for health;
    never force (trap 2: recreating on an immutable-field error re-runs jobs); timeout,
    interval and retry as documented; CEL health for each job kind, no `inProgress` (Flux
    evaluates it first and a running job keeps Created=True)."""
    root = rendered(label)
    flux = by_tool(root, "flux")
    assert sorted(p.name for p in (root / "gitops" / "flux").iterdir()) == sorted(flux)
    for name, profile in flux.items():
        ks = read_yaml(root / "gitops" / "flux" / name / "training.yaml")
        assert ks["kind"] == "Kustomization"
        assert ks["metadata"]["name"] == f"training-{name}"
        spec = ks["spec"]
        assert spec["path"] == f"./overlays/{name}/_jobs"
        platform_file = root / "gitops" / "flux" / name / "platform.yaml"
        trainer_v2 = profile.get("operator", {}).get("name") == "trainer"
        if (root / "clusters" / name / "manifests").is_dir() or trainer_v2:
            platform = read_yaml(platform_file)
            assert platform["metadata"]["name"] == f"training-{name}-platform"
            assert platform["spec"]["path"] == f"./overlays/{name}/_platform"
            assert platform["spec"]["wait"] is True  # Ready means applied and healthy
            assert spec["dependsOn"] == [{"name": f"training-{name}-platform"}]
            assert "healthCheckExprs" not in platform["spec"]
            shared = ("prune", "force", "timeout", "interval", "serviceAccountName", "sourceRef")
            assert {k: platform["spec"][k] for k in shared} == {k: spec[k] for k in shared}
        else:
            assert not platform_file.exists()
            assert "dependsOn" not in spec
        assert spec["prune"] is profile["delivery"].get("prune", True)
        assert spec["wait"] is True
        assert spec["force"] is False
        assert (spec["timeout"], spec["interval"], spec["retryInterval"]) == ("15m", "10m", "2m")
        assert spec["sourceRef"] == {"kind": "GitRepository", "name": "trainops"}
        # One per GroupKind: Flux keys them by GroupKind and a second entry for one is a
        # terminal error (fluxcd/pkg runtime/cel NewStatusReader); MPIJob v2beta1 included.
        served = [(e["apiVersion"], e["kind"]) for e in spec["healthCheckExprs"]]
        assert sorted(served) == sorted(
            [
                *(("kubeflow.org/v1", k) for k in JOB_KINDS),
                ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
            ]
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


@pytest.mark.parametrize("label", LABELS)
def test_flux_applies_as_a_fenced_account(rendered: Any, label: str) -> None:
    """docs/security.md: the Kustomization impersonates a service account of the Flux
    namespace that may write exactly the (group, resource)s the overlay builds, only in the
    namespaces it builds them in, no other kind, no other namespace; a ClusterRole only for
    the cluster-scoped kinds of the platform manifests (queues, flavors), exactly those."""
    require_kustomize()
    root = rendered(label)
    flux_ns = settings(root).get("fluxNamespace", "flux-system")
    for name in by_tool(root, "flux"):
        ks = read_yaml(root / "gitops" / "flux" / name / "training.yaml")
        account = ks["spec"]["serviceAccountName"]
        rbac = list(yaml.safe_load_all((root / "gitops" / "flux" / name / "rbac.yaml").read_text()))
        kinds = {o["kind"] for o in rbac}
        built = build_overlay(root, name)
        cluster_scoped = {
            (o["apiVersion"].rpartition("/")[0], PLURALS[o["kind"]])
            for o in built
            if "namespace" not in o["metadata"]
        }
        namespaced_rbac = {"ServiceAccount", "Role", "RoleBinding"}
        cluster_rbac = {"ClusterRole", "ClusterRoleBinding"} if cluster_scoped else set()
        assert kinds == namespaced_rbac | cluster_rbac, kinds
        for role in (o for o in rbac if o["kind"] == "ClusterRole"):
            granted = {(g, r) for rule in role["rules"] for g in rule["apiGroups"]
                       for r in rule["resources"]}  # fmt: skip
            assert granted == cluster_scoped
        accounts = [o for o in rbac if o["kind"] == "ServiceAccount"]
        assert [(a["metadata"]["namespace"], a["metadata"]["name"]) for a in accounts] == [
            (flux_ns, account)
        ]
        roles = {o["metadata"]["namespace"]: o for o in rbac if o["kind"] == "Role"}
        bound: set[str] = set()
        for binding in (o for o in rbac if o["kind"] == "RoleBinding"):
            subject = {"kind": "ServiceAccount", "name": account, "namespace": flux_ns}
            assert binding["subjects"] == [subject]
            assert (
                binding["roleRef"]["name"]
                == roles[binding["metadata"]["namespace"]]["metadata"]["name"]
            )
            bound.add(binding["metadata"]["namespace"])
        needed: dict[str, set[tuple[str, str]]] = {}
        for obj in built:
            if "namespace" not in obj["metadata"]:
                continue
            group = obj["apiVersion"].rpartition("/")[0]
            needed.setdefault(obj["metadata"]["namespace"], set()).add(
                (group, PLURALS[obj["kind"]])
            )
        assert set(roles) == bound == set(needed)
        for namespace, role in roles.items():
            granted = set()
            for rule in role["rules"]:
                assert set(rule["verbs"]) == APPLY_VERBS
                granted |= {(g, r) for g in rule["apiGroups"] for r in rule["resources"]}
            assert granted == needed[namespace], namespace


@pytest.mark.parametrize("label", sorted(REPOS))
def test_each_job_has_a_network_policy_fencing_its_pods(rendered: Any, label: str) -> None:
    """docs/security.md: only the job's own pods reach its pods (c10d store, NCCL); the
    profile's monitoring namespace (default `monitoring`) reaches the metrics port only;
    no pod mounts a service account token."""
    require_kustomize()
    root = rendered(label)
    for name, profile in profiles(root).items():
        built = build_overlay(root, name)
        policies = {
            (o["metadata"]["namespace"], o["metadata"]["name"]): o
            for o in built
            if o["kind"] == "NetworkPolicy"
        }
        for job in (o for o in built if o["kind"] == "PyTorchJob"):
            policy = policies[(job["metadata"]["namespace"], job["metadata"]["name"])]["spec"]
            assert policy["policyTypes"] == ["Ingress"]
            selector = policy["podSelector"]["matchLabels"]
            own, metrics = policy["ingress"]
            assert own == {"from": [{"podSelector": {"matchLabels": selector}}]}
            monitoring = profile.get("monitoringNamespace", "monitoring")
            assert metrics["from"] == [
                {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": monitoring}}}
            ]
            for replica in job["spec"]["pytorchReplicaSpecs"].values():
                template = replica["template"]
                labels = template["metadata"]["labels"]
                assert selector.items() <= labels.items()
                ports = [
                    p["containerPort"]
                    for c in template["spec"]["containers"]
                    for p in c.get("ports", [])
                    if p.get("name") == "metrics"
                ]
                assert [p["port"] for p in metrics["ports"]] == ports
                assert template["spec"]["automountServiceAccountToken"] is False
