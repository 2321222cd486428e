"""The repositories the behaviour tests render, and the one way they render and build them.

`shipped` is this repository's own jobs and clusters; `rich` (tests/golden/rich) uses every
spec feature at least once. Both are copied into a scratch directory, rendered with the CLI
as a user runs it (`tests.tools.trainops`: `main()` in this process), and each overlay is
built with the real kustomize.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.tools import REPO, trainops
from trainops import build
from trainops.jobspec.load import load_repository
from trainops.render import render_repository, write

RICH = REPO / "tests" / "golden" / "rich"
REPOS = {"shipped": REPO, "rich": RICH}


def render(root: Path) -> Path:
    """`trainops render` in `root`, which must succeed."""
    result = trainops(root, "render")
    assert result.returncode == 0, result.stderr
    return root


def render_in_process(root: Path) -> Path:
    """What `render` writes (the CLI's load, render and write), computed in this process.

    For tests that need the files without the CLI; `render` (the CLI, in this process since
    issue 39) is also seen by a mutation tool that credits only tests reaching the code
    in-process (`make mutation`).
    """
    write.write(root, render_repository(load_repository(root)))
    return root


def build_overlay(root: Path, cluster: str) -> list[dict[str, Any]]:
    """The objects `kustomize build overlays/<cluster>` prints."""
    text = build.kustomize(root / "overlays" / cluster)
    return [d for d in yaml.safe_load_all(text) if d]


def read_yaml(path: Path) -> Any:
    """A spec or generated file as plain YAML (what a user or a GitOps controller reads)."""
    return yaml.safe_load(path.read_text(encoding="utf-8"))
