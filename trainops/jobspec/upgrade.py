"""`trainops upgrade`: every addition the cluster profiles of an existing repository need, in
one run, with the lines to add (and `--write` to add them).

A release may make a profile say what it used to leave unsaid (`podSecurity` admitting RDMA's
IPC_LOCK, `jobAccess.sharedClaims`, `installed.kueue.integrations`, `providedByPlatform`).
The loader reports each as a problem carrying its `Addition`; but a profile that fails one
check is not checked further, so a plain run shows the first layer only. Here the loader runs
on a scratch copy, the additions of each round are applied to the copy's profiles, and the
rounds go on until the repository loads or no problem left has an addition: what the loader
would have reported run after run, found at once.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainops.core import paths
from trainops.core.errors import Addition, InputError, Problem
from trainops.core.yaml_dump import dump
from trainops.core.yamlio import load_file
from trainops.jobspec.model import Repository

# Each round reaches one layer deeper; the additions known today take three.
MAX_ROUNDS = 8
INPUTS = (paths.JOBS_DIR, paths.CLUSTERS_DIR, "trainops.yaml")


@dataclass
class Profile:
    """One profile file: where it is, its data with the additions applied, what changed."""

    path: Path
    data: dict[str, Any]
    changed: set[str] = field(default_factory=set)
    """Top-level keys the additions touch."""


@dataclass
class Plan:
    profiles: dict[str, Profile]
    """Cluster name -> its profile (every one; `changed` empty where nothing is added)."""
    remaining: list[Problem]
    """What still fails that no addition fixes (empty: the repository loads)."""

    @property
    def needed(self) -> list[Profile]:
        return [p for _, p in sorted(self.profiles.items()) if p.changed]


def _same_entry(a: Any, b: Any) -> bool:
    """Two list entries for one thing (a shared claim is one claim whatever its flags)."""
    if isinstance(a, dict) and isinstance(b, dict) and "name" in a:
        return bool(a.get("name") == b.get("name"))
    return bool(a == b)


def _apply(profile: Profile, addition: Addition) -> bool:
    """Add `addition.values` to the profile's list at `addition.path` (or set the scalar there:
    `replace`); whether it changed."""
    node = profile.data
    for key in addition.path[:-1]:
        node = node.setdefault(key, {})
    if addition.replace:
        if node.get(addition.path[-1]) == addition.values[0]:
            return False
        node[addition.path[-1]] = addition.values[0]
        profile.changed.add(addition.path[0])
        return True
    items = node.setdefault(addition.path[-1], [])
    changed = False
    for value in addition.values:
        found = next((i for i, item in enumerate(items) if _same_entry(item, value)), None)
        if found is None:
            items.append(value)
        elif isinstance(value, dict) and items[found] != {**items[found], **value}:
            items[found] = {**items[found], **value}
        else:
            continue
        changed = True
    if changed:
        profile.changed.add(addition.path[0])
        if all(isinstance(item, str) for item in items):
            items.sort()
    return changed


def _profiles(root: Path) -> dict[str, Profile]:
    out = {}
    for path in sorted((root / paths.CLUSTERS_DIR).glob("*.yaml")):
        (doc, *_) = load_file(path, str(path.relative_to(root)))
        data = doc.data if isinstance(doc.data, dict) else {}
        out[str(data.get("name") or path.stem)] = Profile(path, data)
    return out


def plan(root: Path, load: Callable[[Path], Repository]) -> Plan:
    """The additions every profile under `root` needs (nothing under `root` is written)."""
    profiles = _profiles(root)
    with tempfile.TemporaryDirectory(prefix="trainops-upgrade-") as tmp:
        scratch = Path(tmp)
        for name in INPUTS:
            source = root / name
            if source.is_dir():
                shutil.copytree(source, scratch / name)
            elif source.is_file():
                shutil.copy(source, scratch / name)
        for _ in range(MAX_ROUNDS):
            for profile in profiles.values():
                target = scratch / profile.path.relative_to(root)
                target.write_text(dump(profile.data), encoding="utf-8")
            try:
                load(scratch)
            except InputError as err:
                progressed = False
                for problem in err.problems:
                    for addition in problem.additions:
                        if addition.cluster in profiles:
                            progressed |= _apply(profiles[addition.cluster], addition)
                if not progressed:
                    return Plan(profiles, [p for p in err.problems if not p.additions])
            else:
                return Plan(profiles, [])
    return Plan(profiles, [])


def lines_to_add(profile: Profile) -> str:
    """The top-level blocks the additions touch, as they should read (YAML)."""
    return "".join(dump({key: profile.data[key]}) for key in sorted(profile.changed))


def _block(lines: list[str], key: str) -> tuple[int, int] | None:
    """The lines [start, end) of top-level `key`'s block: its line and the indented ones
    after it (a comment or blank line at column 0 belongs to what follows)."""
    start = next((i for i, line in enumerate(lines) if line.startswith(f"{key}:")), None)
    if start is None:
        return None
    end = start + 1
    while end < len(lines) and lines[end][:1] in (" ", "\t"):
        end += 1
    return start, end


def write(profile: Profile) -> None:
    """Each changed top-level block written into the profile file: appended where the file
    has no such key, else put in place of the old block (its own comments go with it)."""
    lines = profile.path.read_text(encoding="utf-8").splitlines(keepends=True)
    for key in sorted(profile.changed):
        block = dump({key: profile.data[key]}).splitlines(keepends=True)
        span = _block(lines, key)
        if span is None:
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n"
            lines += block
        else:
            lines[span[0] : span[1]] = block
    profile.path.write_text("".join(lines), encoding="utf-8")
