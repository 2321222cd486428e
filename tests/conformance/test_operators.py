"""The Kubeflow Training Operator v1.9.4 and the MPI Operator v0.8.0 read our jobs: their
validation and the Volcano PodGroup they create, ported small and cited.

Training Operator (github.com/kubeflow/trainer, tag v1.9.4):
- `pkg/webhooks/pytorch/pytorchjob_webhook.go` validatePyTorchJob: the name a DNS-1035 label;
  an elastic policy needs a Worker; replica types Master/Worker only, each with containers,
  an image in each and one container named `pytorch`; Master replicas exactly 1, others >= 1;
  `pkg/common/util/webhooks.go` ValidateRunPolicy (`managedBy` one of two controllers);
- `pkg/webhooks/tensorflow/tfjob_webhook.go` validateTFJob: a container named `tensorflow`
  with an image in every replica type, at most one Chief or Master;
- `pkg/apis/kubeflow.org/v1/mpi_validation.go` ValidateV1MpiJobSpec (MPIJob v1, no webhook:
  the controller refuses it): Launcher/Worker only, a Launcher of one replica, named
  containers with images; no name check (the v1 MPIJob makes no Services);
- `pkg/controller.v1/common/job.go` ReconcileJobs: the Volcano PodGroup's `minMember` is
  `runPolicy.schedulingPolicy.minAvailable`, else every replica; its queue
  `schedulingPolicy.queue`, else unset.
MPI Operator (github.com/kubeflow/mpi-operator, tag v0.8.0): SetDefaults_MPIJob then
ValidateMPIJob (`mpi_operator_port.py`, with its own test vectors in test_mpi_operator.py;
`pkg/controller/mpi_job_controller.go` refuses an invalid job), and
`pkg/controller/podgroup.go` newPodGroup / calculateMinAvailable (minAvailable, else Workers
+ 1; queue from `schedulingPolicy.queue`, else the `scheduling.volcano.sh/queue-name`
annotation, else unset).
Either PodGroup then meets Volcano's PodGroup webhook, which moves a `default` (or unset)
queue to the namespace's (`volcano_port.py`).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.conformance import mpi_operator_port, volcano_port
from tests.conformance.built_repos import IDS, overlay, scheduler

pytestmark = pytest.mark.slow

DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
# The Training Operator's own set (`pkg/common/util/webhooks.go`); the MPI Operator has another.
MANAGED_BY = {"kubeflow.org/training-operator", "kueue.x-k8s.io/multikueue"}
QUEUE_ANNOTATION = volcano_port.QUEUE_ANNOTATION
NAMESPACE_QUEUE = "the-namespaces-queue"


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return ((spec.get("template") or {}).get("spec") or {}).get("containers") or []


def _common(job: dict[str, Any], key: str, default_container: str) -> list[str]:
    errors = []
    name = job["metadata"]["name"]
    if default_container and (len(name) > 63 or not DNS1035.match(name)):
        errors.append(f"metadata.name {name!r}: not a DNS-1035 label")
    managed = (job["spec"].get("runPolicy") or {}).get("managedBy")
    if managed is not None and managed not in MANAGED_BY:
        errors.append("spec.runPolicy.managedBy: not supported")
    for rtype, spec in (job["spec"].get(key) or {}).items():
        containers = _containers(spec or {})
        if not containers:
            errors.append(f"{rtype}: containers must be specified")
        if any(not c.get("image") for c in containers):
            errors.append(f"{rtype}: image must be required")
        if default_container and not any(c.get("name") == default_container for c in containers):
            errors.append(f"{rtype}: must have a container named {default_container}")
    return errors


def validate_pytorchjob(job: dict[str, Any]) -> list[str]:
    errors = _common(job, "pytorchReplicaSpecs", "pytorch")
    specs = job["spec"].get("pytorchReplicaSpecs") or {}
    policy = job["spec"].get("elasticPolicy")
    if policy is not None:
        if "Worker" not in specs:
            errors.append("Worker must be configured if elastic policy is used")
        if "nProcPerNode" in policy and "nprocPerNode" in job["spec"]:
            errors.append("elasticPolicy.nProcPerNode must not be used with nprocPerNode")
    for rtype, spec in specs.items():
        if rtype not in {"Master", "Worker"}:
            errors.append(f"{rtype}: not a supported replica type")
        replicas = spec.get("replicas")
        if rtype == "Master" and replicas != 1:
            errors.append("Master replicas must be 1")
        elif replicas is not None and replicas < 1:
            errors.append(f"{rtype} replicas must be at least 1")
    return errors


def validate_tfjob(job: dict[str, Any]) -> list[str]:
    errors = _common(job, "tfReplicaSpecs", "tensorflow")
    leads = [t for t in job["spec"].get("tfReplicaSpecs") or {} if t in {"Chief", "Master"}]
    if len(leads) > 1:
        errors.append("must not have more than 1 Chief or Master role")
    return errors


def validate_mpijob_v1(job: dict[str, Any]) -> list[str]:
    specs = job["spec"].get("mpiReplicaSpecs") or {}
    errors = _common(job, "mpiReplicaSpecs", "")
    for rtype, spec in specs.items():
        if rtype not in {"Launcher", "Worker"}:
            errors.append(f"{rtype}: MPIReplicaType must be Launcher or Worker")
        if any(not c.get("name") for c in _containers(spec)):
            errors.append(f"{rtype}: container name undefined")
    launcher = specs.get("Launcher")
    if launcher is None:
        errors.append("Launcher ReplicaSpec must be present")
    elif launcher.get("replicas", 1) != 1:
        errors.append("There must be only 1 launcher replica")
    return errors


def validate_mpijob_v2beta1(job: dict[str, Any]) -> list[str]:
    """SetDefaults_MPIJob, then ValidateMPIJob."""
    return mpi_operator_port.validate(mpi_operator_port.set_defaults(job))


def podgroup(job: dict[str, Any], namespace: dict[str, str] | None = None) -> dict[str, Any]:
    """The Volcano PodGroup the operator creates for `job` (minMember and queue), with the
    queue Volcano's webhook admits it to in a namespace with these annotations."""
    spec = job["spec"]
    key = next(k for k in spec if k.endswith("ReplicaSpecs"))
    specs = spec[key]
    policy = (spec.get("runPolicy") or {}).get("schedulingPolicy") or {}
    if job["apiVersion"] == "kubeflow.org/v2beta1":
        workers = (specs.get("Worker") or {}).get("replicas", 0)
        queue = policy.get("queue") or job["metadata"].get("annotations", {}).get(QUEUE_ANNOTATION)
        minimum = policy.get("minAvailable", workers + 1)
    else:
        queue = policy.get("queue")
        minimum = policy.get("minAvailable", sum(s.get("replicas", 1) for s in specs.values()))
    return {"minMember": minimum, "queue": volcano_port.admitted_queue(queue, namespace)}


VALIDATORS = {
    ("kubeflow.org/v1", "PyTorchJob"): validate_pytorchjob,
    ("kubeflow.org/v1", "TFJob"): validate_tfjob,
    ("kubeflow.org/v1", "MPIJob"): validate_mpijob_v1,
    ("kubeflow.org/v2beta1", "MPIJob"): validate_mpijob_v2beta1,
}


def _jobs(overlay_id: str) -> list[dict[str, Any]]:
    return [o for o in overlay(overlay_id).objects if (o["apiVersion"], o["kind"]) in VALIDATORS]


def test_the_test_repositories_cover_every_operator_kind() -> None:
    kinds = {(o["apiVersion"], o["kind"]) for i in IDS for o in _jobs(i)}
    assert kinds == set(VALIDATORS), set(VALIDATORS) - kinds


@pytest.mark.parametrize("overlay_id", IDS)
def test_the_operators_admit_every_job(overlay_id: str) -> None:
    for job in _jobs(overlay_id):
        errors = VALIDATORS[job["apiVersion"], job["kind"]](job)
        assert errors == [], (job["kind"], job["metadata"]["name"], errors)


def _gang(job: dict[str, Any]) -> int:
    """The pods the job starts with, read from the job as its consumers read it: an elastic
    PyTorchJob's Workers at `elasticPolicy.minReplicas` plus its Master if any (torchrun's
    `--nnodes=min:max` starts at min), every pod of any other job."""
    spec = job["spec"]
    specs = spec[next(k for k in spec if k.endswith("ReplicaSpecs"))]
    elastic = spec.get("elasticPolicy") or {}
    return sum(
        min(elastic["minReplicas"], s.get("replicas", 1))
        if rtype == "Worker" and "minReplicas" in elastic
        else s.get("replicas", 1)
        for rtype, s in specs.items()
    )


@pytest.mark.parametrize("overlay_id", IDS)
def test_the_volcano_podgroup_is_the_profiles_queue_and_the_elastic_minimum(
    overlay_id: str,
) -> None:
    """Issue 23 item 4: an elastic job's gang was all its pods (`minAvailable` = every pod),
    so it waited for its maximum size; now it starts when its minimum fits."""
    built = overlay(overlay_id)
    sched = scheduler(built)
    for job in _jobs(overlay_id):
        policy = (job["spec"].get("runPolicy") or {}).get("schedulingPolicy")
        if sched.get("name") != "volcano":
            assert policy is None, job["metadata"]["name"]
            continue
        queue = sched.get("queue", volcano_port.DEFAULT_QUEUE)
        # Volcano's webhook keeps a named queue; `default` follows the namespace's annotation.
        moved = queue if queue != volcano_port.DEFAULT_QUEUE else NAMESPACE_QUEUE
        for namespace, lands in ((None, queue), ({QUEUE_ANNOTATION: NAMESPACE_QUEUE}, moved)):
            expected = {"minMember": _gang(job), "queue": lands}
            assert podgroup(job, namespace) == expected, job["metadata"]["name"]


def test_an_elastic_job_is_among_the_volcano_jobs() -> None:
    """The test above bites only if some elastic job runs under Volcano."""
    elastic = [
        job
        for i in IDS
        if scheduler(overlay(i)).get("name") == "volcano"
        for job in _jobs(i)
        if "elasticPolicy" in job["spec"]
    ]
    assert elastic
    assert any(
        podgroup(j)["minMember"]
        < sum(s.get("replicas", 1) for s in j["spec"]["pytorchReplicaSpecs"].values())
        for j in elastic
    )
