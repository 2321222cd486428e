"""The invariant: `kustomize build overlays/<cluster>` equals what the Python model expects.

Runs the real kustomize (`kustomize`, else `kubectl kustomize`) on the shipped
examples (PyTorchJob, TFJob, MPIJob) and on fixture repositories covering the other shapes
(Master only, CPU-only elastic, hostNetwork, another GPU vendor, a default scheduler, Volcano
priority classes, user DeepSpeed configs; TF parameter servers and evaluator, Intel MPI and
the v1 MPIJob in tests/golden/rich). This proves the two kustomize traps are
avoided: JSON patches append to lists instead of replacing them, and the hashed
name of the generated DeepSpeed ConfigMap reaches the PyTorchJob's pod templates.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, require_tool
from trainops import build
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL
from trainops.jobspec.load import load_repository
from trainops.render import expected_objects, objects, pod, render_repository
from trainops.render import write as render_write

FIXTURES = Path(__file__).parent / "fixtures"
REPOS = {
    "shipped": REPO,
    "variety": FIXTURES / "variety",
    "rich": REPO / "tests" / "golden" / "rich",
}


def _needs_kustomize() -> None:
    try:
        build.kustomize_command()
    except build.KustomizeError:
        require_tool("kustomize")


def _key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])


def _pairs() -> list[tuple[str, str]]:
    out = []
    for label, root in REPOS.items():
        repo = load_repository(root)
        out += [(label, name) for name in repo.clusters]
    return out


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each repo rendered into a temp dir (the shipped one also checked against Git)."""
    out = {}
    for label, root in REPOS.items():
        target = tmp_path_factory.mktemp(label)
        for name in ("jobs", "clusters"):
            shutil.copytree(root / name, target / name)
        render_write.write(target, render_repository(load_repository(target)))
        out[label] = target
    return out


@pytest.mark.parametrize(("label", "cluster"), _pairs())
def test_kustomize_build_equals_model(rendered: dict[str, Path], label: str, cluster: str) -> None:
    _needs_kustomize()
    root = rendered[label]
    repo = load_repository(root)
    built = [d for d in yaml.safe_load_all(build.kustomize(root / "overlays" / cluster)) if d]
    expected = expected_objects(repo, repo.clusters[cluster])
    assert expected, "every shipped cluster runs at least one job"

    # The generated ConfigMap carries kustomize's content hash; map it back and check
    # that every reference in the job points at the real, hashed name.
    hashed: dict[str, str] = {}
    # The dashboard ConfigMap is the cluster's own object, named as written (no generator).
    as_written = {o["metadata"]["name"] for o in expected if o["kind"] == "ConfigMap"}
    for obj in built:
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] not in as_written:
            base_name = obj["metadata"]["name"].rsplit("-", 1)[0]
            hashed[base_name] = obj["metadata"]["name"]
    for obj in built:
        if obj["kind"] in {"PyTorchJob", "TFJob", "MPIJob"}:
            (replica_specs,) = [v for k, v in obj["spec"].items() if k.endswith("ReplicaSpecs")]
            for spec in replica_specs.values():
                for volume in spec["template"]["spec"].get("volumes", []):
                    if "configMap" in volume:
                        name = volume["configMap"]["name"]
                        assert name in hashed.values(), f"{name} is not a generated ConfigMap"
                        volume["configMap"]["name"] = name.rsplit("-", 1)[0]
        if obj["kind"] == "ConfigMap" and obj["metadata"]["name"] not in as_written:
            obj["metadata"]["name"] = obj["metadata"]["name"].rsplit("-", 1)[0]

    assert sorted(map(_key, built)) == sorted(map(_key, expected))
    by_key = {_key(o): o for o in built}
    for want in expected:
        assert by_key[_key(want)] == want, f"{_key(want)} differs from the model"


def test_overlays_only_patch(rendered: dict[str, Path]) -> None:
    """Overlays hold a kustomization and JSON patches, never a restated object (`platform/`
    holds the cluster's own platform manifests, which no base has)."""
    for root in rendered.values():
        for path in (root / "overlays").rglob("*.yaml"):
            if path.parent.name == "platform":
                continue
            doc = yaml.safe_load(path.read_text())
            if path.name == "kustomization.yaml" and path.parent.parent.name == "overlays":
                assert all((path.parent / r).is_dir() for r in doc["resources"])  # job dirs
                assert set(doc) == {"apiVersion", "kind", "resources"}
            elif path.parent.name in {"_platform", "_jobs"}:
                # The overlay's two parts (what Flux applies in order): directories only.
                assert set(doc) == {"apiVersion", "kind", "resources"}, path
                assert all(r.startswith("../") for r in doc["resources"]), path
                assert all((path.parent / r).is_dir() for r in doc["resources"]), path
            elif path.parent.name == "_runtimes":
                # A Trainer v2 cluster's ClusterTrainingRuntimes: the cluster's own objects,
                # in no base (there is nothing cluster-agnostic to patch).
                assert doc["kind"] in {"Kustomization", "ClusterTrainingRuntime"}, path
            elif path.parent.name == "_monitoring":
                # The cluster's alerts and dashboard (docs/monitoring.md): its own objects.
                assert doc["kind"] in {"Kustomization", "PrometheusRule", "ConfigMap"}, path
            elif path.name == "kustomization.yaml":
                job = path.parent.name
                assert doc["resources"] in (
                    [f"../../../base/{job}"],
                    [f"../../../base/{job}/trainer-v2"],
                )
            else:
                assert isinstance(doc, list) and all({"op", "path"} <= set(op) for op in doc)


def test_base_is_cluster_agnostic(rendered: dict[str, Path]) -> None:
    text = "".join(p.read_text() for p in (rendered["shipped"] / "base").rglob("*.yaml"))
    for cluster_only in (
        "NCCL_IB_DISABLE",
        "nodeSelector",
        "schedulerName",
        "storageClassName",
        KUEUE_QUEUE_LABEL,
        pod.MULTUS_ANNOTATION,
        "IPC_LOCK",
    ):
        assert cluster_only not in text


def test_elastic_job_is_worker_only_with_pet_driven_torchrun() -> None:
    repo = load_repository(REPO)
    job = next(j for j in repo.jobs if j.elastic)
    cluster = repo.clusters["onprem-a100"]
    obj = objects.pytorchjob(job, cluster, job.targets[0])
    assert set(obj["spec"]["pytorchReplicaSpecs"]) == {"Worker"}
    assert obj["spec"]["elasticPolicy"]["rdzvBackend"] == "c10d"
    assert obj["spec"]["nprocPerNode"] == str(job.gpus_per_replica)
    container = obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["torchrun", "-m", "trainer"]
    launcher_flags = ("--nnodes", "--nproc", "--rdzv", "--master", "--node")
    assert not any(a.startswith(launcher_flags) for a in container["args"])
    # The gang is the elastic minimum: it starts when minReplicas pods fit (issue 23).
    assert job.elastic is not None
    gang = obj["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"]
    assert gang == job.elastic.min_replicas


def test_fixed_job_is_master_plus_workers() -> None:
    repo = load_repository(REPO)
    job = next(j for j in repo.jobs if not j.elastic)
    specs = objects.pytorchjob(job)["spec"]["pytorchReplicaSpecs"]
    assert specs["Master"]["replicas"] == 1
    assert specs["Worker"]["replicas"] == job.replicas - 1


def test_deepspeed_configmap_omits_train_batch_size_for_elastic_jobs() -> None:
    repo = load_repository(REPO)
    job = next(j for j in repo.jobs if j.deepspeed and j.elastic)
    configmap = objects.deepspeed_configmap(job)
    assert configmap is not None
    config = json.loads(configmap["data"]["ds_config.json"])
    assert "train_batch_size" not in config
    assert config["train_micro_batch_size_per_gpu"] == 2
    assert config["gradient_accumulation_steps"] == 8
    assert config["zero_optimization"]["stage"] == 3
