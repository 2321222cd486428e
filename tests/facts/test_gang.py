"""The gang an elastic job is placed as: render writes it, `gang-unschedulable` judges it.

Volcano places `minMember` pods at once, and the Training Operator v1.9.4 makes that
`runPolicy.schedulingPolicy.minAvailable` (pkg/controller.v1/common/job.go ReconcileJobs);
torchrun starts an elastic job with `minReplicas` nodes.
"""

from __future__ import annotations

from trainops.facts.capacity import PodGroup, pods_at_once
from trainops.facts.gpus import gang_minimum

ELASTIC = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "spec": {
        "elasticPolicy": {"minReplicas": 2, "maxReplicas": 6},
        "pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 6}},
    },
}


def test_the_elastic_minimum_counts_the_master_and_min_workers() -> None:
    assert gang_minimum(ELASTIC) == 3
    fixed = {**ELASTIC, "spec": {**ELASTIC["spec"], "elasticPolicy": None}}
    assert gang_minimum(fixed) == 7


def test_a_min_available_above_the_minimum_holds_that_many_workers_back() -> None:
    groups = [PodGroup("Master", 1, 1, 8, "h100"), PodGroup("Worker", 6, 2, 8, "h100")]
    assert pods_at_once(groups, None, 3) == {"Master": 1, "Worker": 2}
    assert pods_at_once(groups, 3, 3) == {"Master": 1, "Worker": 2}
    assert pods_at_once(groups, 5, 3) == {"Master": 1, "Worker": 4}
    assert pods_at_once(groups, 7, 3) == {"Master": 1, "Worker": 6}
    assert pods_at_once(groups, 99, 3) == {"Master": 1, "Worker": 6}
