"""What differs from a base commit, file by file, before anything is loaded: the changed
paths (git: committed, staged, unstaged and untracked), what kind of input each one is, the
specs as they were at the base, and which job specs the change reaches
(`trainops.jobspec.checked`). `trainops.validate.changes` works out, from the loaded
repository, what each path reaches."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainops.core import paths, yamlio
from trainops.core.errors import InputError, Problem
from trainops.core.git import GitError, commit_of, git, git_together
from trainops.jobspec.checked import CheckedSpecs, spec_targets
from trainops.jobspec.spec_files import yaml_files

# Paths no rendered or validated object is read from.
UNBUILT_PREFIXES = ("docs/", "tests/", "bench/", "trainer/", ".github/", ".ci/")
UNBUILT_FILES = frozenset({"LICENSE", "Makefile", ".gitignore", ".dockerignore"})
GENERATED = tuple(f"{d}/" for d in paths.GENERATED_DIRS)
_PLATFORM = re.compile(rf"^{paths.CLUSTERS_DIR}/([^/]+)/manifests/")
_PROFILE = re.compile(rf"^{paths.CLUSTERS_DIR}/[^/]+\.ya?ml$")
_JOB = re.compile(rf"^{paths.JOBS_DIR}/[^/]+\.ya?ml$")


def _top_doc(rel: str) -> bool:
    return "/" not in rel and rel.endswith(".md")


def changed_paths(root: Path, commit: str) -> list[str]:
    """Files that differ between `commit` and the working tree, untracked ones included,
    relative to `root` (renames as the old and the new path)."""
    try:
        tracked, untracked = git_together(
            root,
            ("diff", "--name-only", "--no-renames", "--relative", "-z", commit),
            ("ls-files", "--others", "--exclude-standard", "-z"),
        )
    except GitError as err:
        raise InputError(Problem.whole_file(str(root), f"git: {err}")) from None
    names = (tracked + untracked).decode("utf-8", "surrogateescape").split("\0")
    return sorted({n for n in names if n})


def _mapping(read: Callable[[], str], rel: str) -> dict[str, Any]:
    """A spec's text as a mapping ({} if absent or unreadable: the loader says why)."""
    try:
        docs = yamlio.load_text(read(), rel)
    except (GitError, InputError, OSError, UnicodeDecodeError):
        return {}
    data = docs[0].data if len(docs) == 1 else None
    return data if isinstance(data, dict) else {}


@dataclass
class Change:
    """The files that differ between a base commit and the working tree."""

    root: Path
    commit: str
    paths: list[str]
    _base: dict[str, dict[str, Any]] = field(default_factory=dict)

    def at_base(self, rel: str) -> dict[str, Any]:
        """The spec at `rel` in the base commit, as a mapping ({} if absent or unreadable)."""
        if rel not in self._base:
            show = f"{self.commit}:./{rel}"
            self._base[rel] = _mapping(lambda: git(self.root, "show", show).decode("utf-8"), rel)
        return self._base[rel]

    def now(self, rel: str) -> dict[str, Any]:
        """The spec at `rel` in the working tree, the same way."""
        return _mapping(lambda: (self.root / rel).read_text(encoding="utf-8"), rel)


def change_from(root: Path, base: str) -> Change:
    """What changed from `base` (a commit-ish) to the working tree."""
    commit = commit_of(root, base, "--base")
    return Change(root, commit, changed_paths(root, commit))


def sort_path(rel: str, profiles: dict[str, str]) -> tuple[str, str | None]:
    """What a changed path is: generated, read by nothing built, a job spec, a cluster's
    platform objects or profile (with the cluster), or anything else (which may change
    everything); `profiles`: each profile's file -> its cluster."""
    if rel.startswith(GENERATED):
        return "generated", None
    if rel.startswith(UNBUILT_PREFIXES) or rel in UNBUILT_FILES or _top_doc(rel):
        return "unbuilt", None
    if _JOB.match(rel):
        return "job", None
    if (found := _PLATFORM.match(rel)) and found.group(1) in profiles.values():
        return "platform", found.group(1)
    if _PROFILE.match(rel) and rel in profiles:
        return "profile", profiles[rel]
    return "other", None


def specs_checked(change: Change) -> CheckedSpecs | None:
    """The job specs the change reaches, for the loader (None: every spec, when the change
    may reach everything). Worked out from the files before loading: a profile's cluster is
    its file's name (the loader refuses any other)."""
    clusters = change.root / paths.CLUSTERS_DIR
    profiles = {f"{paths.CLUSTERS_DIR}/{p.name}": p.stem for p in yaml_files(clusters)}
    files: set[str] = set()
    reached: set[str] = set()
    for rel in change.paths:
        kind, cluster = sort_path(rel, profiles)
        if kind == "other":
            return None
        if kind == "job":
            files.add(rel)
            reached |= spec_targets(change.at_base(rel)) | spec_targets(change.now(rel))
        elif cluster is not None:
            reached.add(cluster)
    return CheckedSpecs(frozenset(files), frozenset(reached))
