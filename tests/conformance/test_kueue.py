"""Kueue manages our jobs on a Kueue cluster: ported from kubernetes-sigs/kueue.

- `pkg/controller/jobframework/utils.go` QueueNameForObject (v0.19.2): the LocalQueue is the
  `kueue.x-k8s.io/queue-name` label of the job object itself (no annotation, no pod label);
  a job without it is not managed (`manageJobsWithoutQueueName` defaults to false).
- A job kind is reconciled only when its integration is enabled in Kueue's Configuration
  (`integrations.frameworks`); the framework names are each controller's `FrameworkName`
  (`pkg/controller/jobs/kubeflow/jobs/pytorchjob`, `.../tfjob`, `pkg/controller/jobs/mpijob`
  (MPI Operator v2beta1 only), `pkg/controller/jobs/trainjob`). The default Configuration
  (`config/components/manager/controller_manager_config.yaml`) enables PyTorchJob and TFJob
  up to v0.18.0 and not in v0.19.2. A profile's `installed.kueue.integrations` replaces it.

- `pkg/scheduler/flavorassigner/flavorassigner.go` (v0.19.2) findFlavorForPodSets: a
  resource a pod set requests that no resource group of the ClusterQueue covers leaves the
  workload inadmissible (`resource X unavailable in ClusterQueue`, :1071); a zero request
  is not a request. The pod set's requests are its containers' (a limit alone is the request,
  as the API server defaults it), the larger of them and each init container's.

The expectations are Kueue's, written here from its source, not read from trainops' facts.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.built_repos import IDS, overlay, scheduler
from tests.conformance.trainer_merge import node_pod
from trainops.facts.quantity import parse_quantity

pytestmark = pytest.mark.slow

QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
FRAMEWORK = {
    ("kubeflow.org/v1", "PyTorchJob"): "kubeflow.org/pytorchjob",
    ("kubeflow.org/v1", "TFJob"): "kubeflow.org/tfjob",
    ("kubeflow.org/v2beta1", "MPIJob"): "kubeflow.org/mpijob",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "trainer.kubeflow.org/trainjob",
}
# The default Configuration's frameworks of those kinds, per release.
DEFAULT = {
    "0.18": {
        "kubeflow.org/mpijob",
        "kubeflow.org/pytorchjob",
        "kubeflow.org/tfjob",
        "trainer.kubeflow.org/trainjob",
    },
    "0.19": {"kubeflow.org/mpijob", "trainer.kubeflow.org/trainjob"},
}
JOB_KINDS = {"PyTorchJob", "TFJob", "MPIJob", "TrainJob"}


def enabled(profile: dict[str, Any]) -> set[str]:
    kueue = (profile.get("installed") or {}).get("kueue") or {}
    if "integrations" in kueue:
        return set(kueue["integrations"])
    return DEFAULT[".".join(str(kueue.get("version", "0.19")).split(".")[:2])]


def managed_queue(job: dict[str, Any], frameworks: set[str]) -> str | None:
    """The LocalQueue Kueue admits `job` through, or None when Kueue ignores it."""
    framework = FRAMEWORK.get((job["apiVersion"], job["kind"]))
    if framework is None or framework not in frameworks:
        return None
    return (job["metadata"].get("labels") or {}).get(QUEUE_LABEL) or None


@pytest.mark.parametrize("overlay_id", IDS)
def test_kueue_admits_every_job_through_the_profiles_queue(overlay_id: str) -> None:
    """Issue 23 item 5: on a v0.19 cluster with default integrations a PyTorchJob's label was
    ignored; such a profile is now refused at load (tests/jobspec/test_installed.py)."""
    built = overlay(overlay_id)
    sched = scheduler(built)
    jobs = list(built.of_kind(*JOB_KINDS))
    for job in jobs:
        labels = job["metadata"].get("labels") or {}
        if sched.get("name") != "kueue":
            assert QUEUE_LABEL not in labels, job["metadata"]["name"]
            continue
        assert managed_queue(job, enabled(built.profile)) == sched["queue"], (
            job["kind"],
            job["metadata"]["name"],
        )


def test_the_repositories_run_kueue_at_both_defaults() -> None:
    """Both sides of v0.19's change are exercised: an 0.18 default and a declared list."""
    profiles = [overlay(i).profile for i in IDS if scheduler(overlay(i)).get("name") == "kueue"]
    versions = {
        str(((p.get("installed") or {}).get("kueue") or {}).get("version")) for p in profiles
    }
    assert "0.18" in versions
    assert any("integrations" in ((p.get("installed") or {}).get("kueue") or {}) for p in profiles)


def test_the_port_ignores_a_pytorchjob_under_0_19_defaults() -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"labels": {QUEUE_LABEL: "q"}},
    }
    assert managed_queue(job, DEFAULT["0.19"]) is None
    assert managed_queue(job, DEFAULT["0.18"]) == "q"


def _container_requests(container: dict[str, Any]) -> set[str]:
    resources = container.get("resources") or {}
    merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    return {name for name, value in merged.items() if (parse_quantity(value) or 0) > 0}


def podset_resources(pod_spec: dict[str, Any]) -> set[str]:
    """The resources a pod set requests (non-zero), init containers included."""
    found: set[str] = set()
    for key in ("containers", "initContainers"):
        for container in pod_spec.get(key) or []:
            found |= _container_requests(container)
    return found


def unavailable(requested: set[str], cluster_queue: dict[str, Any]) -> list[str]:
    """findFlavorForPodSets' refusals: the requested resources no resource group covers."""
    groups = cluster_queue.get("spec", {}).get("resourceGroups") or []
    covered = {r for g in groups for r in g.get("coveredResources") or []}
    return [f"resource {r} unavailable in ClusterQueue" for r in sorted(requested - covered)]


def test_the_port_follows_the_flavorassigner_tests() -> None:
    """flavorassigner_test.go (v0.19.2) "resource not listed in clusterQueue" and "zero resource
    request not in clusterQueue should succeed"."""
    cluster_queue = {"spec": {"resourceGroups": [{"coveredResources": ["cpu"]}]}}
    gpu = {"containers": [{"resources": {"requests": {"example.com/gpu": "2"}}}]}
    assert unavailable(podset_resources(gpu), cluster_queue) == [
        "resource example.com/gpu unavailable in ClusterQueue"
    ]
    zero = {"containers": [{"resources": {"requests": {"cpu": "1", "example.com/gpu": "0"}}}]}
    assert unavailable(podset_resources(zero), cluster_queue) == []


def _pod_specs(built: Any, job: dict[str, Any]) -> list[dict[str, Any]]:
    if job["kind"] == "TrainJob":
        ref = job["spec"]["runtimeRef"]
        runtime = built.find(ref.get("kind", "ClusterTrainingRuntime"), ref["name"])
        return [node_pod(runtime, job)["spec"]]
    key = next(k for k in job["spec"] if k.endswith("ReplicaSpecs"))
    return [s["template"]["spec"] for s in job["spec"][key].values()]


@pytest.mark.parametrize("overlay_id", IDS)
def test_the_clusterqueue_covers_every_resource_our_pods_request(overlay_id: str) -> None:
    """Issue 33 item 7: a ClusterQueue without a resource every pod requests (the RDMA device)
    never admits the jobs; what the overlay delivers covers what its jobs ask for."""
    built = overlay(overlay_id)
    sched = scheduler(built)
    if sched.get("name") != "kueue":
        return
    locals_ = {(q["metadata"]["namespace"], q["metadata"]["name"]): q
               for q in built.of_kind("LocalQueue")}  # fmt: skip
    for job in built.of_kind(*JOB_KINDS):
        local = locals_.get((job["metadata"]["namespace"], sched["queue"]))
        if local is None:  # provided by the platform: not ours to judge
            continue
        cluster_queue = built.find("ClusterQueue", local["spec"]["clusterQueue"])
        assert cluster_queue is not None
        for pod_spec in _pod_specs(built, job):
            assert unavailable(podset_resources(pod_spec), cluster_queue) == [], job["metadata"][
                "name"
            ]


def test_a_delivered_clusterqueue_is_among_the_kueue_clusters() -> None:
    """The test above bites only if some Kueue cluster delivers its ClusterQueue."""
    assert any(
        any(overlay(i).of_kind("ClusterQueue"))
        for i in IDS
        if scheduler(overlay(i)).get("name") == "kueue"
    )
