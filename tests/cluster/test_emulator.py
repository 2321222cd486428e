"""The API emulator itself (kmock on 127.0.0.1, not a real cluster) answers pykube-ng's real
requests the way a real API server does, where the cluster tests rely on it: discovery,
label selectors on lists, 404 for a group that is not installed, dry runs storing nothing."""

from __future__ import annotations

import json

import pykube
import pytest

from tests.cluster.conftest import CREATED, namespace
from tests.tools import require_upstream
from trainops.cluster.emulator import CRD_KINDS, kinds_from_crds, selector_matches
from trainops.cluster.emulator_thread import RunningEmulator


def _api(url: str) -> pykube.HTTPClient:
    return pykube.HTTPClient(pykube.KubeConfig.from_url(url), timeout=5)


def _pod(name: str, labels: dict[str, str]) -> dict[str, object]:
    meta = {"name": name, "namespace": "ml-vision", "labels": labels, "creationTimestamp": CREATED}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": []}}


@pytest.mark.parametrize(
    ("selector", "names"),
    [
        ({"training.kubeflow.org/job-name": "a"}, ["a-0", "a-1"]),
        ("training.kubeflow.org/job-name", ["a-0", "a-1", "b-0"]),
        (
            "training.kubeflow.org/job-name,training.kubeflow.org/replica-type!=master",
            ["a-1", "b-0"],
        ),
        ("training.kubeflow.org/job-name in (b,c)", ["b-0"]),
        ("!training.kubeflow.org/job-name", ["loose"]),
    ],
)
def test_list_with_label_selector(api: RunningEmulator, selector: object, names: list[str]) -> None:
    job, kind = "training.kubeflow.org/job-name", "training.kubeflow.org/replica-type"
    api.add(
        _pod("a-0", {job: "a", kind: "master"}),
        _pod("a-1", {job: "a", kind: "worker"}),
        _pod("b-0", {job: "b", kind: "worker"}),
        _pod("loose", {}),
    )
    query = pykube.Pod.objects(_api(api.url), namespace="ml-vision").filter(selector=selector)
    assert sorted(p.name for p in query) == names


def test_discovery_from_the_upstream_crds(api: RunningEmulator) -> None:
    PyTorchJob = pykube.object_factory(_api(api.url), "kubeflow.org/v1", "PyTorchJob")
    assert (PyTorchJob.endpoint, PyTorchJob.version) == ("pytorchjobs", "kubeflow.org/v1")
    missing = _api(api.url).get(version="ray.io/v1")
    assert missing.status_code == 404
    assert missing.headers["Content-Type"] == "application/json"
    assert missing.json()["reason"] == "NotFound"


def test_dry_run_apply_stores_nothing_and_needs_the_namespace(api: RunningEmulator) -> None:
    client = _api(api.url)
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    headers = {"Content-Type": "application/apply-patch+yaml"}
    params = "?fieldManager=trainops&dryRun=All&force=true"
    created = client.patch(
        url=f"configmaps/c{params}", namespace="ml-vision", data=body, headers=headers
    )
    assert created.status_code == 201
    assert created.json()["metadata"]["managedFields"][0]["manager"] == "trainops"
    assert client.get(url="configmaps/c", namespace="ml-vision").status_code == 404
    gone = client.patch(
        url=f"configmaps/c{params}", namespace="nowhere", data=body, headers=headers
    )
    assert gone.status_code == 404
    assert gone.json()["details"] == {"name": "nowhere", "kind": "namespaces"}


def test_namespace_objects_are_served(api: RunningEmulator) -> None:
    client = _api(api.url)
    assert client.get(url="namespaces/ml-vision").json() == namespace("ml-vision")
    assert client.get(url="namespaces/nowhere").status_code == 404


def test_selector_parser_rejects_what_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="unparsable"):
        selector_matches("a=b=c", {})
    assert selector_matches("a notin (x)", {}) and not selector_matches("a notin (x)", {"a": "x"})


def test_written_out_crd_kinds_match_the_upstream_crds() -> None:
    assert kinds_from_crds(require_upstream()) == CRD_KINDS
