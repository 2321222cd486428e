"""The Trainer v2.3 ports against upstream's own table-driven tests, case by case (issue 33's
port fidelity: the patch-manager check used `\\S+`, the node pod replaced resources where the
Trainer merges them, the volcano port had no priority-class check):

- k8s.io/apimachinery v0.36.2 (the Trainer v2.3.0's) `pkg/util/validation/validation_test.go`
  TestIsDomainPrefixedPath: its good and bad values, for `trainer_merge.is_domain_prefixed_path`
  (the jobset plugin's check of a runtime patch's `manager`);
- kubeflow/trainer v2.3.0 `pkg/util/trainingruntime/trainingruntime_test.go`
  TestMergeResourceRequirements, for `trainer_merge.merge_resources`;
- kubeflow/trainer v2.3.0 `pkg/runtime/framework/plugins/volcano/volcano_test.go` TestValidate,
  for `test_trainer_v2.priority_class_errors` and the queue check.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.test_trainer_v2 import priority_class_errors
from tests.conformance.trainer_merge import is_domain_prefixed_path, merge_resources, node_pod

GOOD = [
    "a/b",
    "a/b/c/d",
    "a.com/foo",
    "a.b.c.d/foo",
    "k8s.io/foo/bar",
    "k8s.io/FOO/BAR",
    "dev.k8s.io/more/path",
    "this.is.a.really.long.fqdn/even/longer/path/just/because",
    "bbc.co.uk/path/goes/here",
    "10.0.0.1/foo",
    "hyphens-are-good.k8s.io/and-in-paths-too",
    "a" * 240 + ".k8s.io/a",
    "k8s.io/" + "a" * 240,
]
BAD = [
    ".",
    "...",
    "/b",
    "com",
    ".com",
    "a.b.c.d/foo?a=b",
    "a.b.c.d/foo#a",
    "Dev.k8s.io",
    ".foo.example.com",
    "*.example.com",
    "example.com/foo{}[]@^`",
    "underscores_are_bad.k8s.io",
    "underscores_are_bad.k8s.io/foo",
    "foo@bar.example.com",
    "foo@bar.example.com/foo",
    "a" * 247 + ".k8s.io",
]


@pytest.mark.parametrize("value", GOOD)
def test_domain_prefixed_path_good(value: str) -> None:
    assert is_domain_prefixed_path(value)


@pytest.mark.parametrize("value", BAD)
def test_domain_prefixed_path_bad(value: str) -> None:
    assert not is_domain_prefixed_path(value)


MERGE_CASES: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "gpu only overlays runtime cpu and memory": (
        {"limits": {"cpu": "8", "memory": "32Gi"}},
        {"limits": {"nvidia.com/gpu": "4"}},
        {"limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": "4"}},
    ),
    "trainjob cpu overrides runtime cpu": (
        {"limits": {"cpu": "8"}},
        {"limits": {"cpu": "4"}},
        {"limits": {"cpu": "4"}},
    ),
    "partial override keeps other runtime keys": (
        {"limits": {"cpu": "5", "memory": "32Gi"}},
        {"limits": {"nvidia.com/gpu": "2", "memory": "1Gi"}},
        {"limits": {"cpu": "5", "memory": "1Gi", "nvidia.com/gpu": "2"}},
    ),
    "empty override returns base": ({"requests": {"cpu": "1"}}, {}, {"requests": {"cpu": "1"}}),
    "trainjob requests override runtime requests": (
        {"requests": {"cpu": "8", "memory": "32Gi"}},
        {"requests": {"cpu": "4"}},
        {"requests": {"cpu": "4", "memory": "32Gi"}},
    ),
    "trainjob claims override runtime claims by name": (
        {"claims": [{"name": "gpu", "request": "default"}]},
        {"claims": [{"name": "gpu", "request": "large"}]},
        {"claims": [{"name": "gpu", "request": "large"}]},
    ),
    "trainjob claims merge keeps other runtime claims": (
        {"claims": [{"name": "gpu", "request": "default"}, {"name": "storage", "request": "fast"}]},
        {"claims": [{"name": "gpu", "request": "large"}]},
        {"claims": [{"name": "gpu", "request": "large"}, {"name": "storage", "request": "fast"}]},
    ),
    "unset override claims keep runtime claims": (
        {"claims": [{"name": "gpu", "request": "default"}]},
        {"limits": {"cpu": "4"}},
        {"limits": {"cpu": "4"}, "claims": [{"name": "gpu", "request": "default"}]},
    ),
}


@pytest.mark.parametrize("case", list(MERGE_CASES))
def test_merge_resource_requirements(case: str) -> None:
    base, override, want = MERGE_CASES[case]
    assert merge_resources(base, override) == want


def test_the_node_pod_merges_resources_per_node_into_the_runtimes() -> None:
    runtime = {
        "spec": {
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {"spec": {"template": {"spec": {"containers": [
                                {"name": "node", "resources": {
                                    "limits": {"rdma/rdma_shared_device_a": 1}}},
                            ]}}}},
                        }
                    ]
                }
            }
        }
    }  # fmt: skip
    trainjob = {"spec": {"trainer": {"resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}}}}
    (node,) = node_pod(runtime, trainjob)["spec"]["containers"]
    assert node["resources"] == {"limits": {"rdma/rdma_shared_device_a": 1, "nvidia.com/gpu": 8}}


def _runtime(priority_class: str | None) -> dict[str, Any]:
    pod: dict[str, Any] = {"spec": {"containers": [{"name": "node"}]}}
    if priority_class is not None:
        pod["spec"]["priorityClassName"] = priority_class
    job = {"name": "node", "template": {"spec": {"template": pod}}}
    return {
        "spec": {"podGroupPolicy": {"volcano": {}}, "template": {"spec": {"replicatedJobs": [job]}}}
    }


@pytest.mark.parametrize(
    ("name", "priority_class", "existing", "errors"),
    [
        ("no action when Volcano policy not enabled", None, set(), 0),
        ("priorityClassName does not exist", "non-existent", set(), 1),
        ("priorityClassName exists", "existing-priority", {"existing-priority"}, 0),
        ("a system priority class needs no object", "system-node-critical", set(), 0),
    ],
)
def test_volcano_validate_priority_class(
    name: str, priority_class: str | None, existing: set[str], errors: int
) -> None:
    found = priority_class_errors(_runtime(priority_class), {"spec": {}}, existing)
    assert len(found) == errors, name
    if errors:
        assert f"PriorityClass {priority_class!r} doesn't exist" in found[0]
