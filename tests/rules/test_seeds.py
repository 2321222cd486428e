"""The seeds' real manifests come out with the findings a careful reviewer would give.

Seed 001 keeps its YAML intact and is read from `../shared/seeds` at test time; seed 000
lost its indentation, so its manifests are reconstructed in `seeds/seed000.yaml`.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.rules.conftest import make_cluster
from tests.rules.helpers import (
    json_block,
    manifests_from_file,
    manifests_from_text,
    rules_of,
    run,
    seed_text,
    yaml_blocks,
)
from trainops.core.findings import Finding
from trainops.core.manifest import Manifest
from trainops.jobspec.model import Network, Scheduler
from trainops.rules import check

SEED000 = Path(__file__).parent / "seeds" / "seed000.yaml"


def _seed001() -> list[Manifest]:
    blocks = yaml_blocks(seed_text("001"))
    assert len(blocks) == 3, "seed 001 has a PyTorchJob, a TFJob and an MPIJob"
    return [m for i, b in enumerate(blocks) for m in manifests_from_text(b, f"seed001-{i}.yaml")]


def _by(findings: list[Finding], name: str) -> dict[str, list[Finding]]:
    result: dict[str, list[Finding]] = {}
    for f in findings:
        if f.name == name:
            result.setdefault(f.rule, []).append(f)
    return result


def test_seed001_elastic_pytorchjob() -> None:
    found = _by(run(_seed001()), "llm-finetune")
    assert "torchrun --nnodes=4 is fixed" in found["elastic-nnodes-conflict"][0].message
    assert "$(MASTER_ADDR)" in found["env-reference-undefined"][0].message
    # No memory limit (only GPU and RDMA limits): a reviewer flags it; CPU is requested.
    assert [f.message for f in found["resources-unbounded"]] == [
        m for m in (f.message for f in found["resources-unbounded"]) if "memory limit" in m
    ]
    # RDMA device and Multus network are there; IPC_LOCK is not.
    assert [f.severity for f in found["rdma-incomplete"]] == ["warning"]
    assert "IPC_LOCK" in found["rdma-incomplete"][0].message
    # 8 ranks x OMP_NUM_THREADS=8 on the 32 CPUs it requests.
    (cpu,) = found["cpu-oversubscribed"]
    assert "8 processes x OMP_NUM_THREADS=8 = 64 compute threads on a 32-CPU" in cpu.message
    assert "set OMP_NUM_THREADS=4" in cpu.message
    # HF_HOME under the read-only dataset mount: the first from_pretrained fails (issue 37).
    assert "sets HF_HOME=/data/hf-cache" in found["cache-on-read-only"][0].message
    assert set(found) == {
        "elastic-nnodes-conflict",
        "env-reference-undefined",
        "resources-unbounded",
        "rdma-incomplete",
        "cpu-oversubscribed",
        "cache-on-read-only",
    }


def test_seed001_mpijob() -> None:
    found = _by(run(_seed001()), "horovod-training")
    fused = sorted(f.message.split("'")[1] for f in found["mpi-arg-has-space"])
    assert fused == ["-x NCCL_DEBUG=INFO", "-x NCCL_IB_DISABLE=0", "-x NCCL_IB_HCA=mlx5"]
    assert len(found["image-unpinned"]) == 2  # launcher and worker
    assert all("latest-gpu" in f.message for f in found["image-unpinned"])
    # -np 32 == slotsPerWorker 8 x 4 workers: consistent, so no finding.
    assert "mpi-np-mismatch" not in found
    # It sets a TTL and no clean-up gap: no ttl-missing; with Argo CD self-heal it re-runs.
    assert "ttl-missing" not in found
    with_cluster = _by(
        run(_seed001(), make_cluster(namespaces=("ai-training",))), "horovod-training"
    )
    assert "ttlSecondsAfterFinished" in with_cluster["gitops-rerun-risk"][0].message


def test_seed001_tfjob() -> None:
    found = _by(run(_seed001()), "tf-distributed")
    # Chief + Worker, one finding per container naming both the memory limit and CPU request.
    assert len(found["resources-unbounded"]) == 2
    assert all(
        "no memory limit and no CPU request" in f.message for f in found["resources-unbounded"]
    )
    assert len(found["shm-missing"]) == 2  # 8 GPUs per pod, no /dev/shm
    # /data is mounted read-write, but nothing says the program reads a dataset from it (or
    # does not write there): no guess from the mount's name.
    assert "dataset-writable" not in found


def test_seed001_deepspeed_config_when_mounted() -> None:
    """The article's ds_config.json, mounted from a ConfigMap where the job reads it."""
    config = json.loads(json_block(seed_text("001")))
    manifests = _seed001()
    job = next(m for m in manifests if m.name == "llm-finetune")
    spec = job.data["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    spec["containers"][0]["volumeMounts"].append(
        {"name": "ds", "mountPath": "/workspace/ds_config.json", "subPath": "ds_config.json"}
    )
    spec["volumes"].append({"name": "ds", "configMap": {"name": "ds-config"}})
    configmap = Manifest(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "ds-config", "namespace": "ai-training"},
            "data": {"ds_config.json": json.dumps(config)},
        }
    )
    found = _by(check([*manifests, configmap], None), "llm-finetune")
    # 64 = 2 x 8 x world only at world 4, but the job runs 2-8 pods x 8 GPUs.
    assert "pins train_batch_size" in found["deepspeed-elastic-batch"][0].message
    assert "deepspeed-precision-conflict" not in found  # --bf16 and bf16 enabled agree
    # ZeRO-3 with allgather_bucket_size, which DeepSpeed reads at stages 1 and 2 (issue 33.6).
    (ignored,) = found["deepspeed-stage-ignored"]
    assert "`zero_optimization.allgather_bucket_size` does nothing at ZeRO stage 3" in (
        ignored.message
    )


def test_seed000() -> None:
    findings = run(manifests_from_file(SEED000))
    job = _by(findings, "resnet-distributed-training")
    deprecated = {f.message.split(":")[0] for f in job["nccl-env-deprecated"]}
    assert deprecated == {"NCCL_MIN_NRINGS", "NCCL_TREE_THRESHOLD"}
    assert all("NCCL_TIMEOUT" in f.message for f in job["nccl-env-unknown"])
    assert "process-group timeout" in job["nccl-env-unknown"][0].message
    # NCCL_IB_DISABLE=0 ("Enable InfiniBand if available") is NCCL's default: with no RDMA
    # device NCCL uses TCP sockets. Advisory, so a warning per replica, not an error.
    assert [f.severity for f in job["rdma-incomplete"]] == ["warning", "warning"]
    assert all("falls back to TCP" in f.message for f in job["rdma-incomplete"])
    assert "amazon/aws-cli" in job["image-unpinned"][0].message
    # The article's init container syncs the dataset into the ReadOnlyMany claim: an error
    # (the download fails where the driver mounts ROX read-only, else every pod writes the
    # shared volume); the training containers mounting it read-write are warnings.
    writes = [f.message.split(" ")[0] for f in job["write-to-read-only"]]
    assert writes == ["init"]
    assert [f.severity for f in job["dataset-writable"]] == ["warning", "warning"]
    write = job["write-to-read-only"][0]
    assert "`data-downloader` writes to /data (`aws`)" in write.message
    assert "ReadOnlyMany" in write.message
    service = _by(findings, "training-metrics")
    assert "training.kubeflow.org/job-name" in service["metrics-port-mismatch"][0].message
    assert "gang-scheduling-inconsistent" in rules_of(
        [f for f in findings if f.name == "gang-scheduled-training"]
    )
    assert "resources-unbounded" in _by(findings, "tensorflow-distributed")


def test_seed000_on_a_tcp_cluster_without_volcano() -> None:
    cluster = make_cluster(
        network=Network(transport="tcp", socket_interface="eth0"),
        scheduler=Scheduler(kind="kueue"),
        namespaces=("default",),
    )
    findings = run(manifests_from_file(SEED000), cluster)
    mismatch = [f for f in findings if f.rule == "network-mismatch"]
    # NCCL_IB_DISABLE=0 on a TCP cluster does nothing: a warning on Master and Worker.
    assert [(f.severity, "TCP networking only" in f.message) for f in mismatch] == [
        ("warning", True),
        ("warning", True),
    ]
    gang = [f for f in findings if f.rule == "gang-scheduling-inconsistent"]
    assert any("kueue" in f.message for f in gang)
