"""Issue 35 item 5: every pod template of every kind trainops knows is fenced, and a kind it
does not know that holds a pod template is a finding, not a pass. On main each manifest below
exited 0 under `validate --manifests --cluster`: a TrainJob runtime patch aimed at
`dataset-initializer`, a TrainJob's `initializer.secretRef`, a ClusterTrainingRuntime's own
pods, a ReplicationController, a LeaderWorkerSet, a kind trainops does not read."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.rules.conftest import make_cluster
from tests.rules.helpers import manifests_from_text, run
from trainops.facts.pod_fence import PodFence

ESCAPE = {  # one pod spec asking for what the fence refuses: the delivery account, a Secret
    "serviceAccountName": "trainops-delivery",
    "automountServiceAccountToken": False,
    "containers": [{"name": "c", "image": "registry.example/c:1.0"}],
    "volumes": [{"name": "creds", "secret": {"secretName": "other-team"}}],
}
NODE = {"hostPID": True, "automountServiceAccountToken": False,
        "containers": [{"name": "c", "image": "registry.example/c:1.0"}]}  # fmt: skip
META = {"name": "x", "namespace": "ml-train"}


def _runtime(kind: str, initializer: dict[str, Any]) -> dict[str, Any]:
    jobs = [
        {"name": "dataset-initializer", "template": {"spec": {"template": {"spec": initializer}}}},
        {"name": "node", "template": {"spec": {"template": {"spec": {
            "automountServiceAccountToken": False,
            "containers": [{"name": "node", "image": "registry.example/t:1.0"}]}}}}},
    ]  # fmt: skip
    meta = {"name": "x"} if kind == "ClusterTrainingRuntime" else META
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind, "metadata": meta,
            "spec": {"mlPolicy": {"numNodes": 1, "torch": {}},
                     "template": {"spec": {"replicatedJobs": jobs}}}}  # fmt: skip


def _trainjob(**spec: Any) -> dict[str, Any]:
    ref = {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": "x"}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": META,
            "spec": {"runtimeRef": ref, "trainer": {"image": "registry.example/t:1.0"},
                     **spec}}  # fmt: skip


CLEAN_INITIALIZER = {"automountServiceAccountToken": False,
                     "containers": [{"name": "dataset-initializer",
                                     "image": "registry.example/i:1.0"}]}  # fmt: skip
PATCHED = {
    "spec": {
        "serviceAccountName": "trainops-delivery",
        "volumes": [{"name": "creds", "secret": {"secretName": "other-team"}}],
    }
}
PATCH = {"manager": "example.com/author", "trainingRuntimeSpec": {"template": {"spec": {
    "replicatedJobs": [{"name": "dataset-initializer",
                        "template": {"spec": {"template": PATCHED}}}]}}}}  # fmt: skip

CASES: dict[str, list[dict[str, Any]]] = {
    "trainjob-patch-on-initializer": [_runtime("TrainingRuntime", CLEAN_INITIALIZER),
                                      _trainjob(runtimePatches=[PATCH])],
    "trainjob-patch-without-runtime": [_trainjob(runtimePatches=[PATCH])],
    "trainjob-initializer-secret": [_runtime("TrainingRuntime", CLEAN_INITIALIZER), _trainjob(
        initializer={"dataset": {"storageUri": "hf://x", "secretRef": {"name": "other-team"}}})],
    "cluster-runtime-own-pods": [_runtime("ClusterTrainingRuntime", ESCAPE)],
    "training-runtime-own-pods": [_runtime("TrainingRuntime", ESCAPE)],
    "replication-controller": [{"apiVersion": "v1", "kind": "ReplicationController",
                                "metadata": META, "spec": {"replicas": 2,
                                "template": {"spec": ESCAPE}}}],
    "leader-worker-set": [{"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
                           "metadata": META, "spec": {"replicas": 2, "leaderWorkerTemplate": {
                               "size": 4, "leaderTemplate": {"spec": ESCAPE},
                               "workerTemplate": {"spec": NODE}}}}],
    "pod-template": [{"apiVersion": "v1", "kind": "PodTemplate", "metadata": META,
                      "template": {"spec": ESCAPE}}],
    "ray-job": [{"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": META,
                 "spec": {"entrypoint": "python t.py", "rayClusterSpec": {
                     "headGroupSpec": {"template": {"spec": NODE}},
                     "workerGroupSpecs": [{"groupName": "g", "template": {"spec": ESCAPE}}]}}}],
    "unknown-kind": [{"apiVersion": "ray.io/v1", "kind": "RayService", "metadata": META,
                      "spec": {"rayClusterConfig": {"headGroupSpec": {
                          "template": {"spec": ESCAPE}}}}}],
}  # fmt: skip
SAYS = {
    "trainjob-initializer-secret": ("`envFrom` a Secret",),
    "unknown-kind": ("delivery account", "Secret volume", "not a kind trainops reads"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_pod_template_is_held_to_the_fence(case: str) -> None:
    text = yaml.safe_dump_all(CASES[case])
    cluster = make_cluster(job_access=PodFence(schedulers=frozenset({"volcano"})))
    messages = [f.message for f in run(manifests_from_text(text), cluster)
                if f.rule == "pod-fence" and f.severity == "error"]  # fmt: skip
    for says in SAYS.get(case, ("delivery account", "Secret volume")):
        assert any(says in m for m in messages), (says, messages)
    if case != "unknown-kind":
        assert not any("not a kind trainops reads" in m for m in messages), messages


def test_the_pod_security_floor_reads_every_template_without_a_profile() -> None:
    """hostPID in a LeaderWorkerSet's workers, in a runtime's initializer and in a kind
    trainops does not read: `pod-security-baseline` errors with no profile at all."""
    docs = [
        *CASES["leader-worker-set"],
        _runtime("ClusterTrainingRuntime", {**CLEAN_INITIALIZER, "hostPID": True}),
        {"apiVersion": "example.com/v1", "kind": "Runner", "metadata": META,
         "spec": {"pod": {"spec": NODE}}},
    ]  # fmt: skip
    findings = run(manifests_from_text(yaml.safe_dump_all(docs)))
    floor = [f for f in findings if f.rule == "pod-security-baseline"]
    kinds = {f.kind for f in floor if "hostPID" in f.message}
    assert kinds == {"LeaderWorkerSet", "ClusterTrainingRuntime", "Runner"}, findings


def test_a_kind_without_a_pod_template_is_not_a_finding() -> None:
    """A CRD's schema names `containers` too, as a property: not a pod template."""
    crd = {"apiVersion": "example.com/v1", "kind": "Settings", "metadata": META,
           "spec": {"properties": {"containers": {"type": "array"}}, "items": ["a"]}}  # fmt: skip
    findings = run(manifests_from_text(yaml.safe_dump(crd)), make_cluster())
    assert not [f for f in findings if f.rule == "pod-fence"], findings
