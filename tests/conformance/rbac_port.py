"""Kubernetes RBAC, as far as our delivery accounts depend on it: may this user write this
object? Ported from kubernetes/kubernetes `plugin/pkg/auth/authorizer/rbac/rbac.go`
(`RBACAuthorizer.Authorize`, `RuleAllows`) and `pkg/registry/rbac/validation/rule.go`
(`VisitRulesFor`: the ClusterRoleBindings, then the RoleBindings of the request's namespace;
`appliesTo`: a ServiceAccount subject is the user `system:serviceaccount:<ns>:<name>`), and
`pkg/apis/rbac/v1/evaluation_helpers.go` (`VerbMatches`, `APIGroupMatches`,
`ResourceMatches`: `*` matches everything).
"""

from __future__ import annotations

from typing import Any

from tests.conformance import discovery


def _matches(values: list[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def _rule_allows(rule: dict[str, Any], verb: str, group: str, resource: str, name: str) -> bool:
    names = rule.get("resourceNames") or []
    return (
        _matches(rule.get("verbs", []), verb)
        and _matches(rule.get("apiGroups", []), group)
        and _matches(rule.get("resources", []), resource)
        and (not names or name in names)
    )


def _applies_to(binding: dict[str, Any], user: str, binding_namespace: str) -> bool:
    for subject in binding.get("subjects") or []:
        if subject["kind"] == "ServiceAccount":
            namespace = subject.get("namespace") or binding_namespace
            if user == f"system:serviceaccount:{namespace}:{subject['name']}":
                return True
        elif subject["kind"] == "User" and subject["name"] == user:
            return True
    return False


def allowed(rbac: list[dict[str, Any]], user: str, verb: str, obj: dict[str, Any]) -> bool:
    """Whether the RBAC objects `rbac` let `user` do `verb` on the object `obj` (its resource
    name and scope from discovery)."""
    group = obj["apiVersion"].rpartition("/")[0]
    resource, namespaced = discovery.resource(group, obj["kind"])
    namespace = obj["metadata"].get("namespace", "") if namespaced else ""
    name = obj["metadata"]["name"]
    by_kind: dict[tuple[str, str, str], dict[str, Any]] = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o for o in rbac
    }
    for binding in rbac:
        kind, meta = binding["kind"], binding["metadata"]
        if kind == "ClusterRoleBinding":
            scope = ""
        elif kind == "RoleBinding" and meta.get("namespace") == namespace and namespace:
            scope = namespace
        else:
            continue
        if not _applies_to(binding, user, scope):
            continue
        ref = binding["roleRef"]
        role = by_kind.get((ref["kind"], scope if ref["kind"] == "Role" else "", ref["name"]))
        for rule in (role or {}).get("rules") or []:
            if _rule_allows(rule, verb, group, resource, name):
                return True
    return False
