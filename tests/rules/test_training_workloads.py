"""Issue 38.1: the training rules read every workload that starts a distributed launcher or a
known trainer, whatever its kind: a batch/v1 Indexed Job, a JobSet, a LeaderWorkerSet, a
StatefulSet; and not one that only serves a model on its GPUs."""

from __future__ import annotations

from pathlib import Path

from tests.rules.helpers import FIXTURES, manifests_from_file, manifests_from_text, run
from trainops.core.manifest import Manifest
from trainops.kube.objects import Object

# A real LeaderWorkerSet that serves a model (its header cites the source).
VLLM_LWS = (Path(__file__).parent / "workloads" / "vllm-lws.yaml").read_text(encoding="utf-8")


def _object(text: str) -> Object:
    return Object(manifests_from_text(text)[0])


def test_a_leaderworkerset_has_a_leader_and_size_minus_one_workers_per_group() -> None:
    lws = _object(VLLM_LWS.replace("replicas: 1", "replicas: 3"))
    assert [(p.replica_type, p.replicas) for p in lws.pods] == [("leader", 3), ("worker", 3)]
    assert lws.pods[0].path == ("spec", "leaderWorkerTemplate", "leaderTemplate")
    head, _, _ = VLLM_LWS.partition("    leaderTemplate:")
    _, _, workers = VLLM_LWS.partition("    workerTemplate:\n")
    no_leader = _object(head + "    workerTemplate:\n" + workers)
    assert [(p.replica_type, p.replicas) for p in no_leader.pods] == [("worker", 2)]


def test_a_model_server_on_gpus_is_not_training() -> None:
    """vLLM over Ray holds 16 GPUs and runs no launcher: no training rule reads it, and the
    variables the LWS webhook injects are defined for `env-reference-undefined`."""
    assert _object(VLLM_LWS).training_pods == []
    findings = run(manifests_from_text(VLLM_LWS))
    assert not [f for f in findings if f.rule in {"shm-missing", "env-reference-undefined"}]


def test_kinds_that_run_torchrun_are_training_workloads() -> None:
    for path in (
        FIXTURES / "failure-ignored/fail-indexed-job-echo.yaml",
        FIXTURES / "torch-env-unknown/fail.yaml",
        FIXTURES / "torch-env-unknown/fail-lws-export.yaml",
    ):
        obj = Object(manifests_from_file(path)[0])
        assert obj.training_pods and obj.training_pods == obj.pods, path
    statefulset = Object(
        Manifest(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "t"},
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [{"name": "a", "command": ["accelerate", "launch", "t"]}]
                        }
                    }
                },
            }
        )
    )
    assert len(statefulset.training_pods) == 1


def test_an_indexed_job_gets_the_failure_and_env_rules() -> None:
    """The issue's case: `torchrun ... && echo OK || echo FAILED` in an Indexed Job, with an
    unknown torch variable: both reported (on main neither was)."""
    text = (FIXTURES / "failure-ignored/fail-indexed-job-echo.yaml").read_text()
    text = text.replace(
        "          command:",
        "          env: [{name: PYTORCH_CUDA_ALOC_CONF, value: x}]\n          command:",
    )
    rules = {f.rule for f in run(manifests_from_text(text))}
    assert {"failure-ignored", "torch-env-unknown"} <= rules
