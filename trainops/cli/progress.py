"""Progress of the long commands on a terminal: how many overlays are built, which are still
building and for how long (the slow one shows), on one self-rewriting stderr line.

Quiet when stderr is not a terminal (CI logs, pipes) or with `--quiet`. It wraps the
kustomize runner the library already takes (`run=`), so the library stays print-free.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

# Redraw often enough to look alive, rarely enough to cost nothing.
TICK_SECONDS = 0.5


def add_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--quiet", action="store_true", help="no progress line on the terminal (stderr)"
    )


class Progress:
    """Counts `kustomize build` runs of `total` overlays and redraws one status line."""

    def __init__(self, label: str, total: int, stream: TextIO, enabled: bool) -> None:
        self.label, self.total, self.stream, self.enabled = label, total, stream, enabled
        self.done = 0
        self.running: dict[str, float] = {}
        self.slowest: tuple[float, str] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._start = time.monotonic()

    @classmethod
    def for_args(cls, args: argparse.Namespace, label: str, total: int) -> Progress:
        stream = sys.stderr
        return cls(label, total, stream, stream.isatty() and not getattr(args, "quiet", False))

    def line(self) -> str:
        now = time.monotonic()
        parts = [f"{self.label}: {self.done}/{self.total} overlays built"]
        if self.running:
            slow = sorted(self.running.items(), key=lambda kv: kv[1])[:3]
            parts.append("building " + ", ".join(f"{name} ({now - t:.0f}s)" for name, t in slow))
        if self.slowest:
            parts.append(f"slowest {self.slowest[1]} {self.slowest[0]:.1f}s")
        return " · ".join(parts)

    def _draw(self) -> None:
        with self._lock:
            self.stream.write("\r\033[K" + self.line())
            self.stream.flush()

    def wrap(self, run: Callable[[Path], str]) -> Callable[[Path], str]:
        """`run` (one overlay's build), counted and timed."""
        if not self.enabled:
            return run

        def counted(directory: Path) -> str:
            name = directory.name
            with self._lock:
                self.running[name] = time.monotonic()
            try:
                return run(directory)
            finally:
                with self._lock:
                    seconds = time.monotonic() - self.running.pop(name)
                    self.done += 1
                    if self.slowest is None or seconds > self.slowest[0]:
                        self.slowest = (seconds, name)
                self._draw()

        return counted

    def __enter__(self) -> Progress:
        if self.enabled:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()
        return self

    def _tick(self) -> None:
        while not self._stop.wait(TICK_SECONDS):
            self._draw()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self.enabled:
            slow = f"; slowest {self.slowest[1]} {self.slowest[0]:.1f}s" if self.slowest else ""
            self.stream.write(
                f"\r\033[K{self.label}: {self.done} overlay(s) built in"
                f" {time.monotonic() - self._start:.1f}s{slow}\n"
            )
            self.stream.flush()
