"""git, run for the commands that compare the working tree with a base ref (`diff`,
`capacity --base`, `validate --changed`, `render --check --changed`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from trainops.core.errors import InputError, Problem

DEFAULT_MAIN = ("main", "origin/main")


class GitError(Exception):
    """git failed or the ref is unknown (the message is git's own)."""


def git(root: Path, *args: str) -> bytes:
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, check=False)
    if proc.returncode != 0:
        raise GitError(proc.stderr.decode("utf-8", "replace").strip() or f"git {args[0]} failed")
    return proc.stdout


def default_base(root: Path) -> str:
    """The merge base of HEAD with `main` (or `origin/main` in a CI checkout)."""
    for branch in DEFAULT_MAIN:
        try:
            return git(root, "merge-base", "HEAD", branch).decode().strip()
        except GitError:
            continue
    raise InputError(
        Problem.whole_file(
            str(root),
            "no merge base with `main` or `origin/main`: pass --base REF"
            " (fetch the base branch first in a shallow CI clone)",
        )
    )


def commit_of(root: Path, ref: str, option: str | None = None) -> str:
    """The commit `ref` names; InputError (one line, exit 2, naming `option` if given, else
    the repository) when it names none."""
    try:
        return git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except GitError:
        raise InputError(
            Problem.about(
                option or str(root),
                f"unknown git ref `{ref}`: pass a branch, tag or commit",
            )
        ) from None
