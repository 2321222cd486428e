"""rbac_port.py against Kubernetes' own tests for `RuleAllows`: `TestRuleMatches` (its
resource rows) and the subresource cases of `TestAuthorizer`
(kubernetes/kubernetes plugin/pkg/auth/authorizer/rbac/rbac_test.go), plus what RequestInfo
makes of a request's name (issue 33: the port matched `resourceNames` for list, watch and
create, which never carry one)."""

from __future__ import annotations

import pytest

from tests.conformance import rbac_port


def _rule(verbs: list[str], groups: list[str], resources: list[str]) -> dict[str, list[str]]:
    return {"verbs": verbs, "apiGroups": groups, "resources": resources}


REQUESTS = [(v, g, r) for v in ("verb1", "verb2") for g in ("group1", "group2")
            for r in ("resource1", "resource2")]  # fmt: skip
# TestRuleMatches: rule -> the requests (verb, group, resource) it allows, of REQUESTS.
RULE_MATCHES = [
    pytest.param(_rule(["*"], ["group1"], ["resource1"]),
                 {("verb1", "group1", "resource1"), ("verb2", "group1", "resource1")},
                 id="star verb, exact match other"),
    pytest.param(_rule(["verb1"], ["*"], ["resource1"]),
                 {("verb1", "group1", "resource1"), ("verb1", "group2", "resource1")},
                 id="star group, exact match other"),
    pytest.param(_rule(["verb1"], ["group1"], ["*"]),
                 {("verb1", "group1", "resource1"), ("verb1", "group1", "resource2")},
                 id="star resource, exact match other"),
    pytest.param(_rule(["verb1", "verb2"], ["group1", "group2"], ["resource1", "resource2"]),
                 set(REQUESTS), id="tuple expansion"),
]  # fmt: skip


@pytest.mark.parametrize(("rule", "allowed"), RULE_MATCHES)
def test_rule_matches(rule: dict[str, list[str]], allowed: set[tuple[str, str, str]]) -> None:
    for verb, group, resource in REQUESTS:
        expected = (verb, group, resource) in allowed
        assert rbac_port.rule_allows(rule, verb, group, resource) is expected, (
            verb,
            group,
            resource,
        )


def test_rule_matches_subresource_expansion() -> None:
    rule = _rule(["*"], ["*"], ["resource1/subresource1"])
    for verb in ("verb1", "verb2"):
        assert rbac_port.rule_allows(rule, verb, "group1", "resource1", sub="subresource1")
        assert not rbac_port.rule_allows(rule, verb, "group2", "resource1", sub="subresource2")
        assert not rbac_port.rule_allows(rule, verb, "group1", "resource2", sub="subresource1")
        assert not rbac_port.rule_allows(rule, verb, "group2", "resource2", sub="subresource1")


def test_authorizer_subresource_cases() -> None:
    """TestAuthorizer: `pods` does not cover `pods/status`; `pods/status` and `*/scale` do
    not cover `pods`; `*/scale` covers any resource's scale."""
    pods = _rule(["*"], ["*"], ["pods"])
    assert rbac_port.rule_allows(pods, "get", "", "pods")
    assert not rbac_port.rule_allows(pods, "get", "", "pods", sub="status")
    rules = [_rule(["*"], ["*"], ["pods/status"]), _rule(["*"], ["*"], ["*/scale"])]

    def any_allows(resource: str, sub: str) -> bool:
        return any(rbac_port.rule_allows(r, "get", "", resource, sub=sub) for r in rules)

    for resource, sub in (("pods", "status"), ("pods", "scale"), ("deployments", "scale"),
                          ("anything", "scale")):  # fmt: skip
        assert any_allows(resource, sub)
    assert not any_allows("pods", "")


def test_resource_names_allow_only_named_requests() -> None:
    """ResourceNameMatches on the name RequestInfo gives: get/patch/delete name the object;
    create, list and watch do not, so a `resourceNames` rule never allows them (unless a list
    or watch selects `metadata.name`)."""
    sa = "system:serviceaccount:ns:sa"
    rule = {**_rule(["*"], [""], ["configmaps"]), "resourceNames": ["cm"]}
    rbac = [
        {"kind": "Role", "metadata": {"name": "r", "namespace": "ns"}, "rules": [rule]},
        {"kind": "RoleBinding", "metadata": {"name": "b", "namespace": "ns"},
         "roleRef": {"kind": "Role", "name": "r"},
         "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]},
    ]  # fmt: skip
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}}
    other = {**cm, "metadata": {"name": "other", "namespace": "ns"}}
    for verb in ("get", "patch", "update", "delete"):
        assert rbac_port.allowed(rbac, sa, verb, cm), verb
        assert not rbac_port.allowed(rbac, sa, verb, other), verb
    for verb in ("create", "list", "watch", "deletecollection"):
        assert not rbac_port.allowed(rbac, sa, verb, cm), verb
    assert rbac_port.allowed(rbac, sa, "watch", cm, named=True)  # fieldSelector metadata.name
