"""A Volcano Job as the rules read it: one pod template per task.

Found by mutation testing (`make mutation`): no rule fixture is a Volcano Job, so nothing
checked how its tasks become pods. The expectations are Volcano's (batch.volcano.sh/v1alpha1
`spec.tasks[]`: `name`, `replicas`, a pod `template`; the job controller labels every pod
`volcano.sh/job-name`) and core Kubernetes' (a pod's `restartPolicy` defaults to Always).
"""

from __future__ import annotations

from typing import Any

from tests.rules.helpers import manifests_from_file, manifests_from_text
from tests.tools import require_upstream
from trainops.kube.objects import Object

# volcano-sh/volcano docs/user-guide/how_to_use_pytorch_plugin.md: master x1 and worker x2.
PYTORCH_PLUGIN_EXAMPLE = "volcano/docs__user-guide__how_to_use_pytorch_plugin.md.example.yaml"


def at(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def test_every_task_of_the_upstream_example_is_a_pod_template() -> None:
    path = require_upstream() / "examples" / PYTORCH_PLUGIN_EXAMPLE
    (manifest,) = manifests_from_file(path)
    obj = Object(manifest)
    assert obj.is_volcano_job and obj.is_training_job and not obj.is_kubeflow_job
    pods = obj.pods
    assert [(p.replica_type, p.replicas) for p in pods] == [("master", 1), ("worker", 2)]
    assert obj.pod_count() == 3
    assert obj.replica("Worker") is pods[1]
    for i, pod in enumerate(pods):
        # Findings point at the task's own template (file:line comes from these paths).
        assert pod.path == ("spec", "tasks", i, "template")
        assert at(obj.data, pod.path) is pod.template
        assert pod.restart_policy == "OnFailure" and pod.restart_policy_explicit
        assert pod.restart_policy_path == ("spec", "tasks", i, "template", "spec", "restartPolicy")
        assert at(obj.data, pod.restart_policy_path) == "OnFailure"
        assert pod.labels["volcano.sh/job-name"] == "pytorch-job"
        assert [c.name for c in pod.containers()] == [pod.replica_type]


def test_a_task_without_restart_policy_gets_the_pod_default() -> None:
    (manifest,) = manifests_from_text(
        """\
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: llama, namespace: ml}
spec:
  tasks:
    - name: trainer
      replicas: 4
      template:
        metadata: {labels: {app: llama}}
        spec:
          containers: [{name: trainer, image: trainer:1}]
"""
    )
    (pod,) = Object(manifest).pods
    assert (pod.replica_type, pod.replicas) == ("trainer", 4)
    assert pod.restart_policy == "Always" and not pod.restart_policy_explicit
    assert pod.labels == {"app": "llama", "volcano.sh/job-name": "llama"}


def test_a_job_of_another_group_named_job_is_not_a_volcano_job() -> None:
    (manifest,) = manifests_from_text(
        """\
apiVersion: batch/v1
kind: Job
metadata: {name: prep}
spec:
  parallelism: 3
  template:
    spec:
      restartPolicy: Never
      containers: [{name: prep, image: prep:1}]
"""
    )
    obj = Object(manifest)
    assert not obj.is_volcano_job and not obj.is_training_job
    (pod,) = obj.pods
    assert pod.replicas == 3 and pod.path == ("spec", "template")
