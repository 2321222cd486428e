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
    return git_together(root, args)[0]


def git_together(root: Path, *commands: tuple[str, ...]) -> list[bytes]:
    """Each command's output, the commands run at the same time (each walks the working
    tree: 130,000 files in a 5,000-job fleet)."""
    procs = [
        subprocess.Popen(
            ["git", "-C", str(root), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for args in commands
    ]
    outputs = [proc.communicate() for proc in procs]
    for args, proc, (_, err) in zip(commands, procs, outputs, strict=True):
        if proc.returncode != 0:
            raise GitError(err.decode("utf-8", "replace").strip() or f"git {args[0]} failed")
    return [out for out, _ in outputs]


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
