"""The Kubernetes kinds the GitOps objects talk about, stated once.

`TRAINING_JOB_KINDS` drives the Argo CD health checks, the Argo CD
ignoreDifferences and the Flux health expressions; `NAMESPACED_KINDS` is the
AppProject's allow-list, so a kind the renderer starts to emit must be added
here too (a test builds every overlay and checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

KUBEFLOW_GROUP = "kubeflow.org"
KUBEFLOW_VERSION = "v1"


@dataclass(frozen=True)
class JobKind:
    """A Kubeflow Training Operator job kind."""

    kind: str
    replica_specs: str
    """Field under `spec` holding the replica types (Master/Worker, Chief/PS/Worker, ...)."""

    @property
    def api_version(self) -> str:
        return f"{KUBEFLOW_GROUP}/{KUBEFLOW_VERSION}"


# The job kinds the issue asks health for. They share the training operator's
# JobCondition types (Created, Running, Restarting, Succeeded, Failed, Suspended):
# https://github.com/kubeflow/trainer/blob/v1.9.4/pkg/apis/kubeflow.org/v1/common_types.go
TRAINING_JOB_KINDS: tuple[JobKind, ...] = (
    JobKind("PyTorchJob", "pytorchReplicaSpecs"),
    JobKind("TFJob", "tfReplicaSpecs"),
    JobKind("MPIJob", "mpiReplicaSpecs"),
)


@dataclass(frozen=True, order=True)
class GroupKind:
    group: str
    """API group; "" is the core group."""
    kind: str


# Every namespaced kind `trainops render` puts in an overlay, and nothing more:
# the AppProject denies all other kinds, and every cluster-scoped kind.
NAMESPACED_KINDS: tuple[GroupKind, ...] = (
    GroupKind("", "ConfigMap"),
    GroupKind("", "PersistentVolumeClaim"),
    GroupKind("", "Service"),
    GroupKind(KUBEFLOW_GROUP, "PyTorchJob"),
    GroupKind("monitoring.coreos.com", "ServiceMonitor"),
)
