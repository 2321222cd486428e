"""Kubernetes RBAC, as far as our delivery accounts depend on it: may this user write this
object? Ported from kubernetes/kubernetes `plugin/pkg/auth/authorizer/rbac/rbac.go`
(`RBACAuthorizer.Authorize`, `RuleAllows`) and `pkg/registry/rbac/validation/rule.go`
(`VisitRulesFor`: the ClusterRoleBindings, then the RoleBindings of the request's namespace;
`appliesTo`: a ServiceAccount subject is the user `system:serviceaccount:<ns>:<name>`), and
`pkg/apis/rbac/v1/evaluation_helpers.go` (`VerbMatches`, `APIGroupMatches`,
`ResourceMatches`: `*` matches everything, `*/sub` any resource's subresource;
`ResourceNameMatches`: a rule with `resourceNames` allows only a request that names one of
them). The request's name is what `RequestInfo` puts there: the object's for get, update,
patch and delete, none for create, list, watch and deletecollection (a list or watch with a
`metadata.name` field selector carries that name). Checked with Kubernetes' own
`TestRuleMatches` and the subresource cases of `TestAuthorizer`
(`plugin/pkg/auth/authorizer/rbac/rbac_test.go`) in test_rbac_port.py.
"""

from __future__ import annotations

from typing import Any

from tests.conformance import discovery

NAMELESS_VERBS = frozenset({"create", "list", "watch", "deletecollection"})


def _matches(values: list[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def resource_matches(rule: dict[str, Any], resource: str, subresource: str) -> bool:
    """evaluation_helpers.go `ResourceMatches` (`resource` is `resource/subresource` when the
    request has one)."""
    for ruled in rule.get("resources") or []:
        if ruled in ("*", resource):
            return True
        if subresource and ruled == f"*/{subresource}":
            return True
    return False


def rule_allows(
    rule: dict[str, Any],
    verb: str,
    group: str,
    resource: str,
    *,
    sub: str = "",
    name: str = "",
) -> bool:
    """rbac.go `RuleAllows` for a resource request."""
    combined = f"{resource}/{sub}" if sub else resource
    names = rule.get("resourceNames") or []
    return (
        _matches(rule.get("verbs") or [], verb)
        and _matches(rule.get("apiGroups") or [], group)
        and resource_matches(rule, combined, sub)
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


def allowed(
    rbac: list[dict[str, Any]], user: str, verb: str, obj: dict[str, Any], named: bool | None = None
) -> bool:
    """Whether the RBAC objects `rbac` let `user` do `verb` on the object `obj` (its resource
    name and scope from discovery). `named`: whether the request carries the object's name
    (default: as RequestInfo does for `verb`)."""
    group = obj["apiVersion"].rpartition("/")[0]
    resource, namespaced = discovery.resource(group, obj["kind"])
    namespace = obj["metadata"].get("namespace", "") if namespaced else ""
    if named is None:
        named = verb not in NAMELESS_VERBS
    name = obj["metadata"]["name"] if named else ""
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
            if rule_allows(rule, verb, group, resource, name=name):
                return True
    return False
