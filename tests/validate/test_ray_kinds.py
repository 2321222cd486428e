"""KubeRay's RayCluster and RayJob (ray.io/v1) validate against strict schemas written from the
KubeRay v1.7.0 API types (`trainops/schemas/crds/ray.io/`), instead of failing as unknown kinds.
Beside these cases, every RayCluster and RayJob sample of kuberay v1.7.0
(`ray-operator/config/samples/`) was checked clean by hand when the schemas were written
(not vendored: third-party files stay out of the project)."""

from __future__ import annotations

import copy

import pytest

from trainops.core.findings import Finding
from trainops.core.manifest import Manifest
from trainops.validate.pipeline import validate_manifests
from trainops.validate.schemas import SchemaStore

POD = {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}
CLUSTER_SPEC = {
    "rayVersion": "2.52.0",
    "headGroupSpec": {"rayStartParams": {"num-cpus": "0"}, "template": POD},
    # minReplicas / maxReplicas are defaulted by the API server (0 and 2147483647): not required.
    "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": POD}],
}
RAY_CLUSTER = {
    "apiVersion": "ray.io/v1",
    "kind": "RayCluster",
    "metadata": {"name": "rc", "namespace": "team"},
    "spec": CLUSTER_SPEC,
}
RAY_JOB = {
    "apiVersion": "ray.io/v1",
    "kind": "RayJob",
    "metadata": {"name": "rj", "namespace": "team"},
    "spec": {
        "entrypoint": "python /home/ray/train.py --epochs 3",
        "shutdownAfterJobFinishes": True,
        "ttlSecondsAfterFinished": 600,
        "runtimeEnvYAML": "pip: [torch]\n",
        "rayClusterSpec": CLUSTER_SPEC,
    },
}


def _messages(data: dict[str, object], store: SchemaStore) -> list[str]:
    found: list[Finding] = validate_manifests(
        [Manifest(copy.deepcopy(data), "m.yaml")], None, store, checkers=[]
    )
    return [f.message for f in found]


@pytest.mark.parametrize("data", [RAY_CLUSTER, RAY_JOB], ids=["RayCluster", "RayJob"])
def test_ray_kinds_validate(data: dict[str, object], ours: SchemaStore) -> None:
    assert _messages(data, ours) == []


def test_ray_start_params_are_strings(ours: SchemaStore) -> None:
    """`rayStartParams` is a map of strings: the API server refuses `num-gpus: 1`."""
    data = copy.deepcopy(RAY_JOB)
    data["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["rayStartParams"] = {"num-gpus": 1}  # type: ignore[index]
    assert _messages(data, ours) == [
        'spec.rayClusterSpec.workerGroupSpecs[0].rayStartParams.num-gpus: 1 is not of type "string"'
    ]


@pytest.mark.parametrize(
    "path,value,expected",
    [
        (("spec", "workerGroupSpec"), [], "spec.workerGroupSpec: unknown field"),
        (("spec", "headGroupSpec", "template", "spec", "containers", 0, "resource"), {},
         "spec.headGroupSpec.template.spec.containers[0].resource: unknown field"),
        (("spec", "workerGroupSpecs", 0, "replicas"), "2", '"2" is not of type "integer"'),
    ],
    ids=["misspelt-groups", "pod-template-strict", "replicas-text"],
)  # fmt: skip
def test_ray_cluster_is_strict(
    path: tuple[str | int, ...], value: object, expected: str, ours: SchemaStore
) -> None:
    data: object = copy.deepcopy(RAY_CLUSTER)
    node = data
    for part in path[:-1]:
        node = node[part]  # type: ignore[index]
    node[path[-1]] = value  # type: ignore[index]
    messages = _messages(data, ours)  # type: ignore[arg-type]
    assert any(expected in m for m in messages), messages
