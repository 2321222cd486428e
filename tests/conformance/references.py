"""What one built object names that must exist for it to work, read the way its consumers
read it: a TrainJob's runtime (kubeflow/trainer v2.3 `pkg/apis/trainer/v1alpha1`
`RuntimeRef`: kind defaults to ClusterTrainingRuntime), claims and ConfigMaps its pods mount,
the Volcano queue and priority class of a Kubeflow job's `runPolicy.schedulingPolicy`, the
Kueue LocalQueue of its queue label (in its own namespace), and the Multus networks of its
pods (`k8s.v1.cni.cncf.io/networks`: `name` or `namespace/name`, comma-separated; a name
without a namespace is the pod's own)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# (kind, namespace, name); namespace "" for cluster-scoped objects.
Ref = tuple[str, str, str]
KUEUE_QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
MULTUS_NETWORKS = "k8s.v1.cni.cncf.io/networks"
# What an admission webhook looks up when the object is created: it must exist before.
ADMISSION_CHECKED = {"ClusterTrainingRuntime", "TrainingRuntime"}


def _walk(node: Any, namespace: str) -> Iterator[Ref]:
    if isinstance(node, dict):
        claim = node.get("persistentVolumeClaim")
        if isinstance(claim, dict) and "claimName" in claim:
            yield ("PersistentVolumeClaim", namespace, claim["claimName"])
        config = node.get("configMap")
        if isinstance(config, dict) and "name" in config:
            yield ("ConfigMap", namespace, config["name"])
        if isinstance(node.get("priorityClassName"), str):
            yield ("PriorityClass", "", node["priorityClassName"])
        networks = (node.get("annotations") or {}).get(MULTUS_NETWORKS)
        if isinstance(networks, str):
            for entry in networks.split(","):
                ns, _, name = entry.strip().rpartition("/")
                yield ("NetworkAttachmentDefinition", ns or namespace, name.split("@")[0])
        for value in node.values():
            yield from _walk(value, namespace)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value, namespace)


def references(obj: dict[str, Any]) -> set[Ref]:
    """Everything `obj` names (see the module docstring)."""
    namespace = obj["metadata"].get("namespace", "")
    spec = obj.get("spec") or {}
    out = set(_walk(spec, namespace))
    if obj["kind"] == "TrainJob":
        ref = spec["runtimeRef"]
        kind = ref.get("kind", "ClusterTrainingRuntime")
        out.add((kind, namespace if kind == "TrainingRuntime" else "", ref["name"]))
    scheduling = (spec.get("runPolicy") or {}).get("schedulingPolicy") or {}
    if scheduling.get("queue"):
        out.add(("Queue", "", scheduling["queue"]))
    if scheduling.get("priorityClass"):
        out.add(("PriorityClass", "", scheduling["priorityClass"]))
    queue = (obj["metadata"].get("labels") or {}).get(KUEUE_QUEUE_LABEL)
    if queue:
        out.add(("LocalQueue", namespace, queue))
    return out


def key(obj: dict[str, Any]) -> Ref:
    meta = obj["metadata"]
    return (obj["kind"], meta.get("namespace", ""), meta["name"])
