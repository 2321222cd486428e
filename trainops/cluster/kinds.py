"""The kinds the cluster-facing commands read, and the labels that tie pods to their job."""

from __future__ import annotations

from typing import Any

from trainops.facts.trainer import trainjob_running

# Training jobs: the Kubeflow Training Operator v1 kinds, and Trainer v2's TrainJob once a
# cluster serves it (https://www.kubeflow.org/docs/components/trainer/).
TRAINING_KINDS: tuple[tuple[str, str], ...] = (
    ("kubeflow.org/v1", "PyTorchJob"),
    ("kubeflow.org/v1", "TFJob"),
    ("kubeflow.org/v1", "MPIJob"),
    # The MPI Operator's MPIJob (what `framework: mpi` renders by default).
    ("kubeflow.org/v2beta1", "MPIJob"),
    ("trainer.kubeflow.org/v1alpha1", "TrainJob"),
)
# The label the Training Operator puts on every pod of a job (v1.7+; `job-name` before).
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"
# Trainer v2 runs a TrainJob as a JobSet; its pods carry the JobSet's name.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
POD = ("v1", "Pod")
EVENT = ("v1", "Event")
# Kueue admits a job through a Workload it owns; Volcano gang-schedules it via a PodGroup.
KUEUE_WORKLOAD = ("kueue.x-k8s.io/v1beta1", "Workload")
VOLCANO_PODGROUP = ("scheduling.volcano.sh/v1beta1", "PodGroup")


# Who installs the CRDs of each API group: named in "CRD not installed" errors.
PROVIDERS = {
    "kubeflow.org": "the Kubeflow Training Operator",
    "trainer.kubeflow.org": "Kubeflow Trainer v2",
    "kueue.x-k8s.io": "Kueue",
    "scheduling.volcano.sh": "Volcano",
    "batch.volcano.sh": "Volcano",
    "monitoring.coreos.com": "the Prometheus Operator",
    "jobset.x-k8s.io": "JobSet",
    "k8s.cni.cncf.io": "Multus",
    "grafana.integreatly.org": "the Grafana Operator",
    "external-secrets.io": "External Secrets",
    "notification.toolkit.fluxcd.io": "Flux's notification-controller",
}


def provider(api_version: str) -> str:
    """Who provides the CRDs of `api_version`'s group, for a message."""
    if api_version == "kubeflow.org/v2beta1":
        return "the MPI Operator"  # its MPIJob; kubeflow.org/v1 is the Training Operator's
    group = api_version.rpartition("/")[0]
    return PROVIDERS.get(group, f"the operator that serves {group or 'it'}")


def is_training(api_version: str, kind: str) -> bool:
    return (api_version, kind) in TRAINING_KINDS


def owned_by(obj: dict[str, Any], uid: str | None) -> bool:
    """Whether `obj` has an owner reference to the object with `uid`."""
    if not uid:
        return False
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(r, dict) and r.get("uid") == uid for r in refs)


def conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    found = (obj.get("status") or {}).get("conditions") or []
    return [c for c in found if isinstance(c, dict)]


def phase(obj: dict[str, Any]) -> str:
    """The job's phase as the operator reports it: the type of its latest True condition
    (Created, Running, Restarting, Suspended, Succeeded, Failed; TrainJob: Complete, or
    Running once its child Jobs' pods are ready: `trainjob_running`)."""
    true = [c for c in conditions(obj) if c.get("status") == "True" and c.get("type")]
    if not true:
        # A TrainJob has no Running condition: its JobSet's child Jobs say it.
        if trainjob_running(obj.get("status")):
            return "Running"
        return "Unknown"
    # Created only says the operator made the pods (a TrainJob created suspended by Kueue's
    # webhook gets Created and Suspended in the same second): any other state wins.
    true = [c for c in true if c.get("type") != "Created"] or true
    latest = max(
        enumerate(true), key=lambda ic: (str(ic[1].get("lastTransitionTime") or ""), ic[0])
    )
    return str(latest[1]["type"])


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in conditions(obj) if c.get("type") == kind), None)
