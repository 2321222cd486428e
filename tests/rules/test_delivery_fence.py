"""The fences agree: the profile schema refuses exactly the namespaces the rule calls
system namespaces, so a profile the schema admits never renders an AppProject the rule
refuses."""

from __future__ import annotations

import re

from trainops.jobspec import schemas
from trainops.rules.checks.delivery import SYSTEM_NAMESPACE

SAMPLES = ["kube-system", "kube-public", "flux-system", "kueue-system", "default", "argocd",
           "kubeflow", "ml-vision", "ai-training", "research", "systems", "kube"]  # fmt: skip


def test_schema_and_rule_refuse_the_same_namespaces() -> None:
    items = schemas.schema(schemas.CLUSTER)["properties"]["namespaces"]["items"]
    refused = re.compile(items["not"]["pattern"])
    for name in SAMPLES:
        assert bool(refused.match(name)) == bool(SYSTEM_NAMESPACE.match(name)), name
    assert {n for n in SAMPLES if SYSTEM_NAMESPACE.match(n)} == {
        "kube-system", "kube-public", "flux-system", "kueue-system", "default", "argocd",
        "kubeflow",
    }  # fmt: skip
