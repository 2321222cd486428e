"""DeepSpeed's op cache kept between run-local runs: one directory for every run, locked.

DeepSpeed builds its C++ ops (cpu_adam, ...) on first use with torch's cpp_extension, into
TORCH_EXTENSIONS_DIR: by default under the home directory, which run-local gives every
replica empty on every run, as a pod's emptyDir is. A DeepSpeed job's first step then came
after minutes of silent compiling, every run. Every replica of every run uses one directory
instead: TORCH_EXTENSIONS_DIR when the user set it, else `~/.cache/trainops/torch_extensions`
(`--op-cache DIR`).

torch serialises concurrent builds of one op with a baton file (`<op>/lock`); a build killed
midway (Ctrl-C, `--kill-replica`) leaves it behind and every later build waits on it for
ever. So each run holds a shared lock on the cache while it runs, and a run that finds no
other holding it removes the batons it finds: no build can be under way.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

ENV = "TORCH_EXTENSIONS_DIR"
LOCK_FILE = ".trainops-run-local.lock"
BATON = "lock"
PROGRESS_SECONDS = 15.0
"""How often a build still under way is said again."""
BUILD_SECONDS = 3.0
"""A baton held this long is a build (loading a built op holds it for a moment)."""


def default_dir() -> Path:
    """TORCH_EXTENSIONS_DIR when set, else the user's cache directory's."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "trainops" / "torch_extensions"


class OpCache:
    """The cache directory, held (shared) for one run; stale batons cleared when alone."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cleared: list[str] = []
        """The ops whose stale baton this run removed."""
        self._fd: int | None = None

    def __enter__(self) -> OpCache:
        self.path.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pass  # another run is using it: its batons may be live
        else:
            for baton in sorted(self.path.glob(f"*/{BATON}")):
                baton.unlink(missing_ok=True)
                self.cleared.append(baton.parent.name)
        fcntl.flock(self._fd, fcntl.LOCK_SH)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None

    def building(self) -> list[str]:
        """The ops being built now (a baton in their directory)."""
        return sorted(baton.parent.name for baton in self.path.glob(f"*/{BATON}"))

    def progress(self, clock: Callable[[], float] = time.monotonic) -> Callable[[], list[str]]:
        """A function saying, once an op build has lasted BUILD_SECONDS and every
        PROGRESS_SECONDS after, which ops are building and for how long (else nothing)."""
        state: dict[str, float] = {}

        def tick() -> list[str]:
            ops = self.building()
            now = clock()
            if not ops:
                state.clear()
                return []
            started = state.setdefault("started", now)
            # Loading a built op takes the baton for a moment too: only a build lasts.
            if now - started < BUILD_SECONDS or now < state.get("next", now):
                return []
            state["next"] = now + PROGRESS_SECONDS
            return [
                f"building DeepSpeed op(s) {', '.join(ops)} into {self.path}"
                f" ({now - started:.0f}s so far; kept for the next runs)"
            ]

        return tick
