"""Put rendered files on disk, all or nothing; or compare them with what is there.

`trainops render` owns `base/`, `overlays/` and `gitops/` entirely: a file there
that the render does not produce is stale and is removed (or reported by --check).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from trainops.core import paths


@dataclass(frozen=True)
class Drift:
    path: str
    reason: str
    """`stale` (content differs), `missing` (not on disk) or `extra` (on disk, not rendered)."""


def _walk(folder: Path, rel: str, found: dict[str, Path]) -> None:
    """Every file under `folder` (named `rel` from the root) into `found`, as `rglob` and
    `is_file` find them (a symlink to a file counts, a symlinked folder is not entered), with
    `os.scandir`'s cached types: a 5,000-job fleet's generated tree holds 130,000 files."""
    try:
        entries = os.scandir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return
    with entries:
        for entry in entries:
            path = f"{rel}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                _walk(Path(entry.path), path, found)
            elif entry.is_file():
                found[path] = Path(entry.path)


def _on_disk(root: Path, within: Collection[str] | None = None) -> dict[str, Path]:
    """The generated files on disk, relative path -> path (`within`: only those whose
    relative path starts with one of these; only their folders are read)."""
    found: dict[str, Path] = {}
    if within is None:
        for top in paths.GENERATED_DIRS:
            _walk(root / top, top, found)
        return found
    generated = tuple(f"{top}/" for top in paths.GENERATED_DIRS)
    for prefix in (p for p in within if p.startswith(generated)):
        folder, _, start = prefix.rpartition("/")
        try:
            entries = list(os.scandir(root / folder))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            if not entry.name.startswith(start):
                continue
            if entry.is_dir(follow_symlinks=False):
                _walk(Path(entry.path), f"{folder}/{entry.name}", found)
            elif entry.is_file():
                found[f"{folder}/{entry.name}"] = Path(entry.path)
    return found


def check(root: Path, files: dict[str, str], within: Collection[str] | None = None) -> list[Drift]:
    """Differences between `files` and the generated directories under `root` (`within`:
    only the files on disk whose path starts with one of these, for a partial render)."""
    disk = _on_disk(root, within)
    drift = []
    for rel, text in files.items():
        if rel not in disk:
            drift.append(Drift(rel, "missing"))
        elif disk[rel].read_bytes() != text.encode():
            drift.append(Drift(rel, "stale"))
    drift += [Drift(rel, "extra") for rel in disk if rel not in files]
    return sorted(drift, key=lambda d: d.path)


def write(root: Path, files: dict[str, str]) -> list[Drift]:
    """Replace the generated directories with `files`; return what changed.

    Writes into a staging directory beside them first, then swaps each top-level
    directory with two renames, so an interrupted write never leaves a half tree.
    """
    changes = check(root, files)
    if not changes:
        return []
    staging = Path(tempfile.mkdtemp(prefix=".trainops-render-", dir=root))
    moved: list[tuple[Path, Path]] = []  # (from, to) renames done so far, to undo on failure
    try:
        for rel, text in files.items():
            target = staging / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        for top in paths.GENERATED_DIRS:
            new, current, old = staging / top, root / top, staging / f"{top}.old"
            if current.exists():
                os.replace(current, old)
                moved.append((current, old))
            if new.exists():
                os.replace(new, current)
                moved.append((new, current))
    except BaseException:
        for source, dest in reversed(moved):
            os.rename(dest, source)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return changes
