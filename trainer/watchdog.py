"""Hang watchdog: no step for `--hang-timeout` seconds -> dump every rank's state and exit.

A rank stuck in a collective (a peer that died without closing its sockets, a NCCL deadlock) or
in its own code (a stalled file system read) keeps its pod Running and its GPUs busy-waiting
until the collective timeout, and then only the collective's error reaches the log. The watchdog
runs in a daemon thread of every rank; when the last completed step is older than the timeout
it writes, to stderr (what `kubectl logs` keeps):

1. one fixed first line (`FIRST_LINE`), greppable by `trainops explain` and log alerts;
2. the Python stack of every thread (`faulthandler`, which needs no GIL-held Python code to run);
3. the flight recorder's unfinished collectives of this rank, when torch has one
   (`torch._C._distributed_c10d._dump_fr_trace_json`, torch >= 2.6; `trainer.dist` turns it on
   with TORCH_FR_BUFFER_SIZE before the process group is created);

and then leaves with `EXIT_HUNG` via `os._exit` (the main thread is stuck; nothing it holds can
be released in an orderly way), so torchrun fails the worker group and the operator's restart
policy acts. It is armed by the first completed step (model load, compilation and the first
collectives can take long) and paused while a checkpoint is written.
"""

from __future__ import annotations

import contextlib
import datetime
import faulthandler
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

# The first line of a watchdog dump; `{seconds}`, `{step}` and `{at}` (ISO 8601, UTC) filled in.
FIRST_LINE = (
    "trainops-watchdog: no step completed for {seconds}s (last step {step} at {at}); "
    "dumping stacks and exiting"
)
# Exit code of a rank stopped by the watchdog (timeout(1)'s code for "timed out").
EXIT_HUNG = 124
# Unfinished collectives shown per rank (a hang leaves one or two; a leak, many).
PENDING_SHOWN = 20


def flight_recorder_dump() -> str | None:
    """This process's unfinished collectives and each group's last completed one, as one line
    of JSON; None where torch has no recorder.

    The full record (up to TORCH_FR_BUFFER_SIZE entries) would be megabytes on one log line;
    what tells which collective a rank is stuck in, and which ranks are behind, are the entries
    not yet retired and `pg_status` (last enqueued/started/completed sequence number per group).
    """
    try:
        from torch._C import _distributed_c10d as c10d

        dump: Callable[..., bytes] = c10d._dump_fr_trace_json  # type: ignore[attr-defined]
    except (ImportError, AttributeError):
        return None
    try:
        record = json.loads(dump(includeCollectives=True, onlyActive=False))
    except (RuntimeError, ValueError) as exc:  # no process group, or recorder off (size 0)
        return json.dumps({"unavailable": str(exc)})
    pending = [e for e in record.get("entries", []) if not e.get("retired", False)]
    summary = {
        "pending": pending[-PENDING_SHOWN:],
        "pg_status": record.get("pg_status", {}),
        "nccl_comm_state": record.get("nccl_comm_state", {}),
    }
    return json.dumps(summary, sort_keys=True, separators=(",", ":"))


class Watchdog:
    """`step_done()` after each step, `paused()` around checkpoints, `stop()` at the end."""

    def __init__(
        self,
        timeout: float,
        rank: int,
        *,
        stream: TextIO | None = None,
        exit_fn: Callable[[int], None] = os._exit,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.timeout = timeout
        self.rank = rank
        self.stream = stream if stream is not None else sys.stderr
        self.exit_fn = exit_fn
        self.clock = clock
        self.last: float | None = None  # monotonic time of the last step; None: not armed
        self.last_step = 0
        self.last_wall = 0.0
        self.pauses = 0
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        if self.timeout > 0:
            self.thread = threading.Thread(target=self._run, name="trainops-watchdog", daemon=True)
            self.thread.start()

    def step_done(self, step: int) -> None:
        with self.lock:
            self.last = self.clock()
            self.last_step = step
            self.last_wall = time.time()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No firing inside; the window restarts when the block ends (a long checkpoint is not
        counted against the next step)."""
        with self.lock:
            self.pauses += 1
        try:
            yield
        finally:
            with self.lock:
                self.pauses -= 1
                if self.last is not None:
                    self.last = self.clock()

    def stop(self) -> None:
        self.done.set()

    def overdue(self) -> float | None:
        """Seconds since the last step when that exceeds the timeout (armed, not paused)."""
        with self.lock:
            if self.last is None or self.pauses:
                return None
            idle = self.clock() - self.last
        return idle if idle > self.timeout else None

    def _run(self) -> None:
        poll = min(5.0, max(0.05, self.timeout / 10))
        while not self.done.wait(poll):
            idle = self.overdue()
            if idle is not None:
                self.fire(idle)
                return

    def fire(self, idle: float) -> None:
        """Dump and exit (called from the watchdog thread)."""
        at = datetime.datetime.fromtimestamp(self.last_wall, datetime.UTC)
        out = self.stream
        line = FIRST_LINE.format(
            seconds=int(idle), step=self.last_step, at=at.isoformat(timespec="seconds")
        )
        out.write(f"{line}\n")
        out.write(f"trainops-watchdog: rank {self.rank} pid {os.getpid()} Python stacks:\n")
        out.flush()
        faulthandler.dump_traceback(file=out, all_threads=True)
        recorder = flight_recorder_dump()
        if recorder is not None:
            out.write(f"trainops-watchdog: rank {self.rank} flight recorder: {recorder}\n")
        out.write(f"trainops-watchdog: rank {self.rank} exiting with code {EXIT_HUNG}\n")
        out.flush()
        self.exit_fn(EXIT_HUNG)
