"""Rules about training pods run on every pod template, whatever owns it, and say what is
wrong in terms of that owner (an Indexed Job's subdomain, a JobSet's DNS names); pods that do
not train (a Deployment serving a model) are left to the other rules."""

from __future__ import annotations

from tests.rules.helpers import FIXTURES, manifests_from_file, manifests_from_text, run
from trainops.kube.templates import ray_pods

GPU_POD = """
      containers:
        - name: main
          image: registry.example/app:1.0
          command: [torchrun, --nproc-per-node=8, train.py, --backend=nccl]
          resources: {limits: {nvidia.com/gpu: 8}}
"""


def _messages(text: str, rule: str) -> list[str]:
    return [f.message for f in run(manifests_from_text(text)) if f.rule == rule]


def test_a_deployment_serving_a_model_is_not_a_training_pod() -> None:
    """A long-running workload holding GPUs serves (vLLM, Triton): an accelerator alone does
    not make its pods training pods; a launcher does (issue 38.1)."""
    deployment = (
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: serve}\n"
        "spec:\n  selector: {matchLabels: {app: serve}}\n  template:\n"
        "    metadata: {labels: {app: serve}}\n    spec:"
    )
    serving = GPU_POD.replace("[torchrun, --nproc-per-node=8, train.py, --backend=nccl]", "[vllm]")
    assert _messages(deployment + serving, "resources-unbounded") == []
    assert _messages(deployment + serving, "shm-missing") == []
    assert _messages(deployment + GPU_POD, "resources-unbounded")
    assert _messages(deployment + GPU_POD, "shm-missing")


def test_batch_job_pod_and_jobset_pods_are_training_pods() -> None:
    job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: t}\nspec:\n  template:\n    spec:"
    pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: t}\nspec:"
    jobset = (
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: t}\n"
        "spec:\n  replicatedJobs:\n    - name: w\n      template:\n        spec:\n"
        "          template:\n            spec:"
    )
    for head, indent in ((job, 4), (pod, 0), (jobset, 10)):
        text = head + "\n".join(" " * indent + line for line in GPU_POD.splitlines())
        assert len(_messages(text, "resources-unbounded")) == 1, head
        assert _messages(text, "shm-missing"), head


def test_indexed_job_without_subdomain_says_what_to_add() -> None:
    path = FIXTURES / "rendezvous-unresolvable" / "fail-indexed.yaml"
    [message] = [
        f.message for f in run(manifests_from_file(path)) if f.rule == "rendezvous-unresolvable"
    ]
    assert "`demo-0.demo-svc`" in message
    assert "spec.template.spec.subdomain" in message


def test_indexed_job_whose_subdomain_names_no_service() -> None:
    text = (FIXTURES / "rendezvous-unresolvable" / "pass-indexed.yaml").read_text()
    without_service = text.split("---\n", 1)[1]
    [message] = _messages(without_service, "rendezvous-unresolvable")
    assert "subdomain `demo-svc` names no Service in the manifest set" in message


def test_jobset_address_names_the_name_jobset_publishes() -> None:
    path = FIXTURES / "rendezvous-unresolvable" / "fail-jobset.yaml"
    [message] = [
        f.message for f in run(manifests_from_file(path)) if f.rule == "rendezvous-unresolvable"
    ]
    assert "`demo-workers-0-0.demo`" in message


def test_nproc_without_gpu_but_with_another_accelerator_is_fine() -> None:
    """Neuron (and a DRA claim) run several processes per pod without `nvidia.com/gpu`."""
    base = (FIXTURES / "nproc-gpu-mismatch" / "fail-no-gpu.yaml").read_text()
    assert _messages(base, "nproc-gpu-mismatch")
    neuron = base.replace("{memory: 64Gi", "{aws.amazon.com/neuron: 1, memory: 64Gi")
    assert _messages(neuron, "nproc-gpu-mismatch") == []
    claim = base.replace(
        "      restartPolicy: Never",
        "      restartPolicy: Never\n"
        "      resourceClaims: [{name: gpus, resourceClaimTemplateName: t}]",
    )
    assert _messages(claim, "nproc-gpu-mismatch") == []


def test_removed_api_is_one_finding_and_its_pods_are_still_read() -> None:
    path = FIXTURES / "api-removed" / "fail.yaml"
    text = path.read_text().replace("memory: 32Gi, ", "")
    findings = run(manifests_from_text(text))
    assert [f.rule for f in findings if f.rule == "api-removed"] == ["api-removed"]
    assert "kubeflow.org/v2beta1" in next(f.message for f in findings if f.rule == "api-removed")
    # The worker's missing memory limit is still seen through the removed API.
    assert any(f.rule == "resources-unbounded" for f in findings)


def test_resources_unbounded_one_finding_per_container() -> None:
    path = FIXTURES / "resources-unbounded" / "fail-job.yaml"
    [message] = [
        f.message for f in run(manifests_from_file(path)) if f.rule == "resources-unbounded"
    ]
    assert "no memory limit and no CPU request" in message


def test_a_ray_cluster_pods_are_read_per_group() -> None:
    """KubeRay: the head (one pod) and each worker group (`replicas` x `numOfHosts` pods);
    a RayJob's cluster sits under `rayClusterSpec`, beside its submitter pod."""
    pod = {"spec": {"containers": [{"name": "ray", "image": "registry.example/ray:2.52"}]}}
    cluster = {"headGroupSpec": {"template": pod},
               "workerGroupSpecs": [{"groupName": "tpu", "replicas": 2, "numOfHosts": 4,
                                     "template": pod}]}  # fmt: skip
    found = ray_pods("RayCluster", {"metadata": {"name": "rc"}, "spec": cluster})
    assert [(p.replica_type, p.replicas, p.path) for p in found] == [
        ("head", 1, ("spec", "headGroupSpec", "template")),
        ("tpu", 8, ("spec", "workerGroupSpecs", 0, "template")),
    ]
    job = {"spec": {"submitterPodTemplate": pod, "rayClusterSpec": cluster}}
    assert [p.replica_type for p in ray_pods("RayJob", job)] == ["submitter", "head", "tpu"]
