"""Flux kustomize-controller v1.9.4 (fluxcd/kustomize-controller, tag v1.9.4) with fluxcd/pkg
ssa v0.76.1, as far as our Kustomizations depend on it:

- when a Kustomization applies: `internal/controller/kustomization_controller.go`
  (`checkDependencies`: only once every `dependsOn` Kustomization (same namespace when none
  is given) is Ready at the revision of the same source);
- how it applies: `ResourceManager.ApplyAllStaged` (`ssa/manager_apply.go`): CRDs,
  Namespaces and ClusterRoles first, then kinds whose name ends in `Class`, then the
  controller's `--custom-stage-kinds` (none by default), then the rest; within a stage
  `ApplyAll` server-side dry-runs every object (admission webhooks included) before applying
  any, so an object whose admission looks another up needs it from an earlier stage or an
  earlier Kustomization (`ssa/utils/is.go`: `IsClusterDefinition`, `IsClassDefinition`);
- as whom: `runtimeClient.WithServiceAccount(..., spec.serviceAccountName,
  obj.GetNamespace())`, the user `system:serviceaccount:<Kustomization namespace>:<name>`.
"""

from __future__ import annotations

from typing import Any


def stage(obj: dict[str, Any]) -> int:
    """ApplyAllStaged's stage of one object (0 applied first)."""
    kind, api = obj["kind"].lower(), obj["apiVersion"]
    if (
        (kind == "customresourcedefinition" and api.startswith("apiextensions.k8s.io/"))
        or (kind == "namespace" and api == "v1")
        or (kind == "clusterrole" and api.startswith("rbac.authorization.k8s.io/"))
    ):
        return 0
    if obj["kind"].endswith("Class"):
        return 1
    return 3  # stage 2: --custom-stage-kinds, empty unless the platform sets it


def dependencies(kustomizations: dict[str, dict[str, Any]], name: str) -> set[str]:
    """Every Kustomization `name` waits for, transitively (checkDependencies); KeyError for a
    dependency that does not exist, ValueError for a cycle (neither would ever apply)."""
    out: set[str] = set()
    todo = [name]
    while todo:
        current = kustomizations[todo.pop()]
        namespace = current["metadata"]["namespace"]
        for dep in current["spec"].get("dependsOn") or []:
            assert dep.get("namespace", namespace) == namespace, dep
            if dep["name"] == name:
                raise ValueError(f"{name} depends on itself")
            if dep["name"] not in kustomizations:
                raise KeyError(f"{name}: dependency {dep['name']} does not exist")
            if dep["name"] not in out:
                out.add(dep["name"])
                todo.append(dep["name"])
    return out


def account(kustomization: dict[str, Any]) -> str:
    """The user the controller impersonates for this Kustomization ("" for itself)."""
    name = kustomization["spec"].get("serviceAccountName")
    if not name:
        return ""
    return f"system:serviceaccount:{kustomization['metadata']['namespace']}:{name}"
