"""Atomic, resumable checkpoints on shared storage.

Layout under `checkpoint_dir`:

    step-200/            one complete checkpoint (engine files, rng-rank*.pt, meta.json)
    step-300/
    latest               text "step-300", replaced atomically after the folder is complete

A save writes into `.tmp-step-N/`, every rank adds its files, then rank 0 writes `meta.json`
(last file in the folder), renames the folder to `step-N` and only then replaces `latest`. A
crash (kill -9, node loss) at any point leaves `latest` naming the previous complete checkpoint;
leftover `.tmp-*` folders are removed at the next save. Rank 0 alone purges old checkpoints,
keeping the last `keep`.

Rank 0 alone reads the shared directory for a decision and broadcasts it (which checkpoint to
resume from, whether a step is already saved): on NFS, ranks reading `latest` each on their own
can see different versions of it (attribute caching) and resume from different steps.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainer.dist import DistEnv, barrier, broadcast_object
from trainer.errors import ConfigError

LATEST = "latest"
MAX_POINTER_BYTES = 64
META = "meta.json"
TMP_PREFIX = ".tmp-"
STEP_PREFIX = "step-"
# A checkpoint folder's whole name: no separator, no `..`, so it can only name an entry of the
# checkpoint directory itself.
STEP_NAME = re.compile(r"step-[0-9]+")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` so readers see the old or the new content, never a torn file."""
    tmp = path.with_name(f"{TMP_PREFIX}{path.name}.{os.getpid()}")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def step_of(path: Path) -> int:
    return int(path.name.removeprefix(STEP_PREFIX))


def _remove(folder: Path) -> None:
    """Delete a checkpoint folder; it stops counting as complete first (meta.json goes first)."""
    (folder / META).unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)


def _read_pointer(pointer: Path) -> str | None:
    """The text of `latest` (at most MAX_POINTER_BYTES), None when there is none. Only this
    trainer writes it, a regular file: a symbolic link is planted, and reading through it put
    the first 80 characters of its target (another team's file, /etc/...) in our log (issue
    35.9), so it is opened without following links and nothing of it is shown."""
    try:
        fd = os.open(pointer, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:
        fd = -1
    with contextlib.ExitStack() as stack:
        if fd >= 0:
            stack.callback(os.close, fd)
        if fd < 0 or not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConfigError(
                f"{pointer} is not a regular file (a symbolic link, a device, a folder): not"
                " what this trainer writes; delete it (the newest complete checkpoint is then"
                " used)"
            )
        return os.read(fd, MAX_POINTER_BYTES).decode("utf-8", "replace").strip()


class CheckpointManager:
    """`resume_point` and `save` are the public surface; both are collective calls."""

    def __init__(self, root: str | Path, keep: int, env: DistEnv) -> None:
        self.root = Path(root)
        self.keep = keep
        self.env = env

    def complete(self) -> list[Path]:
        """Complete checkpoints (meta.json present), oldest first."""
        if not self.root.is_dir():
            return []
        found = [
            p
            for p in self.root.iterdir()
            if STEP_NAME.fullmatch(p.name)
            and p.is_dir()
            and not p.is_symlink()  # a link can point anywhere: not ours
            and (p / META).is_file()
        ]
        return sorted(found, key=step_of)

    def latest(self) -> Path | None:
        """The checkpoint `latest` names, else the newest complete one (pointer lost).

        Reads shared storage on this rank alone; the ranks of a job use `resume_point`."""
        pointer = self.root / LATEST
        name = _read_pointer(pointer)
        if name is not None:
            candidate = self.root / name
            if not STEP_NAME.fullmatch(name) or candidate.is_symlink():
                # Only this trainer writes `latest`, always a step-N folder beside it: anything
                # else (`../other-team/step-9`, a link) is planted; resuming from it would load
                # files we did not write.
                raise ConfigError(
                    f"{pointer}: names {name[:80]!r}, not a step-N folder of {self.root}; "
                    "delete the file (the newest complete checkpoint is then used) or fix it"
                )
            if (candidate / META).is_file():
                return candidate
        done = self.complete()
        return done[-1] if done else None

    @staticmethod
    def read_meta(path: Path) -> dict[str, Any]:
        meta: dict[str, Any] = json.loads((path / META).read_text(encoding="utf-8"))
        return meta

    def resume_point(self) -> tuple[Path, dict[str, Any]] | None:
        """Collective: the checkpoint to resume from and its metadata, as rank 0 finds them.

        Rank 0 also removes complete `step-N` folders newer than the one chosen (a crash
        between the folder rename and the `latest` write, or `latest` set back by hand): left
        there, a later save of step N would take the stale folder for its own result and it
        would hold one of the keep-last slots.
        """
        found: tuple[str, dict[str, Any]] | None = None
        if self.env.is_main:
            folder = self.latest()
            if folder is not None:
                found = (folder.name, self.read_meta(folder))
                for newer in self.complete():
                    if step_of(newer) > step_of(folder):
                        _remove(newer)
        found = broadcast_object(self.env, found)
        if found is None:
            return None
        name, meta = found
        return self.root / name, meta

    def save(self, step: int, write: Callable[[Path], None], meta: dict[str, Any]) -> Path:
        """Collective: every rank calls it; `write(folder)` adds this rank's files.

        Returns the final folder. Saving a step that is already complete is a no-op (a resume
        followed by an immediate SIGTERM reaches the same state again).
        """
        final = self.root / f"{STEP_PREFIX}{step}"
        if broadcast_object(self.env, self.env.is_main and (final / META).is_file()):
            return final
        tmp = self.root / f"{TMP_PREFIX}{STEP_PREFIX}{step}"
        if self.env.is_main:
            self.root.mkdir(parents=True, exist_ok=True)
            for stale in self.root.glob(f"{TMP_PREFIX}{STEP_PREFIX}*"):
                shutil.rmtree(stale, ignore_errors=True)
            if final.exists():  # incomplete debris of an earlier attempt: the rename needs room
                _remove(final)
            tmp.mkdir()
        barrier(self.env)
        write(tmp)
        barrier(self.env)
        if self.env.is_main:
            write_atomic(tmp / META, json.dumps(meta, indent=2, sort_keys=True).encode())
            os.replace(tmp, final)
            _fsync_dir(self.root)
            write_atomic(self.root / LATEST, final.name.encode())
            self._purge()
        barrier(self.env)
        return final

    def _purge(self) -> None:
        """Rank 0 only: drop all but the newest `keep` complete checkpoints."""
        done = self.complete()
        for old in done[: max(0, len(done) - self.keep)]:
            shutil.rmtree(old, ignore_errors=True)
