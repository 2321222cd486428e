"""The Kubernetes kinds the GitOps objects talk about, stated once.

`TRAINING_JOB_KINDS` drives the Argo CD health checks, the Argo CD
ignoreDifferences and the Flux health expressions; `NAMESPACED_KINDS` is the
AppProject's allow-list, so a kind the renderer starts to emit must be added
here too (a test builds every overlay and checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainops.facts.kubeflow import KUBEFLOW_GROUP
from trainops.facts.trainer import (
    CLUSTER_TRAINING_RUNTIME,
    TRAINER_GROUP,
    TRAINING_RUNTIME,
    TRAINJOB,
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
    GroupKind(TRAINER_GROUP, TRAINING_RUNTIME),
    GroupKind(TRAINER_GROUP, TRAINJOB),
)

# Every cluster-scoped kind `trainops render` puts in an overlay: the ClusterTrainingRuntimes
# of Trainer v2 clusters. The AppProject allows them only when an Argo CD cluster runs v2.
CLUSTER_KINDS: tuple[GroupKind, ...] = (GroupKind(TRAINER_GROUP, CLUSTER_TRAINING_RUNTIME),)
