"""How Kubeflow Trainer v2.3.0 builds the node pod from a runtime and a TrainJob's runtime
patches, and what its jobset plugin refuses in them; ported small from
github.com/kubeflow/trainer at v2.3.0:

- `pkg/runtime/core/trainingruntime.go` mergeRuntimePatches: each patch's
  `trainingRuntimeSpec.template.spec` is merged into the runtime's JobSetSpec with
  `strategicpatch.StrategicMergePatch(source, patch, jobsetv1alpha2.JobSetSpec{})`. The
  replicated jobs merge by `name` (sigs.k8s.io/jobset v0.12.0 `api/jobset/v1alpha2/
  jobset_types.go`: `patchStrategy:"merge" patchMergeKey:"name"`); inside, the core types'
  own patch strategies: maps merge key by key, a list whose field says
  `x-kubernetes-patch-strategy: merge` merges items by its merge key, every other list
  (tolerations, capabilities, nodeSelectorTerms) is replaced by the patch's
  (k8s.io/apimachinery `pkg/util/strategicpatch/patch.go` mergeMap / mergeSlice);
- `pkg/runtime/framework/plugins/jobset/jobset.go` Validate: a patch's manager is a
  domain-prefixed path (apimachinery's IsDomainPrefixedPath), its replicated jobs and
  containers exist in the (merged) runtime, and it sets no env on the `node`,
  `dataset-initializer` or `model-initializer` containers;
- the trainer plugin then writes `spec.trainer` (image, command, args, env) on the `node`
  container (`jobset/builder.go` Trainer), and `resourcesPerNode` is merged into its resources
  (`pkg/runtime/core/trainingruntime.go` newRuntimeInfo, MergeResourceRequirements).

The merge strategies are read from the core schema kubernetes-validate ships (the same
`x-kubernetes-patch-*` the Go struct tags carry), never from trainops' own merge.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from trainops.facts.kubernetes_schemas import core_definitions

NODE = "node"
NO_ENV_CONTAINERS = {"dataset-initializer", "model-initializer", NODE}
# k8s.io/apimachinery v0.36.2 (the Trainer v2.3.0's, go.mod) pkg/util/validation/validation.go.
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
HTTP_PATH = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")  # httpPathFmt


def is_domain_prefixed_path(value: str) -> bool:
    """IsDomainPrefixedPath: `<DNS-1123 subdomain, at most 253>/<HTTP path characters>`, split
    at the first `/` (the Trainer's jobset plugin checks each runtime patch's manager so)."""
    host, slash, path = value.partition("/")
    if not slash or not host or not path:
        return False
    return len(host) <= 253 and bool(DNS1123_SUBDOMAIN.match(host)) and bool(HTTP_PATH.match(path))


def merge_resources(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """pkg/util/trainingruntime/trainingruntime.go MergeResourceRequirements (v2.3.0): the
    TrainJob's `resourcesPerNode` over the runtime's node container resources, `limits` and
    `requests` key by key, `claims` by name (resourceRequirementsPatchMeta)."""
    out = copy.deepcopy(base)
    for key in ("limits", "requests"):
        if override.get(key) is not None:
            out[key] = {**(base.get(key) or {}), **override[key]}
    if override.get("claims") is not None:
        claims = [dict(c) for c in base.get("claims") or []]
        for claim in override["claims"]:
            at = next((i for i, c in enumerate(claims) if c.get("name") == claim.get("name")), None)
            if at is None:
                claims.append(dict(claim))
            else:
                claims[at] = {**claims[at], **claim}
        out["claims"] = claims
    return out


def _defs() -> dict[str, Any]:
    defs: dict[str, Any] = core_definitions("1.32")["$defs"]
    return defs


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = _defs()[node["$ref"].rsplit("/", 1)[1]]
    return node


def strategic_merge(ours: Any, patch: Any, schema: dict[str, Any]) -> Any:
    """`patch` merged into `ours` as StrategicMergePatch does for the schema's type."""
    schema = _resolve(schema)
    if isinstance(ours, dict) and isinstance(patch, dict):
        out = copy.deepcopy(ours)
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for key, value in patch.items():
            sub = props.get(key, extra if isinstance(extra, dict) else {})
            out[key] = (
                strategic_merge(ours[key], value, sub) if key in ours else copy.deepcopy(value)
            )
        return out
    if isinstance(ours, list) and isinstance(patch, list):
        strategy = str(schema.get("x-kubernetes-patch-strategy", ""))
        key = schema.get("x-kubernetes-patch-merge-key")
        if "merge" not in strategy.split(",") or not key:
            return copy.deepcopy(patch)
        out_list = copy.deepcopy(ours)
        items = schema.get("items", {})
        for item in patch:
            at = next((i for i, o in enumerate(out_list) if o.get(key) == item.get(key)), None)
            if at is None:
                out_list.append(copy.deepcopy(item))
            elif "retainKeys" in strategy:
                out_list[at] = {k: strategic_merge(out_list[at][k], v, items.get("properties", {})
                                                   .get(k, {})) if k in out_list[at] else v
                                for k, v in item.items()}  # fmt: skip
            else:
                out_list[at] = strategic_merge(out_list[at], item, items)
        return out_list
    return copy.deepcopy(patch)


def _node_job(jobset_spec: dict[str, Any]) -> dict[str, Any]:
    (job,) = [j for j in jobset_spec["replicatedJobs"] if j["name"] == NODE]
    return job  # type: ignore[no-any-return]


def node_pod(runtime: dict[str, Any], trainjob: dict[str, Any]) -> dict[str, Any]:
    """The node pod template the Trainer builds: the runtime's, each runtime patch merged
    in, then `spec.trainer` on the `node` container."""
    jobset_spec = copy.deepcopy(runtime["spec"]["template"]["spec"])
    pod = _node_job(jobset_spec)["template"]["spec"]["template"]
    template_schema = {"$ref": "#/$defs/io.k8s.api.core.v1.PodTemplateSpec"}
    for patch in trainjob["spec"].get("runtimePatches") or []:
        spec = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")
        for job in (spec or {}).get("replicatedJobs") or []:
            if job["name"] == NODE:
                over = (((job.get("template") or {}).get("spec") or {}).get("template")) or {}
                pod = strategic_merge(pod, over, template_schema)
    trainer = trainjob["spec"].get("trainer") or {}
    for container in pod["spec"]["containers"]:
        if container["name"] == NODE:
            for key in ("image", "command", "args"):
                if key in trainer:
                    container[key] = trainer[key]
            if "env" in trainer:
                container["env"] = strategic_merge(
                    container.get("env") or [], trainer["env"],
                    _resolve({"$ref": "#/$defs/io.k8s.api.core.v1.Container"})["properties"]["env"],
                )  # fmt: skip
            if "resourcesPerNode" in trainer:
                container["resources"] = merge_resources(
                    container.get("resources") or {}, trainer["resourcesPerNode"]
                )
    return pod  # type: ignore[no-any-return]


def patch_errors(runtime: dict[str, Any], trainjob: dict[str, Any]) -> list[str]:
    """jobset.go Validate on the TrainJob's runtime patches."""
    errors = []
    jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    names = {j["name"]: j for j in jobs}
    for patch in trainjob["spec"].get("runtimePatches") or []:
        if not is_domain_prefixed_path(patch.get("manager", "")):
            errors.append(f"manager {patch.get('manager')!r} is not a domain-prefixed path")
        spec = ((patch.get("trainingRuntimeSpec") or {}).get("template") or {}).get("spec")
        for job in (spec or {}).get("replicatedJobs") or []:
            if job["name"] not in names:
                errors.append("must not have replicated job that doesn't exist in the runtime")
                continue
            pod = ((job.get("template") or {}).get("spec") or {}).get("template") or {}
            # The runtime's containers after the patches are merged (newRuntimeInfo first).
            merged = node_pod(runtime, trainjob)["spec"] if job["name"] == NODE else {}
            present = {c["name"] for k in ("containers", "initContainers")
                       for c in merged.get(k) or []}  # fmt: skip
            for kind in ("initContainers", "containers"):
                for c in (pod.get("spec") or {}).get(kind) or []:
                    if c["name"] not in present:
                        errors.append(f"must not have {kind[:-1]} `{c['name']}` not in the runtime")
                    elif kind == "containers" and c.get("env") and c["name"] in NO_ENV_CONTAINERS:
                        errors.append(f"must not have envs for the {c['name']} container")
    return errors
