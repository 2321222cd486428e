"""The `name-refused` rule (issue 33 item 3) on manifests trainops did not render: each kind's
consumer, with the upstream test cases of tests/jobspec/test_consumer_names.py as input."""

from __future__ import annotations

from tests.rules.helpers import manifests_from_text, run

TRAINJOB = """
apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: NAME, namespace: ml-train}
spec:
  runtimeRef: {name: torch, kind: ClusterTrainingRuntime, apiGroup: trainer.kubeflow.org}
  trainer: {numNodes: NODES}
---
apiVersion: trainer.kubeflow.org/v1alpha1
kind: ClusterTrainingRuntime
metadata: {name: torch}
spec:
  mlPolicy: {numNodes: 1, torch: {}}
  template:
    spec:
      replicatedJobs:
        - name: node
          replicas: 1
          template:
            metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
            spec:
              template:
                spec:
                  containers: [{name: node, image: "registry.example/train:1.0"}]
"""


def _messages(text: str) -> list[str]:
    return [f.message for f in run(manifests_from_text(text)) if f.rule == "name-refused"]


def test_a_trainjobs_pod_names_count_its_nodes() -> None:
    """`<name>-node-0-<numNodes - 1>-abcde`: 48 characters fit up to 10 nodes, not 11."""
    name = "a" * 48
    assert _messages(TRAINJOB.replace("NAME", name).replace("NODES", "10")) == []
    (message,) = _messages(TRAINJOB.replace("NAME", name).replace("NODES", "11"))
    assert f"`{name}-node-0-10-abcde` is longer than 63 characters (64)" in message
    assert "jobset_webhook.go:249" in message and "shorten the name" in message


def test_a_trainjob_name_starting_with_a_digit() -> None:
    (message,) = _messages(TRAINJOB.replace("NAME", "7b-llm").replace("NODES", "2"))
    assert "trainjob_types.go:36" in message and "start the name with a letter" in message


def test_a_service_name_is_a_dns_1035_label() -> None:
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: NAME, namespace: ml-train}\n"
    service += "spec: {ports: [{port: 80}]}\n"
    assert _messages(service.replace("NAME", "resnet-metrics")) == []
    assert _messages(service.replace("NAME", "7b-metrics"))


def test_jobset_job_name_vector() -> None:
    """jobset_webhook_test.go TestValidateCreate 'jobset name will result in job name being
    too long' (v0.12.0): 62 a's, replicated job `rj` with 101 replicas, not Indexed."""
    jobset = f"""
apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {{name: {"a" * 62}, namespace: ml-train}}
spec:
  replicatedJobs:
    - name: rj
      replicas: 101
      template: {{spec: {{completionMode: NonIndexed, template: {{spec: {{containers: []}}}}}}}}
"""
    (message,) = _messages(jobset)
    assert "jobset_webhook.go:236" in message
