"""Run a plan's replicas as local process groups and decide the job's outcome as the operator would.

Each replica is one process group (a pod: killing it takes torchrun and its workers together).
Its output is streamed line by line with a `[worker-1]` prefix through the caller's sink (library
code does not print). When a replica exits, the Training Operator's rules decide what happens:

- exit 0: the job Succeeded when the Master did; without a Master, when any Worker did in an
  elastic job, or all Workers did otherwise (pytorchjob_controller.go, UpdateJobStatus);
- exit != 0: restartPolicy `Never` fails the job; `ExitCode` restarts on codes >= 128 (a signal:
  the operator's IsRetryableExitCode) and fails it otherwise; `OnFailure`/`Always` restart it
  until the replicas' restarts reach runPolicy.backoffLimit (PastBackoffLimit), then fail it.

When the job has finished the other replicas are stopped: SIGTERM to the group, SIGKILL after the
pod's grace period (capped), as the operator deletes the pods (cleanPodPolicy) when a job ends.
"""

from __future__ import annotations

import contextlib
import os
import queue
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from trainops.runlocal.plan import Launch, Plan

Sink = Callable[[str], None]

KEPT_LINES = 400
"""Lines of each replica attempt's output kept to explain a failure."""
ERROR_LINES = 12
"""Lines of the program's own last words shown for a failure."""
# torchrun's agent reports a failed worker with this line, then its own traceback and a
# ChildFailedError box: what the program said is what came before it.
_LAUNCHER_REPORT = re.compile(r"elastic/multiprocessing/api\.py:\d+\] failed \(exitcode")
RESTART_DELAY_SECONDS = 1.0
"""Pause before a restart (the kubelet backs off 10 s, doubling; locally we do not wait)."""
SETTLE_SECONDS = 5.0
"""After the job's outcome is decided, how long the other replicas may take to exit on their
own (workers of a succeeded job finish with the Master) before they are stopped."""
POLL_SECONDS = 0.05
KILL_ROUNDS = 20
"""Rounds of SIGKILL over a pod's processes (a round catches what forked during the last)."""
RETRYABLE_EXIT_CODE = 128
"""ExitCode policy: codes >= 128 (killed by a signal) are retried, lower ones are permanent."""


@dataclass(frozen=True)
class Watch:
    """Whether a replica's line is shown (`keep`: warnings_filter.py); what to say between
    polls (`tick`: op_cache.py, the ops being built)."""

    keep: Callable[[str, str], bool] = lambda replica, line: True
    tick: Callable[[], list[str]] = list


@dataclass(frozen=True)
class Kill:
    """`--kill-replica NAME --after S`: SIGKILL one replica's group, like a lost pod."""

    replica: str
    after: float
    """Seconds after the start, or after the first line matching `output`."""
    output: re.Pattern[str] | None = None
    """`--after-output REGEX`: count `after` from the first output line (any replica) matching
    it, e.g. the first checkpoint, so the kill lands at the same point on a slow machine."""


@dataclass
class Failure:
    replica: str
    code: int
    attempt: int
    output: list[str]
    """The attempt's last KEPT_LINES lines."""
    killed: bool = False
    """Killed on purpose (`--kill-replica`): not the job's failure, whatever follows it."""

    @property
    def error(self) -> list[str]:
        """The program's last lines before the launcher's failure report (else the last
        lines); blank lines left out, so nothing printed is an empty list."""
        lines = [line for line in self.output if line.strip()]
        for i in range(len(lines) - 1, -1, -1):
            if _LAUNCHER_REPORT.search(lines[i]):
                return [*lines[max(0, i - ERROR_LINES) : i], lines[i]]
        return lines[-ERROR_LINES:]


@dataclass
class Outcome:
    succeeded: bool
    reason: str
    failures: list[Failure] = field(default_factory=list)
    """Every non-zero exit, first first."""
    restarts: int = 0
    timed_out: bool = False

    @property
    def first_failure(self) -> Failure | None:
        """The first failure of the job's own (not a replica killed on purpose), else the first."""
        real = [f for f in self.failures if not f.killed] or self.failures
        return real[0] if real else None

    @property
    def killed(self) -> list[Failure]:  # by `--kill-replica`
        return [f for f in self.failures if f.killed]


@dataclass
class _Running:
    launch: Launch
    proc: subprocess.Popen[bytes]
    reader: threading.Thread
    attempt: int
    tail: deque[str]
    killed: bool = False  # by `--kill-replica`


POD_MARKER = "TRAINOPS_RUN_LOCAL_POD"
"""Env var naming the replica every process of it inherits. torchrun starts each worker in a
session of its own (setsid), so a process group is not the pod; the marker is, like the
container's cgroup: killing the pod kills every process carrying it, orphans included."""


def pod_processes(marker: str) -> list[int]:
    """Pids of this user's processes whose environment carries `POD_MARKER=marker` (Linux /proc)."""
    needle = f"{POD_MARKER}={marker}".encode() + b"\0"
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():  # not Linux: the process group below is all we can reach
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:  # gone, or another user's
            continue
        if needle in environ:
            found.append(int(entry.name))
    return found


def exit_code(returncode: int) -> int:
    """A container's exit code: a process killed by signal N exits 128 + N."""
    return 128 - returncode if returncode < 0 else returncode


class Supervisor:
    """Owns the replicas' processes for one run; `run` returns when the job has an outcome."""

    def __init__(
        self,
        plan: Plan,
        sink: Sink,
        timeout: float,
        kill: Kill | None = None,
        watch: Watch | None = None,
    ) -> None:
        self.plan = plan
        self.sink = sink
        self.timeout = timeout
        self.kill = kill
        self.watch = watch or Watch()
        self.lines: queue.Queue[tuple[str, str] | None] = queue.Queue()
        self.running: dict[str, _Running] = {}
        self.done: dict[str, int] = {}
        self.restarts = 0
        self.failures: list[Failure] = []
        self.kill_from: float | None = None
        """When the kill's clock started (monotonic), once its trigger has been seen."""
        names = [launch.name for launch in plan.launches]
        if kill is not None and kill.replica not in names:
            raise ValueError(f"no replica {kill.replica!r} (replicas: {', '.join(names)})")

    def _say(self, text: str) -> None:
        self.sink(f"[run-local] {text}")

    def _marker(self, name: str) -> str:
        return f"{os.getpid()}-{id(self)}-{name}"

    def _start(self, launch: Launch, attempt: int) -> None:
        proc = subprocess.Popen(
            launch.argv,
            cwd=launch.cwd,
            env={**launch.env, POD_MARKER: self._marker(launch.name)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C in the terminal goes to run-local alone
        )
        tail: deque[str] = deque(maxlen=KEPT_LINES)
        reader = threading.Thread(
            target=self._read, args=(launch.name, proc, tail), daemon=True, name=launch.name
        )
        reader.start()
        self.running[launch.name] = _Running(launch, proc, reader, attempt, tail)

    def _read(self, name: str, proc: subprocess.Popen[bytes], tail: deque[str]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            tail.append(line)
            self.lines.put((name, line))

    def _drain(self) -> None:
        while True:
            try:
                item = self.lines.get_nowait()
            except queue.Empty:
                return
            if item is None or not self.watch.keep(*item):
                continue
            self.sink(f"[{item[0]}] {item[1]}")
            if (
                self.kill is not None
                and self.kill.output is not None
                and self.kill_from is None
                and self.kill.output.search(item[1])
            ):
                self.kill_from = time.monotonic()

    def _terminate(self, run: _Running) -> None:
        """What the kubelet does first: SIGTERM to the container's main process only."""
        with contextlib.suppress(ProcessLookupError):
            run.proc.send_signal(signal.SIGTERM)

    def _kill_pod(self, run: _Running) -> None:
        """SIGKILL every process of the replica (the container's cgroup), until none is left."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(run.proc.pid, signal.SIGKILL)  # the main process's own session
        for _ in range(KILL_ROUNDS):
            pids = pod_processes(self._marker(run.launch.name))
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(POLL_SECONDS)

    def _reap(self, run: _Running) -> None:
        """After the pod's main process exits, nothing of the container survives it."""
        self._kill_pod(run)
        run.proc.wait()
        run.reader.join(timeout=5)
        self._drain()

    def stop_all(self, why: str) -> None:
        """SIGTERM every running replica's group, SIGKILL what is left after its grace period."""
        if not self.running:
            return
        self._say(f"stopping {', '.join(sorted(self.running))}: {why}")
        for run in self.running.values():
            self._terminate(run)
        deadline = time.monotonic() + max(r.launch.grace_seconds for r in self.running.values())
        while self.running and time.monotonic() < deadline:
            self._drain()
            for name, run in list(self.running.items()):
                if run.proc.poll() is not None:
                    self._reap(run)
                    del self.running[name]
            time.sleep(POLL_SECONDS)
        for run in self.running.values():
            self._reap(run)
        self.running.clear()

    def _settle(self) -> None:
        deadline = time.monotonic() + SETTLE_SECONDS
        while self.running and time.monotonic() < deadline:
            self._drain()
            for name, run in list(self.running.items()):
                if run.proc.poll() is not None:
                    self._reap(run)
                    code = exit_code(run.proc.returncode)
                    self._say(f"{name} exited {code}")
                    del self.running[name]
            time.sleep(POLL_SECONDS)

    def _succeeded(self) -> str | None:
        ok = {n for n, c in self.done.items() if c == 0}
        workers = [launch.name for launch in self.plan.launches if launch.replica.type == "Worker"]
        if self.plan.success == "launcher" and "launcher-0" in ok:
            return "launcher-0 succeeded (mpirun returned 0: every rank did)"
        if self.plan.success == "master" and "master-0" in ok:
            return "master-0 succeeded"
        if self.plan.success == "any-worker" and ok & set(workers):
            return f"{sorted(ok & set(workers))[0]} succeeded (elastic: one Worker is enough)"
        if self.plan.success == "all-workers" and set(workers) <= ok:
            return "every Worker succeeded"
        return None

    def _on_failure(self, run: _Running, code: int) -> str | None:
        """Restart the replica, or return why the job failed."""
        name, policy = run.launch.name, run.launch.restart_policy
        self.failures.append(Failure(name, code, run.attempt, list(run.tail), run.killed))
        if policy == "Never":
            return f"{name} exited {code} and its restartPolicy is Never"
        if policy == "ExitCode":
            if code < RETRYABLE_EXIT_CODE:
                return f"{name} exited {code}: a permanent error under restartPolicy ExitCode"
            reason = f"exit code {code} >= 128 is retryable under restartPolicy ExitCode"
        else:
            limit = self.plan.backoff_limit
            if limit is not None and (limit == 0 or self.restarts + 1 >= limit):
                return (
                    f"{name} exited {code}; with {self.restarts + 1} restart(s) the job reaches"
                    f" backoffLimit {limit}"
                )
            self.restarts += 1
            reason = f"restartPolicy {policy}, restart {self.restarts} (backoffLimit {limit})"
        self._say(f"{name} exited {code}: restarting it ({reason})")
        time.sleep(RESTART_DELAY_SECONDS)
        self._start(run.launch, run.attempt + 1)
        return None

    def run(self) -> Outcome:
        start = time.monotonic()
        try:
            for launch in self.plan.launches:
                self._start(launch, 1)
            return self._loop(start)
        finally:
            self.stop_all("run-local is exiting")

    def _kill_when_due(self) -> bool:
        """`--kill-replica` once its time has come; whether it has."""
        kill, start = self.kill, self.kill_from
        if kill is None or start is None or time.monotonic() - start < kill.after:
            return False
        target = self.running.get(kill.replica)
        if target is not None:
            self._say(f"killing {kill.replica} (SIGKILL to all its processes)")
            target.killed = True
            self._kill_pod(target)
        return True

    def _loop(self, start: float) -> Outcome:
        killed = False
        if self.kill is not None and self.kill.output is None:
            self.kill_from = start
        while True:
            self._drain()
            for line in self.watch.tick():
                self._say(line)
            now = time.monotonic() - start
            killed = killed or self._kill_when_due()
            if now >= self.timeout:
                self.stop_all(f"--timeout {self.timeout:g}s reached")
                return Outcome(
                    False,
                    f"timed out after {self.timeout:g}s",
                    self.failures,
                    self.restarts,
                    timed_out=True,
                )
            for name, run in list(self.running.items()):
                if run.proc.poll() is None:
                    continue
                self._reap(run)
                del self.running[name]
                code = exit_code(run.proc.returncode)
                if code == 0:
                    self.done[name] = 0
                    self._say(f"{name} exited 0")
                    why = self._succeeded()
                    if why is not None:
                        self._settle()
                        self.stop_all(
                            f"the job Succeeded; cleanPodPolicy {self.plan.clean_pod_policy}"
                        )
                        return Outcome(True, why, self.failures, self.restarts)
                    continue
                failed = self._on_failure(run, code)
                if failed is not None:
                    self.done[name] = code
                    self.stop_all(f"the job Failed; cleanPodPolicy {self.plan.clean_pod_policy}")
                    return Outcome(False, failed, self.failures, self.restarts)
            if not self.running:
                return Outcome(
                    False,
                    "every replica exited without the job succeeding",
                    self.failures,
                    self.restarts,
                )
            time.sleep(POLL_SECONDS)


def run(
    plan: Plan, sink: Sink, timeout: float, kill: Kill | None = None, watch: Watch | None = None
) -> Outcome:
    """Start every replica, stream their output to `sink`, return the job's outcome."""
    return Supervisor(plan, sink, timeout, kill, watch).run()
