"""`objects.job_placed` (the kinds a job delivers, without building it) against what the
renderer builds, so that the Argo CD AppProject and the Flux delivery accounts allow exactly
the kinds the overlays hold (issue 39: `placed_kinds` no longer renders every pod template).

Every shipped and rich job on every cluster of its repository, not only those it targets
(the cross product reaches kinds and features the targets alone leave out: a Trainer v2
cluster for a TFJob spec, Kueue, Volcano), and the placed kinds of every cluster against the
objects `cluster_objects` builds.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from tests.render.repos import REPOS
from trainops.jobspec.load import load_repository
from trainops.jobspec.model import Repository
from trainops.render import objects
from trainops.render.delivered import cluster_objects, placed_kinds


def _placed(obj: dict[str, Any]) -> tuple[str, str, str | None]:
    return obj["apiVersion"].rpartition("/")[0], obj["kind"], obj["metadata"].get("namespace")


@pytest.fixture(scope="module", params=sorted(REPOS))
def repo(request: pytest.FixtureRequest) -> Repository:
    return load_repository(REPOS[request.param])


def test_each_job_on_each_cluster_places_what_it_renders(repo: Repository) -> None:
    compared = 0
    kinds: set[str] = set()
    for job in repo.jobs:
        for cluster in repo.clusters.values():
            # On a cluster it does not target, the job runs there with its first target's
            # settings but no GPU product of another cluster's.
            target = dataclasses.replace(job.targets[0], cluster=cluster.name, gpu_product=None)
            built = objects.job_objects(job, cluster, target)
            configmap = objects.deepspeed_configmap(job)
            rendered = {_placed(obj) for obj in built + ([configmap] if configmap else [])}
            assert objects.job_placed(job, cluster) == rendered, (job.name, cluster.name)
            kinds |= {kind for _, kind, _ in rendered}
            compared += 1
    assert compared >= len(repo.jobs) * 2
    assert {"NetworkPolicy", "Service", "ServiceMonitor"} <= kinds


def test_the_fixtures_place_every_kind_a_job_can_render() -> None:
    """The cross product above meets every kind `job_placed` can answer, so each of its
    branches is compared with the renderer at least once."""
    kinds: set[str] = set()
    for root in REPOS.values():
        repo = load_repository(root)
        for job in repo.jobs:
            for cluster in repo.clusters.values():
                kinds |= {kind for _, kind, _ in objects.job_placed(job, cluster)}
    assert kinds == {
        "ConfigMap",
        "MPIJob",
        "NetworkPolicy",
        "PersistentVolumeClaim",
        "PyTorchJob",
        "Service",
        "ServiceMonitor",
        "TFJob",
        "TrainJob",
        "TrainingRuntime",
    }


def test_placed_kinds_are_the_kinds_the_cluster_objects_hold(repo: Repository) -> None:
    for cluster in repo.clusters.values():
        built = {_placed(obj) for obj in cluster_objects(repo, cluster)}
        assert placed_kinds(repo, cluster) == built, cluster.name
