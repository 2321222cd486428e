"""The scheduler kinds users commit beside their jobs validate against strict schemas instead
of failing as unknown kinds: Volcano `batch.volcano.sh` Job and Kueue ResourceFlavor,
ClusterQueue, LocalQueue and Workload (ResourceFlavor and Workload are written from the
Kueue API types: ../shared/upstream has no CRD for them; the others are checked against the
upstream CRDs in test_conformance.py)."""

from __future__ import annotations

import copy

import pytest

from trainops.core.findings import Finding
from trainops.core.manifest import Manifest
from trainops.validate.pipeline import validate_manifests
from trainops.validate.schemas import SchemaStore

POD = {"spec": {"containers": [{"name": "c", "image": "registry.example/train:1.0"}]}}
KUEUE_SETUP = {
    "ResourceFlavor": {
        "metadata": {"name": "h100"},
        "spec": {
            "nodeLabels": {"node.kubernetes.io/instance-type": "BM.GPU.H100.8"},
            "nodeTaints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        },
    },
    "ClusterQueue": {
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu", "nvidia.com/gpu"],
                    "flavors": [
                        {
                            "name": "h100",
                            "resources": [
                                {"name": "cpu", "nominalQuota": "200"},
                                {"name": "nvidia.com/gpu", "nominalQuota": 16},
                            ],
                        }
                    ],
                }
            ],
        },
    },
    "LocalQueue": {
        "metadata": {"name": "lq", "namespace": "team"},
        "spec": {"clusterQueue": "cq"},
    },
    "Workload": {
        "metadata": {"name": "wl", "namespace": "team"},
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": POD}]},
    },
}
VOLCANO_JOB = {
    "apiVersion": "batch.volcano.sh/v1alpha1",
    "kind": "Job",
    "metadata": {"name": "vj", "namespace": "team"},
    "spec": {
        "minAvailable": 2,
        "schedulerName": "volcano",
        "queue": "default",
        "plugins": {"svc": [], "ssh": []},
        "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
        "tasks": [{"name": "worker", "replicas": 2, "template": POD}],
    },
}


def _errors(data: dict[str, object], store: SchemaStore) -> list[Finding]:
    return validate_manifests([Manifest(copy.deepcopy(data), "m.yaml")], None, store, checkers=[])


def _kueue(kind: str, version: str) -> dict[str, object]:
    return {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": kind, **KUEUE_SETUP[kind]}


@pytest.mark.parametrize("version", ["v1beta1", "v1beta2"])
@pytest.mark.parametrize("kind", sorted(KUEUE_SETUP))
def test_kueue_kinds_validate(kind: str, version: str, ours: SchemaStore) -> None:
    assert _errors(_kueue(kind, version), ours) == []


def test_empty_resource_flavor_is_valid(ours: SchemaStore) -> None:
    """Kueue's documented default flavor has no spec at all."""
    flavor = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor"}
    assert _errors({**flavor, "metadata": {"name": "default-flavor"}}, ours) == []


@pytest.mark.parametrize(
    "kind,path,value,expected",
    [
        ("ResourceFlavor", ("spec", "nodeLabel"), {"a": "b"}, "spec.nodeLabel: unknown field"),
        ("LocalQueue", ("spec", "clusterQueues"), "cq", "spec.clusterQueues: unknown field"),
        ("Workload", ("spec", "podSets", 0, "count"), "two", '"two" is not of type "integer"'),
        ("Workload", ("spec", "podSets"), [], "spec.podSets: [] has less than 1 item"),
    ],
)
def test_kueue_kinds_are_strict(
    kind: str, path: tuple[str | int, ...], value: object, expected: str, ours: SchemaStore
) -> None:
    data: object = _kueue(kind, "v1beta1")
    node = data
    for part in path[:-1]:
        node = node[part]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]
    messages = [f.message for f in _errors(data, ours)]  # type: ignore[arg-type]
    assert any(expected in m for m in messages), messages


def test_workload_without_pod_sets_names_what_is_missing(ours: SchemaStore) -> None:
    data = _kueue("Workload", "v1beta1")
    data["spec"] = {"queueName": "lq"}
    assert [f.message for f in _errors(data, ours)] == ["spec: required field `podSets` is missing"]


def test_volcano_job_validates_and_is_strict(ours: SchemaStore) -> None:
    assert _errors(VOLCANO_JOB, ours) == []
    data = copy.deepcopy(VOLCANO_JOB)
    data["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resource"] = {}
    data["spec"]["minAvaliable"] = 2
    messages = sorted(f.message for f in _errors(data, ours))
    assert any(m.startswith("spec.minAvaliable: unknown field") for m in messages), messages
    # The task's pod template is the core PodTemplateSpec, strict as well.
    assert (
        "spec.tasks[0].template.spec.containers[0].resource: unknown field (not in the schema)"
        in messages
    )
