"""A scratch git repository of the shipped jobs and clusters, for `--changed` tests:
real git (the change is what `git diff` and `git ls-files` report), rendered and committed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_diff import git, render_and_commit
from tests.tools import REPO, require_kustomize, require_tool
from trainops.cli import main


def scratch_repo(dest: Path, source: Path = REPO) -> Path:
    """`source`'s jobs, clusters and settings in a new git repository at `dest`, committed on
    `main` with their rendered output, checked out on a branch `change`."""
    require_tool("git")
    require_kustomize()
    dest.mkdir(parents=True)
    shutil.copytree(source / "jobs", dest / "jobs")
    shutil.copytree(source / "clusters", dest / "clusters")
    if (source / "trainops.yaml").is_file():
        shutil.copy(source / "trainops.yaml", dest / "trainops.yaml")
    git(dest, "init", "-q", "-b", "main")
    render_and_commit(dest, "specs and their rendered output")
    git(dest, "checkout", "-q", "-b", "change")
    return dest


def edit_yaml(path: Path, **fields: Any) -> None:
    """Set top-level fields of a spec (a plain YAML round trip, as an author's edit)."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data.update(fields)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def validate_json(
    root: Path, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, dict[str, Any], str]:
    """`trainops validate --format json *extra` in-process: (exit code, report, stderr)."""
    capsys.readouterr()
    code = main(["--root", str(root), "validate", "--format", "json", *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err
