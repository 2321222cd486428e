"""What the batch schedulers read from the objects we render.

Kueue admits a workload by the queue label on the job (https://kueue.sigs.k8s.io/docs/
concepts/local_queue/) and flips `suspend` itself; Volcano schedules pods whose
`schedulerName` is `volcano` as one gang (https://volcano.sh/en/docs/podgroup/).
"""

from __future__ import annotations

KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
# Volcano's queue for a pod or PodGroup (pkg/apis/scheduling: `scheduling.volcano.sh/queue-name`).
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"
# The keys that name a queue, whichever scheduler reads them.
QUEUE_KEYS = frozenset({KUEUE_QUEUE_LABEL, VOLCANO_QUEUE_ANNOTATION})
VOLCANO_SCHEDULER = "volcano"
# kube-scheduler's name: what a pod without `schedulerName` gets (PodSpec API reference).
DEFAULT_SCHEDULER = "default-scheduler"
VOLCANO_JOB_GROUP = "batch.volcano.sh"
# Volcano's Queue and PodGroup kinds.
VOLCANO_SCHEDULING_GROUP = "scheduling.volcano.sh"

# Kueue's job integrations by the framework names of its Configuration
# (`integrations.frameworks`): what trainops renders, and which one manages it.
KUEUE_FRAMEWORKS = {
    ("kubeflow.org/v1", "PyTorchJob"): "kubeflow.org/pytorchjob",
    ("kubeflow.org/v1", "TFJob"): "kubeflow.org/tfjob",
    # Kueue's mpijob integration is the MPI Operator's v2beta1 MPIJob only
    # (kubernetes-sigs/kueue v0.19.2 pkg/controller/jobs/mpijob imports mpi-operator v2beta1).
    ("kubeflow.org/v2beta1", "MPIJob"): "kubeflow.org/mpijob",
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"): "trainer.kubeflow.org/trainjob",
}
# The frameworks of that list each Kueue release's default Configuration enables
# (config/components/manager/controller_manager_config.yaml): v0.19 turned PyTorchJob and
# TFJob off (commented out), v0.14 added the Trainer's TrainJob.
KUEUE_DEFAULT_OFF_SINCE = {"kubeflow.org/pytorchjob": (0, 19), "kubeflow.org/tfjob": (0, 19)}
KUEUE_DEFAULT_ON_SINCE = {"trainer.kubeflow.org/trainjob": (0, 14)}
# Kueue's own API: v1beta2 served since v0.15, v1beta1 deprecated since v0.16 (the CRDs'
# `deprecated: true`, config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml).
KUEUE_GROUP = "kueue.x-k8s.io"
KUEUE_V1BETA2_SINCE = (0, 15)
KUEUE_V1BETA1_DEPRECATED_SINCE = (0, 16)


def kueue_default_integrations(version: tuple[int, int]) -> frozenset[str]:
    """The frameworks of `KUEUE_FRAMEWORKS` Kueue `version`'s default Configuration enables."""
    return frozenset(
        name
        for name in KUEUE_FRAMEWORKS.values()
        if version < KUEUE_DEFAULT_OFF_SINCE.get(name, (99, 0))
        and version >= KUEUE_DEFAULT_ON_SINCE.get(name, (0, 0))
    )


def kueue_api_version(version: tuple[int, int]) -> str:
    """The Kueue API version to write for objects on a cluster running Kueue `version`."""
    return f"{KUEUE_GROUP}/{'v1beta2' if version >= KUEUE_V1BETA2_SINCE else 'v1beta1'}"
