"""What a job adds to the pod templates trainops renders: the first-class pod fields, then the
escape hatch, merged into the rendered template of one replica type.

Precedence, lowest first: what trainops renders (for the cluster, in an overlay) < the
first-class fields (`imagePullSecrets`, `serviceAccountName`, `priorityClassName`,
`affinity`, `podLabels`, `podAnnotations`, `extraVolumes`, `extraVolumeMounts`, `sidecars`)
< `podTemplate` < `replicaPodTemplates[<type>]`.

The merge reads Kubernetes' own merge keys from the core schema (`x-kubernetes-patch-merge-key`,
as kubectl's strategic merge does): maps merge key by key and a scalar of the override wins;
a list Kubernetes merges by a key (containers, initContainers, volumes, env, imagePullSecrets
by name, volumeMounts by mountPath, ports by containerPort) merges item by item, and an item
with a new key is appended; a volume named like ours replaces its source (`retainKeys`);
`command` and `args` are replaced (an argv is one value); every other list is appended to.
Nothing is removed: the escape hatch adds and changes, it does not take out what trainops
guarantees.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from trainops.facts.kubernetes_schemas import DEFAULT_KUBERNETES_VERSION, core_definitions
from trainops.jobspec.model import PodOverrides

_POD_TEMPLATE = "io.k8s.api.core.v1.PodTemplateSpec"
# An argv is one value: appending to a command would run something else entirely.
REPLACED_LISTS = frozenset({"command", "args"})
# Native sidecar: an init container that keeps running beside the main containers and is
# stopped after them (https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/).
SIDECAR_RESTART_POLICY = "Always"


@functools.cache
def _defs() -> dict[str, Any]:
    # Merge keys are the same in every Kubernetes version we support.
    defs: dict[str, Any] = core_definitions(DEFAULT_KUBERNETES_VERSION)["$defs"]
    return defs


def resolve_schema(node: dict[str, Any] | None) -> dict[str, Any]:
    """A node of the core schema with its `$ref`s followed (None: the PodTemplateSpec)."""
    node = node if node is not None else {"$ref": f"#/$defs/{_POD_TEMPLATE}"}
    while "$ref" in node:
        node = _defs()[node["$ref"].rsplit("/", 1)[1]]
    return node


def merge(ours: Any, theirs: Any, node: dict[str, Any] | None = None, name: str = "") -> Any:
    """`theirs` merged into `ours` (neither is changed), as the module docstring says."""
    node = resolve_schema(node)
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = dict(ours)
        props = node.get("properties", {})
        extra = node.get("additionalProperties")
        for key, value in theirs.items():
            sub = props.get(key, extra if isinstance(extra, dict) else {})
            out[key] = merge(ours[key], value, sub, key) if key in ours else copy.deepcopy(value)
        return out
    if isinstance(ours, list) and isinstance(theirs, list):
        if name in REPLACED_LISTS:
            return copy.deepcopy(theirs)
        key = node.get("x-kubernetes-patch-merge-key")
        items = node.get("items", {})
        if not key:
            return [*ours, *copy.deepcopy(theirs)]
        out_list = list(ours)
        retain = "retainKeys" in str(node.get("x-kubernetes-patch-strategy", ""))
        for item in theirs:
            at = next(
                (i for i, o in enumerate(out_list) if isinstance(o, dict) and isinstance(item, dict)
                 and key in item and o.get(key) == item[key]),
                None,
            )  # fmt: skip
            if at is None:
                out_list.append(copy.deepcopy(item))
            elif retain:
                mine = out_list[at]
                out_list[at] = {k: merge(mine[k], v, items) if k in mine else v
                                for k, v in item.items()}  # fmt: skip
            else:
                out_list[at] = merge(out_list[at], item, items)
        return out_list
    return copy.deepcopy(theirs)


def first_class(pod: PodOverrides, container: str) -> dict[str, Any]:
    """The first-class fields as a piece of a PodTemplateSpec (`container`: the training
    container, which gets the extra mounts)."""
    meta: dict[str, Any] = {}
    if pod.labels:
        meta["labels"] = dict(pod.labels)
    if pod.annotations:
        meta["annotations"] = dict(pod.annotations)
    spec: dict[str, Any] = {}
    if pod.image_pull_secrets:
        spec["imagePullSecrets"] = [{"name": n} for n in pod.image_pull_secrets]
    if pod.service_account_name:
        spec["serviceAccountName"] = pod.service_account_name
    if pod.priority_class_name:
        spec["priorityClassName"] = pod.priority_class_name
    if pod.affinity:
        spec["affinity"] = copy.deepcopy(pod.affinity)
    if pod.volumes:
        spec["volumes"] = copy.deepcopy(list(pod.volumes))
    if pod.volume_mounts:
        mounts = copy.deepcopy(list(pod.volume_mounts))
        spec["containers"] = [{"name": container, "volumeMounts": mounts}]
    if pod.sidecars:
        spec["initContainers"] = [
            {**copy.deepcopy(s), "restartPolicy": SIDECAR_RESTART_POLICY} for s in pod.sidecars
        ]
    out: dict[str, Any] = {}
    if meta:
        out["metadata"] = meta
    if spec:
        out["spec"] = spec
    return out


def apply(template: dict[str, Any], pod: PodOverrides, replica_type: str) -> dict[str, Any]:
    """`template` (one replica type's rendered pod template) with what the job adds."""
    container = template["spec"]["containers"][0]["name"]
    for layer in (first_class(pod, container), pod.template, pod.by_replica.get(replica_type)):
        if layer:
            template = merge(template, layer)
    return template
