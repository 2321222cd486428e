"""Label selectors as Kubernetes evaluates them (the metrics rules match Services and
ServiceMonitors to pods with them).

Found by mutation testing (`make mutation`): the rule fixtures use `matchLabels` only, so the
set-based operators were never checked. Semantics: https://kubernetes.io/docs/concepts/
overview/working-with-objects/labels/#label-selectors (every requirement must hold; `In` and
`NotIn` on a missing key: `In` fails, `NotIn` holds; `Exists`/`DoesNotExist` test the key).
"""

from __future__ import annotations

from typing import Any

import pytest

from trainops.rules.checks.metrics import selector_matches

POD = {"app": "llama", "tier": "train", "training.kubeflow.org/replica-index": "0"}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        out["values"] = list(values)
    return out


@pytest.mark.parametrize(
    ("selector", "matches"),
    [
        ({}, True),  # the empty selector selects everything
        ({"matchLabels": {"app": "llama"}}, True),
        ({"matchLabels": {"app": "llama", "tier": "train"}}, True),
        ({"matchLabels": {"app": "llama", "tier": "serve"}}, False),
        ({"matchLabels": {"team": "ml"}}, False),
        ({"matchExpressions": [expr("app", "In", "llama", "gpt")]}, True),
        ({"matchExpressions": [expr("app", "In", "gpt")]}, False),
        ({"matchExpressions": [expr("team", "In", "ml")]}, False),
        ({"matchExpressions": [expr("app", "NotIn", "gpt")]}, True),
        ({"matchExpressions": [expr("app", "NotIn", "llama")]}, False),
        ({"matchExpressions": [expr("team", "NotIn", "ml")]}, True),
        ({"matchExpressions": [expr("tier", "Exists")]}, True),
        ({"matchExpressions": [expr("team", "Exists")]}, False),
        ({"matchExpressions": [expr("team", "DoesNotExist")]}, True),
        ({"matchExpressions": [expr("tier", "DoesNotExist")]}, False),
        # Every requirement must hold (they are ANDed), labels and expressions alike.
        (
            {
                "matchLabels": {"app": "llama"},
                "matchExpressions": [expr("tier", "Exists"), expr("tier", "NotIn", "train")],
            },
            False,
        ),
        ({"matchLabels": {"app": "llama"}, "matchExpressions": [expr("tier", "Exists")]}, True),
    ],
)
def test_label_selector_semantics(selector: dict[str, Any], matches: bool) -> None:
    assert selector_matches(selector, POD, wildcard=False) is matches


def test_wildcard_ignores_only_the_per_pod_index() -> None:
    """A Service or monitor matched against a replica *template* cannot know which pod index a
    label names (the operator sets `training.kubeflow.org/replica-index` per pod), so with
    `wildcard` that one label matches any value; every other label still has to match."""
    template = {"app": "llama"}
    indexed = {"matchLabels": {"app": "llama", "training.kubeflow.org/replica-index": "3"}}
    assert selector_matches(indexed, template, wildcard=True)
    assert not selector_matches(indexed, template, wildcard=False)
    wrong = {"matchLabels": {"app": "gpt", "training.kubeflow.org/replica-index": "3"}}
    assert not selector_matches(wrong, template, wildcard=True)
