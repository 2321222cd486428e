"""Who may set which label and annotation: a job spec's `labels` and `annotations` are
checked here, at the door, against the control surfaces they must not reach, and against
Kubernetes' own syntax (so a bad key fails here with file:line, not at apply time).

A job author owns their job, not the cluster's policy: the keys below are set by trainops
from the cluster profile (Kueue queue, Volcano, Multus), by the platform team (rule
waivers go through the profile's `policy:`), or are instructions to the delivery tools
(Argo CD sync options and hooks, Flux prune/ssa), which a job would use to escape the
fences (e.g. `Prune=false` on everything, or a hook that runs before the job).
"""

from __future__ import annotations

import re

# Key prefixes (the part before `/`, or the whole key) a job may not set, and who sets them.
RESERVED: tuple[tuple[str, str], ...] = (
    ("trainops.dev", "trainops and the cluster profile (rule waivers: the profile's `policy:`)"),
    ("kueue.x-k8s.io", "the cluster profile (`scheduler.queue`)"),
    ("scheduling.x-k8s.io", "the cluster profile's scheduler"),
    ("volcano.sh", "the cluster profile (`scheduler`)"),
    ("scheduling.volcano.sh", "the cluster profile (`scheduler`)"),
    ("argocd.argoproj.io", "trainops' Argo CD delivery (gitops/)"),
    ("argoproj.io", "trainops' Argo CD delivery (gitops/)"),
    ("kustomize.toolkit.fluxcd.io", "trainops' Flux delivery (gitops/)"),
    ("fluxcd.io", "trainops' Flux delivery (gitops/)"),
    ("k8s.v1.cni.cncf.io", "the cluster profile (`network.rdma.multusNetwork`)"),
    ("pod-security.kubernetes.io", "the platform team (namespace labels)"),
    ("kubernetes.io", "Kubernetes itself"),
    ("k8s.io", "Kubernetes itself"),
    ("training.kubeflow.org", "the Training Operator"),
    # What changes how nodes and the mesh treat the pods (issue 35.9): the platform's call.
    ("karpenter.sh", "the platform team (Karpenter: whether a node may be disrupted)"),
    ("karpenter.k8s.aws", "the platform team (Karpenter)"),
    ("linkerd.io", "the platform team (the Linkerd mesh: injection, proxy settings)"),
    ("istio.io", "the platform team (the Istio mesh: injection, traffic)"),
    ("kuma.io", "the platform team (the Kuma mesh)"),
    ("consul.hashicorp.com", "the platform team (the Consul mesh)"),
    ("vault.hashicorp.com", "the platform team (Vault's agent injects secrets: `secretEnv`)"),
)
# app.kubernetes.io/managed-by and /name are rendered by trainops.
RESERVED_KEYS = {
    "app.kubernetes.io/managed-by": "trainops",
    "app.kubernetes.io/name": "trainops",
}
# https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_PREFIX = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Total size of an object's annotations (apimachinery TotalAnnotationSizeLimitB).
MAX_ANNOTATIONS_BYTES = 256 * 1024


def key_problem(key: str) -> str | None:
    """Why `key` is not a valid label/annotation key, or None."""
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        return "the prefix before `/` must be a DNS subdomain (lower case, at most 253 characters)"
    if len(name) > 63 or not _NAME.match(name):
        return (
            "the name must be at most 63 characters of letters, digits, `-`, `_` and `.`,"
            " beginning and ending with a letter or digit"
        )
    return None


def label_value_problem(value: str) -> str | None:
    if value == "" or (len(value) <= 63 and _NAME.match(value)):
        return None
    return (
        "a label value must be empty or at most 63 characters of letters, digits, `-`, `_`"
        " and `.`, beginning and ending with a letter or digit"
    )


def owner(key: str) -> str | None:
    """Who sets `key` instead of a job author, or None when a job may set it."""
    if key in RESERVED_KEYS:
        return RESERVED_KEYS[key]
    prefix = key.rpartition("/")[0]
    for reserved, who in RESERVED:
        if prefix == reserved or prefix.endswith("." + reserved):
            return who
    return None
