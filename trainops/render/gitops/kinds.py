"""The Kubernetes kinds the GitOps objects talk about, stated once.

`TRAINING_JOB_KINDS` (facts/kubeflow.py) drives the Argo CD health checks, the
Argo CD ignoreDifferences and the Flux health expressions; the AppProject's
allow-lists are computed from the rendered objects (`argocd.delivered_kinds`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class GroupKind:
    group: str
    """API group; "" is the core group."""
    kind: str
