"""What API discovery tells a controller about a kind: its resource name and whether it is
namespaced (Argo CD's `validateSyncPermissions` and Kubernetes RBAC go by these, never by
what an object says). Custom resources: the upstream CRDs (`spec.scope`, `spec.names.plural`)
in ../shared/upstream/crds; core kinds: the Kubernetes API reference."""

from __future__ import annotations

import functools
from pathlib import Path

import yaml

from tests.tools import require_upstream

# (group, kind) -> (resource, namespaced): https://kubernetes.io/docs/reference/kubernetes-api/
CORE = {
    ("", "ConfigMap"): ("configmaps", True),
    ("", "Service"): ("services", True),
    ("", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("", "ServiceAccount"): ("serviceaccounts", True),
    ("networking.k8s.io", "NetworkPolicy"): ("networkpolicies", True),
    ("scheduling.k8s.io", "PriorityClass"): ("priorityclasses", False),
    ("rbac.authorization.k8s.io", "Role"): ("roles", True),
    ("rbac.authorization.k8s.io", "RoleBinding"): ("rolebindings", True),
    ("rbac.authorization.k8s.io", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): ("clusterrolebindings", False),
}

# Custom resources whose upstream CRD ../shared/upstream does not hold yet (prometheus-operator's
# PrometheusRule, external-secrets' ExternalSecret): scope and plural from their published CRDs
# (prometheus-operator v0.93 `monitoring.coreos.com_prometheusrules.yaml`, external-secrets
# `external-secrets.io_externalsecrets.yaml`: both Namespaced).
NOT_IN_SHARED = {
    ("monitoring.coreos.com", "PrometheusRule"): ("prometheusrules", True),
    ("external-secrets.io", "ExternalSecret"): ("externalsecrets", True),
}


@functools.cache
def _crds() -> dict[tuple[str, str], tuple[str, bool]]:
    out = {}
    root: Path = require_upstream() / "crds"
    for path in sorted(root.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if doc and doc.get("kind") == "CustomResourceDefinition":
                spec = doc["spec"]
                key = (spec["group"], spec["names"]["kind"])
                out[key] = (spec["names"]["plural"], spec["scope"] == "Namespaced")
    return out


def resource(group: str, kind: str) -> tuple[str, bool]:
    """(plural resource name, namespaced) of a kind; KeyError for a kind nobody serves."""
    found = CORE.get((group, kind)) or _crds().get((group, kind))
    return found or NOT_IN_SHARED[(group, kind)]
