"""Our own rendered overlays, built with the real kustomize, come out with no rule errors.

The shipped repository is rendered afresh into a temporary directory (not read from the
committed overlays), so this test runs in every checkout and never skips for want of them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.tools import REPO, require_kustomize
from trainops import build
from trainops.core.findings import Severity
from trainops.core.manifest import Manifest
from trainops.core.yamlio import load_text
from trainops.jobspec.load import load_repository
from trainops.render import render_repository
from trainops.render import write as render_write
from trainops.rules import check


def test_rendered_overlays_have_no_rule_errors(tmp_path: Path) -> None:
    require_kustomize()
    for name in ("jobs", "clusters"):
        shutil.copytree(REPO / name, tmp_path / name)
    shutil.copy(REPO / "trainops.yaml", tmp_path / "trainops.yaml")
    repo = load_repository(tmp_path)
    render_write.write(tmp_path, render_repository(repo))
    assert repo.clusters, "the shipped repository has cluster profiles"
    for name, cluster in sorted(repo.clusters.items()):
        text = build.kustomize(tmp_path / "overlays" / name)
        display = f"overlays/{name} (built)"
        manifests = [
            Manifest(d.data, display, d, cluster=name)
            for d in load_text(text, display)
            if isinstance(d.data, dict)
        ]
        assert manifests
        errors = [f for f in check(manifests, cluster) if f.severity == Severity.ERROR]
        assert not errors, [(f.rule, f.name, f.message) for f in errors]
