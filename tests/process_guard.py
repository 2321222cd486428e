"""Nothing a test starts outlives the test suite (issue 35.10).

After one `make test`, three trainer processes of a run-local job (`--epochs=1000`) and their
torchrun parents were still running 40 minutes later, orphaned, using a core. Two halves:

- Helpers a test starts processes with, that reap the whole tree whatever happens (a failed
  assertion, a timeout, an exception): tests/processes.py.
- This pytest plugin (registered from tests/conftest.py): each pytest process (the controller
  and every xdist worker) makes itself the child subreaper (Linux `PR_SET_CHILD_SUBREAPER`),
  so an orphan of a test is reparented to it rather than to init and stays its descendant.
  When the session ends, every descendant still alive (after a grace period) is listed with
  the test after which it was first seen, killed, and the run fails; an xdist worker hands
  its list to the controller (`workeroutput`), which fails the suite.
"""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.processes import descendants, kill

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
GRACE_SECONDS = float(os.environ.get("TRAINOPS_PROCESS_GRACE", "10"))
"""How long processes may take to exit after the last test (a teardown's SIGTERM); the guard's
own tests (tests/repo/test_process_guard.py), whose leak never exits, set it short."""
LEAKS = "trainops_leaked_processes"
# Not leaks (their command line says so): xdist's workers (execnet's bootstrap), the
# controller's own children; helpers that exit with the process that started them, by
# design: multiprocessing's resource tracker and fork server, torch's compile workers.
_NOT_LEAKS = (
    "exec(eval(sys.stdin.readline()))",
    "multiprocessing.resource_tracker",
    "multiprocessing.forkserver",
    "torch/_inductor/compile_worker",
)


def _subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _has_children() -> bool:
    """Whether this process has a child (alive or not yet reaped); True when Linux cannot say
    (`/proc/PID/task/TID/children` needs CONFIG_PROC_CHILDREN)."""
    try:
        tasks = os.listdir("/proc/self/task")
        return any(Path(f"/proc/self/task/{t}/children").read_text().strip() for t in tasks)
    except OSError:
        return True


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode("utf-8", "replace").strip()[:200]


class ProcessGuard:
    """Tracks this pytest process's descendants; fails the session on any left alive."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.active = _subreaper()
        self.seen: dict[int, str] = {}
        """pid -> the test after which it was first seen alive."""
        self.reported: list[str] = []
        """What the xdist workers found (on the controller)."""

    def _alive(self) -> list[int]:
        return [
            p for p in descendants(os.getpid()) if not any(x in _cmdline(p) for x in _NOT_LEAKS)
        ]

    @pytest.hookimpl(hookwrapper=True, trylast=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        yield
        # Most tests leave no child at all: the kernel's list of our children says so in
        # microseconds; the walk of /proc (milliseconds) only when there is one.
        if self.active and _has_children():
            for pid in self._alive():
                self.seen.setdefault(pid, item.nodeid)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist (controller): what a worker left alive."""
        self.reported += getattr(node, "workeroutput", {}).get(LEAKS, [])

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        leaks = self._leaks()
        if hasattr(self.config, "workeroutput"):
            self.config.workeroutput[LEAKS] = leaks  # the controller fails the suite
            return
        leaks += self.reported
        if not leaks:
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        lines = ["processes the tests started were still alive after the run (killed):"]
        lines += [f"  {leak}" for leak in leaks]
        if reporter is not None:
            reporter.write_sep("=", "leaked processes", red=True)
            for line in lines:
                reporter.write_line(line)
        else:
            print("\n".join(lines), file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _leaks(self) -> list[str]:
        if not self.active:
            return []
        end = time.monotonic() + GRACE_SECONDS
        alive = self._alive()
        while alive and time.monotonic() < end:
            time.sleep(0.2)
            alive = self._alive()
        found = [
            f"pid {pid} ({self.seen.get(pid, 'started after the last test')}): {_cmdline(pid)}"
            for pid in alive
        ]
        kill(alive)
        return found


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(ProcessGuard(config), "trainops-process-guard")
