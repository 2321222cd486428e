"""Processes a test starts, reaped whatever happens (issue 35.10): `run` (subprocess.run with
a timeout that kills the whole tree), `started` (a Popen reaped on the way out), `reap` (a
process and every descendant), `marked` (the processes carrying an environment marker, which
survives reparenting). tests/process_guard.py fails the session on what escapes them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of `pid`, None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return int(fields[1]), fields[0]


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def descendants(root: int) -> list[int]:
    """Live (not zombie) descendants of `root`, parents before children."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None and stat[1] != "Z":
            children.setdefault(stat[0], []).append(pid)
    found: list[int] = []
    stack = [root]
    while stack:
        for child in sorted(children.get(stack.pop(), ())):
            found.append(child)
            stack.append(child)
    return found


def marked(name: str, prefix: str) -> list[int]:
    """Pids whose initial environment holds `name=<prefix>...`: a marker a launcher puts on
    what it starts (run-local's pod marker), found even after the launcher is gone."""
    needle = f"\0{name}={prefix}".encode()
    found = []
    for pid in _pids():
        try:
            environ = b"\0" + Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ:
            found.append(pid)
    return found


def kill(pids: Sequence[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGCONT)  # a stopped process cannot die until it runs
            os.kill(pid, signal.SIGKILL)


def _freeze(root: int) -> list[int]:
    """SIGSTOP `root` and its descendants until no new one appears (a process forking while
    the tree is walked would otherwise escape), root first."""
    frozen: list[int] = []
    while True:
        new = [p for p in [root, *descendants(root)] if p not in frozen]
        if not new:
            return frozen
        for pid in new:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGSTOP)
        frozen += new


def reap(proc: subprocess.Popen[Any] | int, also: Sequence[int] = ()) -> None:
    """SIGKILL `proc`, every descendant of it and `also`; wait for `proc` when it is ours.
    A Popen already waited for is left alone (its pid may be another process's by now): its
    orphans are the subreaper's, which the session's check finds."""
    if isinstance(proc, int):
        kill([*_freeze(proc), *also])
        return
    if proc.returncode is None:  # alive or a zombie: the pid is still this process's
        kill(_freeze(proc.pid))
    kill(also)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


@contextlib.contextmanager
def started(argv: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen[Any]]:
    """`subprocess.Popen(argv, **popen)`, its whole tree reaped on the way out."""
    proc = subprocess.Popen(list(argv), **popen)
    try:
        yield proc
    finally:
        reap(proc)


def run(argv: Sequence[str], *, timeout: float, **popen: Any) -> subprocess.CompletedProcess[Any]:
    """`subprocess.run(argv, capture_output=True, timeout=...)` whose timeout (or any failure)
    kills the whole tree: subprocess.run kills the direct child only (torchrun's workers,
    run-local's replicas lived on)."""
    popen.setdefault("stdout", subprocess.PIPE)
    popen.setdefault("stderr", subprocess.PIPE)
    with started(argv, **popen) as proc:
        out, err = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
