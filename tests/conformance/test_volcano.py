"""Volcano v1.15.1's PodGroup mutating webhook (`volcano_port.py`) against its own unit test,
`pkg/webhooks/admission/podgroups/mutate/mutate_podgroup_test.go` Test_createPodGroupPatch,
case by case (issue 33: the PodGroup ports assumed an unset queue stays `default`)."""

from __future__ import annotations

import pytest

from tests.conformance.volcano_port import QUEUE_ANNOTATION, admitted_queue, create_patch


@pytest.mark.parametrize(
    ("name", "queue", "namespace", "patch"),
    [
        ("podgroup with non-default queue", "custom-queue", None, None),
        (
            "podgroup with default queue and namespace with queue annotation",
            "default",
            {QUEUE_ANNOTATION: "ns-queue"},
            [{"op": "add", "path": "/spec/queue", "value": "ns-queue"}],
        ),
        ("podgroup with default queue and namespace without queue annotation", "default", {}, None),
    ],
)
def test_create_podgroup_patch(
    name: str, queue: str, namespace: dict[str, str] | None, patch: list[dict[str, str]] | None
) -> None:
    assert create_patch(queue, namespace) == patch, name


def test_an_unset_queue_is_the_crds_default_and_moves_with_the_namespace() -> None:
    assert admitted_queue(None, None) == "default"
    assert admitted_queue(None, {QUEUE_ANNOTATION: "team"}) == "team"
    assert admitted_queue("research", {QUEUE_ANNOTATION: "team"}) == "research"
