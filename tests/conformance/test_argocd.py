"""Argo CD v3.5.1 over our output (ported logic: argocd_port.py, rbac_port.py): every
Application the ApplicationSet generates is admitted by the AppProject, may sync every object
its source builds, impersonates the delivery account, which Kubernetes RBAC lets apply exactly
those objects, and its sync waves apply what a job names before the job (issue 23, items 1
and 3)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance import argocd_port, discovery, rbac_port
from tests.conformance.gitops_repos import Rendered, labels_delivered_by, rendered
from tests.conformance.references import key, references
from tests.render.gitops.crdschema import crd_validator, errors
from tests.tools import require_kustomize, require_upstream
from trainops.jobspec.schemas import CLUSTER, default

pytestmark = pytest.mark.slow
LABELS = labels_delivered_by("argocd")
JOB_KINDS = {"PyTorchJob", "TFJob", "MPIJob", "TrainJob"}
# The profile's `delivery.server` default (clusterprofile.schema.json): Argo CD's own cluster.
DEFAULT_SERVER = default(CLUSTER, "delivery.server")


def applications(repo: Rendered) -> list[dict[str, Any]]:
    """The Applications the ApplicationSet generates (argocd_port.generated_applications)."""
    (appset,) = repo.gitops["gitops/argocd/applicationset.yaml"]
    return argocd_port.generated_applications(appset)


def known_clusters(repo: Rendered) -> list[argocd_port.Cluster]:
    """The clusters Argo CD knows (its cluster secrets), as the profiles describe them: a
    cluster given by name only gets a URL of its own (Argo CD has one; we do not)."""
    out = []
    for name, profile in repo.tool("argocd").items():
        delivery = profile["delivery"]
        if delivery.get("destinationName"):
            server = f"https://{name}.cluster.invalid"
        else:
            server = delivery.get("server") or DEFAULT_SERVER
        out.append(argocd_port.Cluster(server, delivery.get("destinationName") or name))
    return out


def _argocd(label: str) -> tuple[Rendered, dict[str, Any], list[dict[str, Any]]]:
    require_kustomize()
    repo = rendered(label)
    (project,) = repo.gitops["gitops/argocd/appproject.yaml"]
    return repo, project, applications(repo)


def _cluster(app: dict[str, Any]) -> argocd_port.Destination:
    dst = app["spec"]["destination"]
    return argocd_port.Destination(dst.get("server", ""), dst.get("name", ""), "")


@pytest.mark.parametrize("label", LABELS)
def test_the_project_admits_every_generated_application(label: str) -> None:
    """ValidatePermissions: an Application whose destination namespace matches no project
    destination gets InvalidSpecError and never syncs (on main: no namespace, none did).
    The generated Application also conforms to Argo CD's Application CRD."""
    repo, project, apps = _argocd(label)
    assert len(apps) == len(repo.tool("argocd"))
    crd = require_upstream() / "crds" / "argoproj.io" / "applications.yaml"
    validator = crd_validator(crd, "v1alpha1")
    for app in apps:
        assert errors(validator, app) == [], app["metadata"]["name"]
        conditions = argocd_port.application_conditions(app, project, known_clusters(repo))
        assert conditions == [], app["metadata"]["name"]


@pytest.mark.parametrize("label", LABELS)
def test_the_project_lets_each_application_sync_every_object_it_builds(label: str) -> None:
    """validateSyncPermissions per built object, its scope from discovery; and a namespaced
    object names its namespace (else Argo CD would put it in the destination namespace)."""
    repo, project, apps = _argocd(label)
    for app in apps:
        for obj in repo.build(app["spec"]["source"]["path"]):
            group = obj["apiVersion"].rpartition("/")[0]
            _, namespaced = discovery.resource(group, obj["kind"])
            assert ("namespace" in obj["metadata"]) is namespaced, key(obj)
            error = argocd_port.sync_permission_error(project, _cluster(app), obj, namespaced)
            assert error is None, (key(obj), error)


@pytest.mark.parametrize("label", LABELS)
def test_each_sync_impersonates_an_account_that_may_apply_exactly_its_objects(
    label: str,
) -> None:
    """DeriveServiceAccountToImpersonate picks the account by the Application's destination;
    Kubernetes RBAC (gitops/argocd/rbac/<cluster>.yaml) lets it server-side apply (`patch`),
    read and prune every object the Application builds; nothing else (every rule is used by
    a built object); and nothing is delivered into the account's own namespace."""
    repo, project, apps = _argocd(label)
    for app in apps:
        cluster = app["metadata"]["labels"]["trainops.dev/cluster"]
        server = app["spec"]["destination"].get("server")
        if server is None:  # by name: Argo CD knows the URL, we do not (docs/gitops.md)
            continue
        user = argocd_port.impersonated_account(project, app, server, app["metadata"]["namespace"])
        assert user, f"{cluster}: no destinationServiceAccounts entry matches"
        account_namespace = user.split(":")[2]
        rbac = repo.gitops[f"gitops/argocd/rbac/{cluster}.yaml"]
        used: set[tuple[str, str, str]] = set()
        for obj in repo.build(app["spec"]["source"]["path"]):
            group = obj["apiVersion"].rpartition("/")[0]
            resource, _ = discovery.resource(group, obj["kind"])
            namespace = obj["metadata"].get("namespace", "")
            assert namespace != account_namespace, key(obj)
            for verb in ("get", "patch", "delete"):
                assert rbac_port.allowed(rbac, user, verb, obj), (cluster, user, verb, key(obj))
            used.add((namespace, group, resource))
        granted = {
            (role["metadata"].get("namespace", ""), group, resource)
            for role in rbac
            if role["kind"] in {"Role", "ClusterRole"}
            for rule in role["rules"]
            for group in rule["apiGroups"]
            for resource in rule["resources"]
        }
        assert granted == used, cluster


@pytest.mark.parametrize("label", LABELS)
def test_sync_waves_apply_what_a_job_names_before_the_job(label: str) -> None:
    """gitops-engine applies one wave at a time: everything a job names that the same
    Application delivers (its runtime: the Trainer's webhook refuses a TrainJob whose runtime
    does not exist; claims, configs, queues, networks, priority classes) is in an earlier
    wave (on main the runtimes shared the TrainJobs' wave)."""
    repo, _, apps = _argocd(label)
    checked = 0
    for app in apps:
        objects = repo.build(app["spec"]["source"]["path"])
        wave_of = {key(o): i for i, w in enumerate(argocd_port.sync_waves(objects)) for o in w}
        for obj in objects:
            if obj["kind"] not in JOB_KINDS:
                continue
            for ref in references(obj):
                if ref in wave_of:
                    assert wave_of[ref] < wave_of[key(obj)], (key(obj), ref)
                    checked += 1
    assert checked, "no job names anything its Application delivers"


@pytest.mark.parametrize("label", LABELS)
def test_no_two_applications_own_an_object(label: str) -> None:
    """FailOnSharedResource=true refuses to sync an object another Application tracks on
    the same cluster."""
    repo, _, apps = _argocd(label)
    seen: dict[tuple[argocd_port.Destination, tuple[str, str, str]], str] = {}
    for app in apps:
        for obj in repo.build(app["spec"]["source"]["path"]):
            where = (_cluster(app), key(obj))
            assert where not in seen, (where, seen.get(where))
            seen[where] = app["metadata"]["name"]
