"""Our own rendered overlays, built with the real kustomize, come out with no rule errors."""

from __future__ import annotations

import shutil

import pytest

from tests.tools import REPO, require_tool
from trainops import build
from trainops.core.findings import Severity
from trainops.core.manifest import Manifest
from trainops.core.yamlio import load_text
from trainops.rules import check
from trainops.spec.load import load_repository


def test_rendered_overlays_have_no_rule_errors() -> None:
    if shutil.which("kustomize") is None:
        require_tool("kubectl")
    repo = load_repository(REPO)
    if not repo.clusters or not (REPO / "overlays").is_dir():
        pytest.skip("no rendered overlays in this checkout")
    for name, cluster in sorted(repo.clusters.items()):
        overlay = REPO / "overlays" / name
        text = build.kustomize(overlay)
        display = f"overlays/{name} (built)"
        manifests = [
            Manifest(d.data, display, d, cluster=name)
            for d in load_text(text, display)
            if isinstance(d.data, dict)
        ]
        assert manifests
        errors = [f for f in check(manifests, cluster) if f.severity == Severity.ERROR]
        assert not errors, [(f.rule, f.name, f.message) for f in errors]
