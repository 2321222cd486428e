"""The views every reader of built objects shares: one elastic range, one training container,
one TrainJob-to-runtime lookup.

Expectations are the consumers' code, not trainops': the Training Operator's defaulter
(kubeflow/trainer v1.9.4 `pkg/apis/kubeflow.org/v1/pytorch_defaults.go` setElasticPolicy,
`defaulting_utils.go` getDefaultContainerIndex, `pkg/controller.v1/pytorch/elastic.go`
generateEnvNnodes) and Trainer v2.3.0's TrainJob CRD (`runtimeRef.kind` defaults to
ClusterTrainingRuntime, `apiGroup` to trainer.kubeflow.org).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.rules.conftest import make_cluster
from trainops.core.manifest import Manifest
from trainops.facts.gpus import gang_minimum
from trainops.facts.kubeflow import elastic_range
from trainops.kube.objects import Object
from trainops.kube.trainjob import find_runtime, node_pod
from trainops.report.table import summarize
from trainops.runlocal.operator_env import Replica, operator_env


def pytorchjob(elastic: dict[str, Any] | None, workers: int | None = 2) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "template": {"spec": {"containers": [{"name": "pytorch", "image": "train:1"}]}}
    }
    if workers is not None:
        worker["replicas"] = workers
    spec: dict[str, Any] = {"pytorchReplicaSpecs": {"Worker": worker}}
    if elastic is not None:
        spec["elasticPolicy"] = elastic
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "llm", "namespace": "ml"},
        "spec": spec,
    }


# setElasticPolicy: both set -> kept; only max -> min = max; only min -> max = min; neither ->
# both the Worker replicas (setDefaultReplicas made them 1 when unset).
@pytest.mark.parametrize(
    ("elastic", "workers", "expected"),
    [
        ({"minReplicas": 1, "maxReplicas": 4}, 2, (1, 4)),
        ({"maxReplicas": 4}, 2, (4, 4)),
        ({"minReplicas": 3}, 2, (3, 3)),
        ({}, 2, (2, 2)),
        ({}, None, (1, 1)),
        (None, 2, None),
    ],
    ids=["both", "only-max", "only-min", "neither", "neither-default-replicas", "not-elastic"],
)
def test_the_elastic_range_is_the_operators_defaulting(
    elastic: dict[str, Any] | None, workers: int | None, expected: tuple[int, int] | None
) -> None:
    job = pytorchjob(elastic, workers)
    assert elastic_range(job["spec"]) == expected
    assert Object(Manifest(job)).elastic_range == expected


def test_every_reader_sees_the_same_range_when_one_bound_is_written() -> None:
    """Only maxReplicas 4 with 2 Workers: the operator sets PET_NNODES=4:4 (elastic.go reads the
    defaulted policy), the gang is 2 pods (both Workers: min 4 is capped by the pods there are),
    and the build table says `elastic 4-4`. Before one convention, run-local said 2:4."""
    job = pytorchjob({"maxReplicas": 4}, 2)
    env = dict(operator_env(copy.deepcopy(job), Replica("Worker", 0)))
    assert env["PET_NNODES"] == "4:4"
    assert gang_minimum(job) == 2
    row = summarize(make_cluster(), job)
    assert row["shape"] == "elastic 4-4"


def test_the_training_container_is_the_one_the_operator_configures() -> None:
    """A sidecar listed first: the operator configures `pytorch`, so the table's NCCL mode is
    that container's (the table read the first container before)."""
    job = pytorchjob(None)
    pod = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    pod["containers"] = [
        {"name": "log-shipper", "image": "fluent-bit:3"},
        {"name": "pytorch", "image": "train:1", "env": [{"name": "NCCL_IB_DISABLE", "value": "1"}]},
    ]
    obj = Object(Manifest(job))
    container = obj.training_container(obj.pods[0])
    assert container is not None and container.name == "pytorch"
    assert summarize(make_cluster(), job)["nccl"] == "tcp"


def test_an_mpijob_trains_in_its_first_container() -> None:
    job = {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "hvd"},
        "spec": {
            "mpiReplicaSpecs": {
                "Worker": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}
            }
        },
    }
    obj = Object(Manifest(job))
    container = obj.training_container(obj.pods[0])
    assert container is not None and container.name == "a"


def runtime(kind: str, name: str, namespace: str | None = None, group: str = "trainer") -> Any:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": f"{group}.kubeflow.org/v1alpha1", "kind": kind, "metadata": meta}


def trainjob(ref: dict[str, Any], namespace: str = "ml") -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "llm", "namespace": namespace},
        "spec": {"runtimeRef": ref},
    }


def test_a_runtime_ref_without_kind_names_a_cluster_training_runtime() -> None:
    namespaced = runtime("TrainingRuntime", "torch", "ml")
    cluster_wide = runtime("ClusterTrainingRuntime", "torch")
    assert find_runtime(trainjob({"name": "torch"}), [namespaced, cluster_wide]) is cluster_wide


def test_a_training_runtime_is_found_in_the_trainjobs_namespace_only() -> None:
    other = runtime("TrainingRuntime", "torch", "other")
    own = runtime("TrainingRuntime", "torch", "ml")
    ref = {"kind": "TrainingRuntime", "name": "torch"}
    assert find_runtime(trainjob(ref), [other, own]) is own
    assert find_runtime(trainjob(ref), [other]) is None


def test_a_runtime_of_another_api_group_is_not_the_trainers() -> None:
    foreign = runtime("ClusterTrainingRuntime", "torch", group="example")
    assert find_runtime(trainjob({"name": "torch"}), [foreign]) is None


def test_the_node_pod_merges_resources_per_node_as_the_trainer_does() -> None:
    """Trainer v2.3 MergeResourceRequirements (TestMergeResourceRequirements "partial override
    keeps other runtime keys"): the runtime's resources stay where the TrainJob says nothing;
    trainops' view replaced them (issue 33)."""
    container = {"name": "node", "resources": {"limits": {"cpu": "5", "memory": "32Gi"}}}
    runtime = {
        "spec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {"name": "node", "template": {"spec": {"template": {"spec": {
                            "containers": [container]}}}}}
                    ]
                }
            }
        }
    }  # fmt: skip
    over = {"limits": {"nvidia.com/gpu": "2", "memory": "1Gi"}}
    job = {"metadata": {"name": "t"}, "spec": {"trainer": {"resourcesPerNode": over}}}
    (node,) = node_pod(job, runtime).containers()
    assert node.data["resources"] == {
        "limits": {"cpu": "5", "memory": "1Gi", "nvidia.com/gpu": "2"}
    }
