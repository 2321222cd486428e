"""Each domain fact has one answer, whoever asks (issue 10's "each fact once").

The same jobs go to every consumer: the spec model, the rendered and kustomize-built objects
as the rules read them, the `trainops build` table and the PR diff. GPU totals and DeepSpeed
world sizes must agree; before `trainops.facts` they were computed three ways and disagreed
(the diff counted only resources ending in `gpu`, the table only `*/gpu` limits of the first
container).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, require_kustomize
from trainops import build, diff
from trainops.core.manifest import Manifest
from trainops.facts import deepspeed as ds_facts
from trainops.jobspec.load import load_repository
from trainops.jobspec.model import Repository
from trainops.kube.objects import Object
from trainops.render import render_repository
from trainops.report import capacity, table
from trainops.rules.checks.deepspeed import deepspeed_configs
from trainops.rules.checks.deepspeed import world_sizes as rule_world_sizes
from trainops.rules.context import Context

RICH = REPO / "tests" / "golden" / "rich"


def _built(repo: Repository, tmp: Path) -> dict[str, list[dict[str, Any]]]:
    require_kustomize()
    build.write_tree(render_repository(repo), tmp)
    out = {}
    for name, stream in build.build_overlays(tmp, sorted(repo.clusters)):
        assert isinstance(stream, str), stream
        out[name] = [d for d in yaml.safe_load_all(stream) if d]
    return out


@pytest.mark.parametrize("source", [REPO, RICH], ids=["shipped", "rich"])
def test_gpu_totals_agree(source: Path, tmp_path: Path) -> None:
    repo = load_repository(source)
    for cluster_name, objects in _built(repo, tmp_path).items():
        cluster = repo.clusters[cluster_name]
        jobs = [o for o in objects if o["kind"] in {"PyTorchJob", "TFJob", "MPIJob", "TrainJob"}]
        runtimes = [o for o in objects if "TrainingRuntime" in o["kind"]]
        for obj in jobs:
            spec_job = next(j for j in repo.jobs if j.name == obj["metadata"]["name"])
            target = next(t for t in spec_job.targets if t.cluster == cluster_name)
            from_spec = spec_job.gpus_on(target)
            # A TrainJob's pods are the Trainer's merge with its runtime (in the same build).
            ctx = Context([Object(Manifest(o)) for o in [obj, *runtimes]], cluster)
            runtime = ctx.objects[0].runtime
            row = table.summarize(cluster, obj, runtime.data if runtime else None)
            rules_view = sum(pod.gpus(cluster) * (pod.replicas or 0) for pod in ctx.objects[0].pods)
            assert int(row["gpus"]) == from_spec, ("build table", spec_job.name, cluster_name)
            assert rules_view == from_spec, ("rules", spec_job.name, cluster_name)
        fleet = capacity.fleet_of({cluster_name: cluster}, {cluster_name: objects})
        for placement in fleet.placements:
            spec_job = next(j for j in repo.jobs if j.name == placement.job)
            target = next(t for t in spec_job.targets if t.cluster == cluster_name)
            assert placement.gpus == spec_job.gpus_on(target), (
                "capacity",
                placement.job,
                cluster_name,
            )
        products = {g.resource for g in cluster.gpus}
        assert sum(p.requested for p in fleet.products) == sum(
            j.gpus_on(t) for j in repo.jobs for t in j.targets if t.cluster == cluster_name
        ), ("capacity per product", cluster_name)
        assert diff.gpu_count(jobs, products) == sum(
            j.gpus_on(t) for j in repo.jobs for t in j.targets if t.cluster == cluster_name
        ), ("diff", cluster_name)


@pytest.mark.parametrize("source", [REPO, RICH], ids=["shipped", "rich"])
def test_deepspeed_world_sizes_agree(source: Path, tmp_path: Path) -> None:
    repo = load_repository(source)
    checked = 0
    for cluster_name, objects in _built(repo, tmp_path).items():
        cluster = repo.clusters[cluster_name]
        ctx = Context([Object(Manifest(o)) for o in objects], cluster)
        for obj in ctx.objects:
            if obj.kind != "PyTorchJob":
                continue
            spec_job = next(j for j in repo.jobs if j.name == obj.name)
            if spec_job.deepspeed is None:
                continue
            target = next(t for t in spec_job.targets if t.cluster == cluster_name)
            for found in deepspeed_configs(obj, ctx):
                assert rule_world_sizes(obj, found, ctx) == spec_job.world_sizes(target)
                for size in spec_job.world_sizes(target):
                    assert found.config is not None
                    assert ds_facts.batch_error(found.config, size) is None
                checked += 1
    assert checked, "the fixtures must render at least one DeepSpeed job"
