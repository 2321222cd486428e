"""The source map (render/sources.py): each field of a rendered object names the spec line that
produced it. Expectations are found by searching the shipped spec files' text, not computed
with the code under test; and every leaf of every object built for every cluster maps to a
line of a job spec or a profile."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools import REPO, require_kustomize
from trainops.core import yamlio
from trainops.core.manifest import Manifest
from trainops.jobspec.load import load_repository
from trainops.render.sources import Specs, replica_type
from trainops.validate.repo import build_overlay


@functools.cache
def _built(cluster: str) -> list[Manifest]:
    require_kustomize()
    return build_overlay(load_repository(REPO), cluster)[1]


def _doc(rel: str) -> yamlio.Document:
    return yamlio.load_file(REPO / rel, rel)[0]


def _specs(job: str, cluster: str) -> Specs:
    return Specs(_doc(f"jobs/{job}.yaml"), _doc(f"clusters/{cluster}.yaml"), cluster)


def _line(rel: str, needle: str, after: str | None = None) -> int:
    lines = (REPO / rel).read_text().splitlines()
    start = next(i for i, t in enumerate(lines) if after in t) if after else 0
    return next(i for i, t in enumerate(lines[start:], start + 1) if needle in t)


def _object(cluster: str, kind: str, name: str) -> Manifest:
    return next(m for m in _built(cluster) if m.kind == kind and m.name == name)


def _env_index(container: dict[str, Any], name: str) -> int:
    return next(i for i, e in enumerate(container["env"]) if e["name"] == name)


WORKER = ("spec", "pytorchReplicaSpecs", "Worker", "template", "spec")


def test_the_training_containers_fields_map_to_the_job_and_the_profile() -> None:
    job = _object("cloud-h100", "PyTorchJob", "resnet50-ddp")
    specs = _specs("resnet50-ddp", "cloud-h100")
    c = job.data["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container = (*WORKER, "containers", 0)
    spec, profile = "jobs/resnet50-ddp.yaml", "clusters/cloud-h100.yaml"
    cases = {
        (*container, "image"): (spec, _line(spec, "image: ")),
        (*container, "env", _env_index(c, "NCCL_DEBUG"), "value"): (
            spec, _line(spec, "NCCL_DEBUG")
        ),
        (*container, "env", _env_index(c, "NCCL_SOCKET_IFNAME")): (
            profile, _line(profile, "socketInterface:")
        ),
        (*container, "env", _env_index(c, "TRAINOPS_METRICS_PORT")): (
            spec, _line(spec, "metricsPort:")
        ),
        (*container, "resources", "limits", "nvidia.com/gpu"): (
            spec, _line(spec, "gpusPerReplica")
        ),
        (*container, "resources", "requests", "cpu"): (spec, _line(spec, 'cpu: "6"')),
        (*container, "args", 3): (spec, _line(spec, "--batch-size=32")),
        (*WORKER, "nodeSelector", "nvidia.com/gpu.product"): (
            profile, _line(profile, "nvidia.com/gpu.product:")
        ),
        (*WORKER, "tolerations", 0): (profile, _line(profile, "- key: nvidia.com/gpu")),
        ("spec", "pytorchReplicaSpecs", "Worker", "replicas"): (spec, _line(spec, "replicas: 4")),
        ("metadata", "labels", "kueue.x-k8s.io/queue-name"): (profile, _line(profile, "queue:")),
        ("spec", "runPolicy", "backoffLimit"): (spec, _line(spec, "backoffLimit:")),
        (*WORKER, "volumes", 2): (spec, _line(spec, "sharedMemory:")),
    }  # fmt: skip
    for path, where in cases.items():
        assert specs.locate(job.kind, job.data, path) == where, path
    assert replica_type(job.kind, job.data, (*container, "image")) == "Worker"


def test_a_targets_own_gpu_product_and_the_rdma_settings() -> None:
    job = _object("onprem-a100", "PyTorchJob", "resnet50-ddp")
    specs = _specs("resnet50-ddp", "onprem-a100")
    profile = "clusters/onprem-a100.yaml"
    c = job.data["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    selector = (*WORKER, "nodeSelector", "nvidia.com/gpu.product")
    # resnet50-ddp asks for a100-40gb there: the second product's selector, not the first's.
    assert specs.locate(job.kind, job.data, selector) == (
        profile, _line(profile, "NVIDIA-A100-SXM4-40GB")
    )  # fmt: skip
    hca = (*WORKER, "containers", 0, "env", _env_index(c, "NCCL_IB_HCA"))
    assert specs.locate(job.kind, job.data, hca) == (profile, _line(profile, "hca:"))
    multus = (*WORKER[:-1], "metadata", "annotations", "k8s.v1.cni.cncf.io/networks")
    assert specs.locate(job.kind, job.data, multus) == (profile, _line(profile, "multusNetwork:"))


def test_a_trainjobs_trainer_fields() -> None:
    job = _object("onprem-h200", "TrainJob", "resnet50-ddp")
    specs = _specs("resnet50-ddp", "onprem-h200")
    spec = "jobs/resnet50-ddp.yaml"
    assert specs.locate(job.kind, job.data, ("spec", "trainer", "image")) == (
        spec, _line(spec, "image: ")
    )  # fmt: skip
    assert specs.locate(job.kind, job.data, ("spec", "trainer", "numNodes")) == (
        spec, _line(spec, "replicas: 4")
    )  # fmt: skip


def _leaves(data: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _leaves(value, (*path, index))
    else:
        yield path


@pytest.mark.parametrize("cluster", ["cloud-h100", "onprem-a100", "onprem-h200"])
def test_every_leaf_of_every_jobs_object_maps_to_a_spec_line(cluster: str) -> None:
    jobs = {p.stem for p in (REPO / "jobs").glob("*.yaml")}
    checked = 0
    for m in _built(cluster):
        owner = (m.file or "").split("/")[1] if (m.file or "").startswith("base/") else None
        if owner not in jobs:
            continue
        specs = _specs(owner, cluster)
        for path in _leaves(m.data):
            found = specs.locate(m.kind, m.data, path)
            assert found is not None, (m.kind, m.name, path)
            file, line = found
            assert file in (f"jobs/{owner}.yaml", f"clusters/{cluster}.yaml"), (path, found)
            assert 1 <= line <= len(Path(REPO, file).read_text().splitlines())
            checked += 1
    assert checked > 100
