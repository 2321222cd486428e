"""`POD_FREE_KINDS` against the Kubernetes schemas themselves: in every version kubernetes-
validate bundles, no built-in kind of the list reaches a pod spec through its definitions, so
an object of one holds no pod template for the rules to miss (issue 39: such objects are no
longer searched for one)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from trainops.facts import kubernetes_schemas as k8s

POD_SPEC = "io.k8s.api.core.v1.PodSpec"
REF = re.compile(r'"\$ref": "#/\$defs/([^"]+)"')


def _reaches_pod_spec(definitions: dict[str, Any]) -> dict[str, bool]:
    """Each definition -> whether a chain of `$ref`s from it reaches the pod spec."""
    refs = {name: set(REF.findall(json.dumps(body))) for name, body in definitions.items()}
    reaches: dict[str, bool] = {}
    for start in definitions:
        seen, stack = {start}, [start]
        while stack and POD_SPEC not in seen:
            for ref in refs.get(stack.pop(), ()):
                if ref not in seen:
                    seen.add(ref)
                    stack.append(ref)
        reaches[start] = POD_SPEC in seen
    return reaches


def _kinds(version: str) -> dict[tuple[str, str], list[bool]]:
    definitions = k8s.core_definitions(version)["$defs"]
    reaches = _reaches_pod_spec(definitions)
    out: dict[tuple[str, str], list[bool]] = {}
    for name, body in definitions.items():
        for gvk in body.get("x-kubernetes-group-version-kind", []):
            out.setdefault((gvk["group"], gvk["kind"]), []).append(reaches[name])
    return out


VERSIONS = [f"{major}.{minor}" for major, minor in k8s.supported_versions()]


@pytest.mark.parametrize("version", VERSIONS)
def test_no_pod_free_kind_holds_a_pod_spec(version: str) -> None:
    kinds = _kinds(version)
    for kind in sorted(k8s.POD_FREE_KINDS):
        assert kind in kinds, (version, kind)
        assert not any(kinds[kind]), f"{kind} reaches a pod spec in Kubernetes {version}"


def test_the_search_finds_the_pod_specs_of_workloads() -> None:
    """The reachability itself is not blind: workloads reach a pod spec."""
    kinds = _kinds(VERSIONS[-1])
    for kind in [("apps", "Deployment"), ("batch", "Job"), ("batch", "CronJob"), ("", "Pod")]:
        assert all(kinds[kind]), kind
