"""The Training Operator's env for PyTorchJob pods (docs/run-local.md has the table).

Expected values are written out from the operator's code (envvar.go, master.go, elastic.go,
v1.7-1.9), whole and in its order, so a change in our reading shows as a diff.
"""

from __future__ import annotations

from typing import Any

import yaml

from tests.tools import require_upstream
from trainops.runlocal.operator_env import Replica, operator_env, replicas


def job(spec: dict[str, Any], name: str = "train") -> dict[str, Any]:
    return {"kind": "PyTorchJob", "metadata": {"name": name}, "spec": spec}


def template(*ports: tuple[str, int]) -> dict[str, Any]:
    container = {"name": "pytorch", "image": "x"}
    if ports:
        container["ports"] = [{"name": n, "containerPort": p} for n, p in ports]
    return {"spec": {"containers": [container]}}


MASTER_WORKER = job(
    {
        "nprocPerNode": "8",
        "pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": template()},
            "Worker": {"replicas": 3, "template": template()},
        },
    }
)


def test_pods_master_first() -> None:
    assert [r.name for r in replicas(MASTER_WORKER)] == [
        "master-0",
        "worker-0",
        "worker-1",
        "worker-2",
    ]


def test_master_worker_env_world_size_counts_processes() -> None:
    assert operator_env(MASTER_WORKER, Replica("Worker", 2)) == [
        ("PYTHONUNBUFFERED", "1"),
        ("MASTER_PORT", "23456"),
        ("PET_MASTER_PORT", "23456"),
        ("MASTER_ADDR", "train-master-0"),
        ("PET_MASTER_ADDR", "train-master-0"),
        ("WORLD_SIZE", "32"),  # 4 pods x nprocPerNode 8
        ("RANK", "3"),  # Worker index + 1 behind the Master
        ("PET_NODE_RANK", "3"),
        ("PET_NPROC_PER_NODE", "8"),
        ("PET_NNODES", "4"),
    ]
    assert dict(operator_env(MASTER_WORKER, Replica("Master", 0)))["RANK"] == "0"


def test_auto_nproc_counts_one_process_per_pod_and_named_port_wins() -> None:
    spec = {
        "pytorchReplicaSpecs": {
            "Master": {"template": template(("pytorchjob-port", 29500))},
            "Worker": {"replicas": 1, "template": template()},
        }
    }
    env = dict(operator_env(job(spec), Replica("Worker", 0)))
    assert env["WORLD_SIZE"] == "2"  # getNprocPerNodeInt("auto") == 1
    assert env["PET_NPROC_PER_NODE"] == "auto"  # the defaulter's value
    assert env["MASTER_PORT"] == "29500"


def test_elastic_worker_only_env_has_no_master() -> None:
    spec = {
        "nprocPerNode": "8",
        "elasticPolicy": {"minReplicas": 2, "maxReplicas": 8, "maxRestarts": 10},
        "pytorchReplicaSpecs": {"Worker": {"replicas": 4, "template": template()}},
    }
    assert operator_env(job(spec, "llm"), Replica("Worker", 1)) == [
        ("PYTHONUNBUFFERED", "1"),
        ("PET_NPROC_PER_NODE", "8"),
        ("PET_RDZV_ENDPOINT", "llm-worker-0:23456"),
        ("PET_RDZV_BACKEND", "c10d"),
        ("PET_NNODES", "2:8"),
        ("PET_MAX_RESTARTS", "10"),
    ]


def test_elastic_options_pass_through() -> None:
    spec = {
        "elasticPolicy": {
            "rdzvHost": "etcd",
            "rdzvPort": 2379,
            "rdzvBackend": "etcd-v2",
            "rdzvId": "run-7",
            "rdzvConf": [{"key": "timeout", "value": "900"}, {"key": "k", "value": "v"}],
            "standalone": True,
        },
        "pytorchReplicaSpecs": {"Worker": {"replicas": 3, "template": template()}},
    }
    env = dict(operator_env(job(spec), Replica("Worker", 0)))
    assert env["PET_RDZV_ENDPOINT"] == "etcd:2379"
    assert env["PET_RDZV_BACKEND"] == "etcd-v2"
    assert env["PET_NNODES"] == "3:3"  # min/max default to the Worker replicas
    assert env["PET_RDZV_ID"] == "run-7"
    assert env["PET_RDZV_CONF"] == "timeout=900,k=v"
    assert env["PET_STANDALONE"] == ""


def test_upstream_elastic_example() -> None:
    """The operator's own elastic echo example (Worker-only, c10d, 1..2 pods)."""
    path = (
        require_upstream()
        / "examples/training-operator/examples__pytorch__elastic__echo__echo.yaml"
    )
    example = yaml.safe_load(path.read_text())
    env = dict(operator_env(example, Replica("Worker", 1)))
    assert env["PET_RDZV_ENDPOINT"] == "elastic-example-echo-worker-0:23456"
    assert env["PET_NNODES"] == "1:2"
    assert env["PET_MAX_RESTARTS"] == "100"
    assert "MASTER_ADDR" not in env and "RANK" not in env
