"""argocd_port.py against Argo CD v3.5.1's own unit tests for the ported functions, translated
into vectors (the upstream test names are the parameter ids' groups):

- `pkg/apis/application/v1alpha1/types_test.go`: `TestGlobMatch`,
  `TestAppProject_IsGroupKindPermitted`, `TestAppProject_IsSourcePermitted`,
  `TestAppProject_IsNegatedSourcePermitted`, `TestAppProject_IsDestinationPermitted`,
  `TestAppProject_IsNegatedDestinationPermitted`,
  `TestAppProject_IsDestinationPermitted_PermitOnlyProjectScopedClusters`;
- `util/argo/argo_test.go`: `TestGetDestinationCluster` and `TestValidatePermissions` (their
  database mocks as `Cluster`s);
- `util/settings/impersonation_test.go`: `TestDeriveServiceAccountToImpersonate`;
- `applicationset/controllers/template/patch_test.go`: `Test_ApplyTemplatePatch`, `TestError`;
- `gitops-engine/pkg/sync/syncwaves/waves_test.go`: `TestWave`, with issue 33's inputs.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.conformance import argocd_port
from tests.conformance.argocd_port import Cluster, Destination

DEFAULT = "https://kubernetes.default.svc"
EKS = "https://eks-cluster-endpoint.ap-southeast-1.eks.amazonaws.com"


def _project(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "proj"}, "spec": spec}


SOURCES = [
    (["*"], "https://github.com/argoproj/test.git", True),
    (["https://github.com/argoproj/test.git"], "https://github.com/argoproj/test.git", True),
    (["ssh://git@GITHUB.com:argoproj/test"], "ssh://git@github.com:argoproj/test", True),
    (["https://github.com/argoproj/*"], "https://github.com/argoproj/argoproj.git", True),
    (["https://github.com/test1/test.git", "https://github.com/test2/test.git"],
     "https://github.com/test2/test.git", True),
    (["https://github.com/argoproj/test1.git"], "https://github.com/argoproj/test2.git", False),
    (["https://github.com/argoproj/*.git"], "https://github.com/argoproj1/test2.git", False),
    (["https://github.com/argoproj/foo"], "https://github.com/argoproj/foo1", False),
    (["https://gitlab.com/group/*"], "https://gitlab.com/group/repo/owner", False),
    (["https://gitlab.com/group/*/*"], "https://gitlab.com/group/repo/owner", True),
    (["https://gitlab.com/group/*/*/*"], "https://gitlab.com/group/sub-group/repo/owner", True),
    (["https://gitlab.com/group/**"], "https://gitlab.com/group/sub-group/repo/owner", True),
    # TestAppProject_IsNegatedSourcePermitted
    (["!https://github.com/argoproj/test.git"], "https://github.com/argoproj/test.git", False),
    (["!ssh://git@GITHUB.com:argoproj/test"], "ssh://git@github.com:argoproj/test", False),
    (["!https://github.com/argoproj/*"], "https://github.com/argoproj/argoproj.git", False),
    (["https://github.com/test1/test.git", "!https://github.com/test2/test.git"],
     "https://github.com/test2/test.git", False),
    (["!https://github.com/argoproj/foo*"], "https://github.com/argoproj/foo1", False),
    (["!https://gitlab.com/group/*/*"], "https://gitlab.com/group/repo/owner", False),
    (["!https://gitlab.com/group/*/*/*"], "https://gitlab.com/group/sub-group/repo/owner", False),
    (["!https://gitlab.com/group/**"], "https://gitlab.com/group/sub-group/repo/owner", False),
    (["*"], "https://github.com/argoproj/test.git", True),
    (["https://github.com/argoproj/test1.git", "*"], "https://github.com/argoproj/test2.git", True),
    (["!https://github.com/argoproj/*.git", "*"], "https://github.com/argoproj1/test2.git", True),
]  # fmt: skip


@pytest.mark.parametrize(("repos", "source", "permitted"), SOURCES)
def test_is_source_permitted(repos: list[str], source: str, permitted: bool) -> None:
    assert argocd_port.is_source_permitted(_project(sourceRepos=repos), source) is permitted


def _dst(server: str = "", namespace: str = "", name: str = "") -> dict[str, str]:
    return {"server": server, "namespace": namespace, "name": name}


DESTINATIONS = [
    ([_dst(DEFAULT, "default")], _dst(DEFAULT, "default"), True),
    ([_dst(DEFAULT, "default")], _dst(DEFAULT, "kube-system"), False),
    ([_dst("https://my-cluster", "default")], _dst(DEFAULT, "default"), False),
    ([_dst(DEFAULT, "*")], _dst(DEFAULT, "kube-system"), True),
    ([_dst("https://*.default.svc", "default")], _dst(DEFAULT, "default"), True),
    ([_dst("https://team1-*", "default")], _dst("https://test2-dev-cluster", "default"), False),
    ([_dst(DEFAULT, "test-*")], _dst(DEFAULT, "test-foo"), True),
    ([_dst(DEFAULT, "test-*")], _dst(DEFAULT, "test"), False),
    ([_dst("*", "*")], _dst(DEFAULT, "test"), True),
    ([_dst("", "*", "test")], _dst("", "test", "test"), True),
    ([_dst("", "*", "test2")], _dst("", "test", "test"), False),
    ([_dst(DEFAULT, "!{kube-system,argocd}", "host-cluster"),
      _dst(EKS, "*", "destination-cluster-01")], _dst(EKS, "kube-system"), True),
    # TestAppProject_IsNegatedDestinationPermitted
    ([_dst("!" + DEFAULT, "default")], _dst(DEFAULT, "default"), False),
    ([_dst(DEFAULT, "!default")], _dst(DEFAULT, "kube-system"), True),
    ([_dst("!https://my-cluster", "default")], _dst(DEFAULT, "default"), True),
    ([_dst("!" + DEFAULT, "*")], _dst(DEFAULT, "kube-system"), False),
    ([_dst("!https://*.default.svc", "default")], _dst(DEFAULT, "default"), False),
    ([_dst("!https://team1-*", "default")], _dst("https://test2-dev-cluster", "default"), True),
    ([_dst(DEFAULT, "!test-*")], _dst(DEFAULT, "test-foo"), False),
    ([_dst(DEFAULT, "!test-*")], _dst(DEFAULT, "test"), True),
    ([_dst("", "*", "!test")], _dst("", "test", "test"), False),
    ([_dst("", "*", "!test2")], _dst("", "test", "test"), True),
    ([_dst("*", "kube-system"), _dst("*", "!kube-system")], _dst(DEFAULT, "kube-system"), False),
    ([_dst("*", "*"), _dst("*", "!kube-system")], _dst(DEFAULT, "kube-system"), False),
    ([_dst(DEFAULT, "*"), _dst("!" + DEFAULT, "*")], _dst(DEFAULT, "kube-system"), False),
    ([_dst("*", "*"), _dst("!" + DEFAULT, "kube-system")], _dst(DEFAULT, "kube-system"), False),
    ([_dst("*", "*"), _dst("!" + DEFAULT, "kube-system"), _dst("*", "!kube-system")],
     _dst(DEFAULT, "kube-system"), False),
    ([_dst("*", "*"), _dst("!" + DEFAULT, "kube-system"), _dst("*", "!kube-system")],
     _dst(DEFAULT, "default"), True),
    ([_dst("*", "*"), _dst("!" + DEFAULT, "kube-system"), _dst("*", "!kube-system")],
     _dst("https://test-dev-cluster", "kube-system"), False),
    ([_dst("", "*", "test"), _dst("", "*", "!test")], _dst("", "test", "test"), False),
    ([_dst("*", "test"), _dst("!https://test-server", "other")],
     _dst("https://test-server", "test"), True),
    ([_dst("*", "*"), _dst("https://test-server", "!other")],
     _dst("https://other-test-server", "other"), True),
]  # fmt: skip


@pytest.mark.parametrize(("allowed", "dest", "permitted"), DESTINATIONS)
def test_is_destination_permitted(
    allowed: list[dict[str, str]], dest: dict[str, str], permitted: bool
) -> None:
    project = _project(destinations=allowed)
    cluster = Cluster(dest["server"], dest["name"])
    assert (
        argocd_port.is_destination_permitted(project, cluster, dest["namespace"], []) is permitted
    )


# TestAppProject_IsDestinationPermitted_PermitOnlyProjectScopedClusters
SCOPED = [
    ([_dst("https://team1-*", "default")], _dst("https://team1-something.com", "default"), [],
     False),
    ([_dst("https://my-cluster.123.com", "default")], _dst("https://my-cluster.123.com", "default"),
     [Cluster("https://my-cluster.123.com", project="proj")], True),
    ([_dst("https://my-cluster.123.com", "default")],
     _dst("https://some-other-cluster.example.com", "default"),
     [Cluster("https://my-cluster.123.com", project="proj")], False),
    ([_dst("", "default", "some-server")], _dst("", "default", "some-server"), [], False),
    ([_dst("", "default", "some-other-server")], _dst("", "default", "some-other-server"),
     [Cluster("", "some-other-server", project="proj")], True),
    ([_dst("", "default", "some-server")], _dst("", "default", "some-other-server"),
     [Cluster("", "some-server", project="proj")], False),
]  # fmt: skip


@pytest.mark.parametrize(("allowed", "dest", "clusters", "permitted"), SCOPED)
def test_permit_only_project_scoped_clusters(
    allowed: list[dict[str, str]], dest: dict[str, str], clusters: list[Cluster], permitted: bool
) -> None:
    project = _project(destinations=allowed, permitOnlyProjectScopedClusters=True)
    cluster = Cluster(dest["server"], dest["name"])
    assert argocd_port.is_destination_permitted(project, cluster, "default", clusters) is permitted


def test_get_destination_cluster() -> None:
    """TestGetDestinationCluster."""
    local, minikube = (
        Cluster("https://127.0.0.1:6443"),
        Cluster("https://127.0.0.1:6443", "minikube"),
    )
    assert (
        argocd_port.destination_cluster(_dst("https://127.0.0.1:6443", "default"), [local]) == local
    )
    assert (
        argocd_port.destination_cluster({"name": "minikube"}, [minikube]).server == minikube.server
    )
    cases = [
        (_dst("https://127.0.0.1:6443", "default", "minikube"), [minikube],
         "application destination can't have both name and server defined:"
         " minikube https://127.0.0.1:6443"),
        ({"name": "minikube"}, [], "there are no clusters with this name: minikube"),
        ({"name": "dind"},
         [Cluster("https://127.0.0.1:2443", "dind"), Cluster("https://127.0.0.1:8443", "dind")],
         "there are 2 clusters with the same name: [https://127.0.0.1:2443 https://127.0.0.1:8443]"),
    ]  # fmt: skip
    for destination, clusters, message in cases:
        with pytest.raises(ValueError) as raised:
            argocd_port.destination_cluster(destination, clusters)
        assert str(raised.value) == message


def test_application_conditions_check_the_source_and_resolve_the_name() -> None:
    """ValidatePermissions: a repo the project does not list, a destination with both name
    and server, and a name no cluster has are conditions (issue 33: the port skipped them)."""
    project = _project(sourceRepos=["https://git.example.com/ml/*"],
                       destinations=[_dst("*", "ns", "*")])  # fmt: skip
    clusters = [Cluster("https://a.example:6443", "a")]

    def app(repo: str, destination: dict[str, str]) -> dict[str, Any]:
        source = {"repoURL": repo, "path": "overlays/a", "targetRevision": "main"}
        return {"spec": {"project": "proj", "source": source, "destination": destination}}

    ok = app("https://git.example.com/ml/trainops.git", {"name": "a", "namespace": "ns"})
    assert argocd_port.application_conditions(ok, project, clusters) == []
    other = app("https://git.example.com/other/x.git", {"name": "a", "namespace": "ns"})
    assert argocd_port.application_conditions(other, project, clusters) == [
        "application repo https://git.example.com/other/x.git is not permitted in project 'proj'"
    ]
    both = app(
        ok["spec"]["source"]["repoURL"],
        {"name": "a", "server": clusters[0].server, "namespace": "ns"},
    )
    assert "both name and server" in argocd_port.application_conditions(both, project, clusters)[0]
    unknown = app(ok["spec"]["source"]["repoURL"], {"name": "b", "namespace": "ns"})
    assert argocd_port.application_conditions(unknown, project, clusters) == [
        "there are no clusters with this name: b"
    ]
    no_path = app(ok["spec"]["source"]["repoURL"], {"name": "a", "namespace": "ns"})
    del no_path["spec"]["source"]["path"]
    assert "spec.source.path" in argocd_port.application_conditions(no_path, project, clusters)[0]


def _impersonate(server: str, namespace: str, account: str, dest_ns: str = "dest-ns",
                 app_ns: str = "") -> str:  # fmt: skip
    project = _project(destinationServiceAccounts=[
        {"server": server, "namespace": namespace, "defaultServiceAccount": account}])  # fmt: skip
    app = {
        "spec": {"destination": {"server": "https://cluster-api.example.com", "namespace": dest_ns}}
    }
    return argocd_port.impersonated_account(project, app, "https://cluster-api.example.com", app_ns)


def test_derive_service_account_to_impersonate() -> None:
    """TestDeriveServiceAccountToImpersonate, every subtest."""
    api = "https://cluster-api.example.com"
    assert _impersonate(api, "dest-ns", "test-sa") == "system:serviceaccount:dest-ns:test-sa"
    assert _impersonate("*", "*", "test-sa", "any-ns") == "system:serviceaccount:any-ns:test-sa"
    assert (
        _impersonate(api, "dest-ns", "other-ns:deploy-sa")
        == "system:serviceaccount:other-ns:deploy-sa"
    )
    assert _impersonate("*", "", "test-sa", "", "app-ns") == "system:serviceaccount:app-ns:test-sa"
    assert _impersonate("https://other-server.com", "other-ns", "test-sa") == ""
    for account in ("bad*sa", "  "):
        with pytest.raises(ValueError, match="default service account contains invalid chars"):
            _impersonate("*", "*", account)
    with pytest.raises(ValueError, match="invalid glob pattern for destination server"):
        _impersonate("[", "dest-ns", "test-sa")
    with pytest.raises(ValueError, match="invalid glob pattern for destination namespace"):
        _impersonate("*", "[", "test-sa")
    project = _project(destinationServiceAccounts=[
        {"server": "*", "namespace": "dest-ns", "defaultServiceAccount": "first-sa"},
        {"server": "*", "namespace": "*", "defaultServiceAccount": "second-sa"}])  # fmt: skip
    app = {"spec": {"destination": {"server": api, "namespace": "dest-ns"}}}
    assert (
        argocd_port.impersonated_account(project, app, api, "")
        == "system:serviceaccount:dest-ns:first-sa"
    )
    assert (
        argocd_port.impersonated_account(_project(destinationServiceAccounts=[]), app, api, "")
        == ""
    )


GUESTBOOK: dict[str, Any] = {
    "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
    "metadata": {"name": "my-cluster-guestbook", "namespace": "namespace",
                 "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
    "spec": {"project": "default",
             "source": {"repoURL": "https://github.com/argoproj/argocd-example-apps.git",
                        "targetRevision": "HEAD", "path": "guestbook"},
             "destination": {"server": DEFAULT, "namespace": "guestbook"}},
}  # fmt: skip
PATCH_YAML = """
metadata:
  annotations:
    annotation-some-key: annotation-some-value
spec:
  source:
    helm:
      valueFiles:
        - values.test.yaml
        - values.big.yaml
  syncPolicy:
    automated:
      prune: true"""


def test_apply_template_patch() -> None:
    """Test_ApplyTemplatePatch ("patch with JSON" and "patch with YAML" are one patch here,
    parsed; "project field isn't overwritten") and TestError."""
    patched = argocd_port.apply_template_patch(GUESTBOOK, yaml.safe_load(PATCH_YAML))
    assert patched["metadata"]["annotations"] == {"annotation-some-key": "annotation-some-value"}
    assert patched["metadata"]["finalizers"] == GUESTBOOK["metadata"]["finalizers"]
    helm = {"valueFiles": ["values.test.yaml", "values.big.yaml"]}
    assert patched["spec"]["source"] == {**GUESTBOOK["spec"]["source"], "helm": helm}
    assert patched["spec"]["syncPolicy"] == {"automated": {"prune": True}}
    assert patched["spec"]["destination"] == GUESTBOOK["spec"]["destination"]
    kept = argocd_port.apply_template_patch(GUESTBOOK, {"spec": {"project": "my-project"}})
    assert kept == GUESTBOOK
    with pytest.raises(ValueError):
        argocd_port.apply_template_patch({}, yaml.safe_load("hello world"))


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, 0),
        ({"argocd.argoproj.io/sync-wave": "1"}, 1),
        ({"helm.sh/hook-weight": "1"}, 1),
        # Ours (issue 33): strconv.Atoi refuses what Python's int() reads; then the hook weight.
        ({"argocd.argoproj.io/sync-wave": " -1"}, 0),
        ({"argocd.argoproj.io/sync-wave": "1_0"}, 0),
        ({"argocd.argoproj.io/sync-wave": "\uff12"}, 0),
        ({"argocd.argoproj.io/sync-wave": "-2"}, -2),
        ({"argocd.argoproj.io/sync-wave": "x", "helm.sh/hook-weight": "3"}, 3),
    ],
)
def test_wave(annotations: dict[str, str], expected: int) -> None:
    """TestWave."""
    assert argocd_port.wave({"metadata": {"annotations": annotations}}) == expected


def test_resource_lists_use_filepath_match_not_gobwas() -> None:
    """isResourceInList: `{a,b}` is literal for kinds (filepath.Match), while destinations
    (globMatch) read it as alternatives."""
    project = _project(namespaceResourceWhitelist=[{"group": "*", "kind": "{Job,CronJob}"}])
    assert not argocd_port.is_group_kind_name_permitted(project, "batch", "Job", "j", True)
    dest = _project(destinations=[_dst("*", "{a,b}")])
    assert argocd_port.is_destination_matched(dest, Destination(DEFAULT, "", "a"))


def _spec(source: dict[str, str], destination: dict[str, str]) -> dict[str, Any]:
    return {"spec": {"project": "proj", "source": source, "destination": destination}}


CHART = {
    "repoURL": "http://some/where",
    "path": "",
    "chart": "somechart",
    "targetRevision": "1.4.1",
}
LOCAL = {"server": "https://127.0.0.1:6443", "namespace": "default"}
# TestValidatePermissions (util/argo/argo_test.go): source, destination, the project's repos
# and destinations, the clusters Argo CD knows, and what the single condition contains. The
# database mocks become `Cluster`s; "Destination cluster does not exist" is the real database's
# not-found error here, the mock's wording aside.
_VALIDATE_PERMISSIONS = [
    pytest.param({"repoURL": ""}, LOCAL, [], [], [], "are required", id="Empty Repo URL"),
    pytest.param({"repoURL": "http://some/where", "path": "", "chart": ""}, LOCAL, [], [], [],
                 "are required", id="Incomplete Path/Chart combo"),
    pytest.param({"repoURL": "http://some/where", "path": "", "chart": "somechart"}, LOCAL, [], [],
                 [], "is required if the manifest source is a helm chart",
                 id="Helm chart requires targetRevision"),
    pytest.param(CHART, {**LOCAL, "namespace": "testns"}, ["http://some/where/else"],
                 [_dst("*", "*")], [Cluster("https://127.0.0.1:6443", "test")],
                 "application repo http://some/where is not permitted",
                 id="Application source is not permitted in project"),
    pytest.param(CHART, {**LOCAL, "namespace": "testns"}, ["http://some/where"],
                 [_dst("*", "default")], [Cluster("https://127.0.0.1:6443", "test")],
                 "application destination", id="Application destination is not permitted"),
    pytest.param(CHART, LOCAL, ["http://some/where"], [_dst("*", "default")], [],
                 "error getting cluster by server", id="Destination cluster does not exist"),
    pytest.param(CHART, {"name": "does-not-exist", "namespace": "default"}, ["http://some/where"],
                 [_dst("*", "default")], [],
                 "there are no clusters with this name: does-not-exist",
                 id="Destination cluster name does not exist"),
]  # fmt: skip


VALIDATE_PERMISSIONS = [pytest.param(p.values, id=p.id) for p in _VALIDATE_PERMISSIONS]


@pytest.mark.parametrize("case", VALIDATE_PERMISSIONS)
def test_validate_permissions(case: tuple[Any, ...]) -> None:
    source, destination, repos, allowed, clusters, message = case
    project = _project(sourceRepos=repos, destinations=allowed)
    conditions = argocd_port.application_conditions(_spec(source, destination), project, clusters)
    assert len(conditions) == 1 and message in conditions[0], conditions


def test_validate_permissions_name_resolves_to_a_valid_server() -> None:
    """ "Destination cluster name resolves to valid server": no condition."""
    project = _project(sourceRepos=["http://some/where"], destinations=[_dst("*", "default")])
    app = _spec(CHART, {"name": "does-exist", "namespace": "default"})
    clusters = [Cluster("https://127.0.0.1:6443", "does-exist")]
    assert argocd_port.application_conditions(app, project, clusters) == []


@pytest.mark.parametrize(
    ("pattern", "value", "negation", "expected"),
    [
        ("foo", "foo", False, True), ("foo*", "foobar", False, True), ("foo*", "bar", False, False),
        ("*", "anything", False, True), ("!foo", "foo", True, False), ("!foo", "bar", True, True),
        ("!foo", "foo", False, False), ("!foo", "!foo", False, True),
    ],
)  # fmt: skip
def test_glob_match(pattern: str, value: str, negation: bool, expected: bool) -> None:
    """TestGlobMatch (types_test.go)."""
    assert argocd_port.glob_match(pattern, value, negation) is expected


def test_is_group_kind_permitted() -> None:
    """TestAppProject_IsGroupKindPermitted: an empty whitelist allows nothing, an absent one
    every namespaced kind; cluster-scoped kinds need a whitelist entry, optionally by name."""

    def gk(group: str, kind: str, name: str = "") -> dict[str, str]:
        return {"group": group, "kind": kind, **({"name": name} if name else {})}

    permitted = argocd_port.is_group_kind_name_permitted
    p1 = _project(
        namespaceResourceWhitelist=[], namespaceResourceBlacklist=[gk("apps", "Deployment")]
    )
    assert not permitted(p1, "apps", "ReplicaSet", "", True)
    assert not permitted(p1, "apps", "Deployment", "", True)
    p2 = _project(namespaceResourceWhitelist=[gk("apps", "ReplicaSet")],
                  namespaceResourceBlacklist=[gk("apps", "Deployment")])  # fmt: skip
    assert permitted(p2, "apps", "ReplicaSet", "", True)
    assert not permitted(p2, "apps", "Action", "", True)
    p3 = _project(clusterResourceBlacklist=[gk("", "Namespace")])
    assert not permitted(p3, "", "Namespace", "", False)
    p4 = _project(clusterResourceWhitelist=[gk("*", "*")], clusterResourceBlacklist=[gk("*", "*")])
    assert not permitted(p4, "", "Namespace", "", False)
    assert permitted(p4, "apps", "Action", "", True)
    p5 = _project(clusterResourceWhitelist=[], namespaceResourceWhitelist=[gk("*", "*")])
    assert not permitted(p5, "", "Namespace", "", False)
    assert permitted(p5, "apps", "Action", "", True)
    p6 = _project()
    assert not permitted(p6, "", "Namespace", "", False)
    assert permitted(p6, "apps", "Action", "", True)
    p7 = _project(clusterResourceWhitelist=[gk("", "Namespace", "team1-*")])
    assert not permitted(p7, "", "Namespace", "other-namespace", False)
    assert permitted(p7, "", "Namespace", "team1-namespace", False)
