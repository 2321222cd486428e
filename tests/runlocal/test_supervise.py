"""The operator's outcome rules in `supervise`, on real processes (small Python programs).

Each replica is a real process group started by the supervisor; the programs exit, crash,
kill themselves or leave grandchildren in sessions of their own, as trainers and torchrun do.
"""

from __future__ import annotations

import dataclasses
import os
import re
import sys
import time
from pathlib import Path

import pytest

from trainops.cli.run_local import _summary
from trainops.runlocal import supervise
from trainops.runlocal.operator_env import Replica
from trainops.runlocal.plan import Launch, Plan
from trainops.runlocal.supervise import Failure, Kill, Outcome, pod_processes, run


def launch(tmp: Path, replica: Replica, code: str, policy: str = "OnFailure") -> Launch:
    return Launch(
        replica=replica,
        argv=[sys.executable, "-u", "-c", code],
        env={**os.environ, "MARK": str(tmp / replica.name)},
        pod_env=[],
        cwd=tmp,
        restart_policy=policy,
        grace_seconds=5,
    )


def plan(tmp: Path, launches: list[Launch], success: str, backoff: int | None = 3) -> Plan:
    return Plan("job", "c", "x", launches, [], [], [], success, backoff, "All", tmp)


def go(p: Plan, timeout: float = 60, kill: Kill | None = None) -> tuple[Outcome, list[str]]:
    lines: list[str] = []
    return run(p, lines.append, timeout, kill), lines


def _alive(pid: int) -> bool:
    """Whether `pid` runs: a zombie (dead, not yet reaped by its parent) does not."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.fixture
def short_settle(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replicas left running in these tests sleep 600 s and never exit on their own: the
    supervisor's 5 s wait for them (SETTLE_SECONDS) only delays the test."""
    monkeypatch.setattr(supervise, "SETTLE_SECONDS", 0.5)


# Fails on its first attempt only (a file remembers), like a pod that crashes once.
ONCE = (
    "import os, sys; m = os.environ['MARK']; f = os.path.exists(m); open(m, 'w');"
    " sys.exit(0 if f else {})"
)


@pytest.mark.usefixtures("short_settle")
def test_master_success_ends_the_job_and_stops_workers(tmp_path: Path) -> None:
    p = plan(
        tmp_path,
        [
            launch(tmp_path, Replica("Master", 0), "print('done')"),
            launch(tmp_path, Replica("Worker", 0), "import time; time.sleep(600)"),
        ],
        "master",
    )
    start = time.monotonic()
    outcome, lines = go(p)
    assert outcome.succeeded and outcome.reason == "master-0 succeeded"
    assert "[master-0] done" in lines
    assert any("stopping worker-0: the job Succeeded" in line for line in lines)
    assert time.monotonic() - start < 30


def test_never_fails_the_job_and_shows_the_error(tmp_path: Path) -> None:
    code = "import sys; print('boom: bad flag', file=sys.stderr); sys.exit(3)"
    p = plan(tmp_path, [launch(tmp_path, Replica("Worker", 0), code, "Never")], "all-workers")
    outcome, lines = go(p)
    assert not outcome.succeeded
    assert outcome.reason == "worker-0 exited 3 and its restartPolicy is Never"
    assert outcome.first_failure is not None
    assert outcome.first_failure.error == ["boom: bad flag"]
    assert "[worker-0] boom: bad flag" in lines


def test_on_failure_restarts_until_backoff_limit(tmp_path: Path) -> None:
    p = plan(tmp_path, [launch(tmp_path, Replica("Worker", 0), "exit(1)")], "all-workers", 2)
    outcome, _ = go(p)
    assert not outcome.succeeded
    # PastBackoffLimit: the job fails once the restarts reach the limit.
    assert [f.attempt for f in outcome.failures] == [1, 2]
    assert outcome.restarts == 1
    assert "reaches backoffLimit 2" in outcome.reason


def test_on_failure_restart_recovers(tmp_path: Path) -> None:
    p = plan(tmp_path, [launch(tmp_path, Replica("Worker", 0), ONCE.format(1))], "all-workers")
    outcome, lines = go(p)
    assert outcome.succeeded and outcome.restarts == 1
    assert any("worker-0 exited 1: restarting it (restartPolicy OnFailure" in x for x in lines)


def test_exit_code_policy_retries_signals_only(tmp_path: Path) -> None:
    crash = (
        "import os, signal; m = os.environ['MARK']; f = os.path.exists(m); open(m, 'w');"
        " f or os.kill(os.getpid(), signal.SIGKILL)"
    )
    p = plan(
        tmp_path, [launch(tmp_path / "a", Replica("Worker", 0), crash, "ExitCode")], "all-workers"
    )
    (tmp_path / "a").mkdir()
    outcome, lines = go(p)
    assert outcome.succeeded
    assert any("exited 137: restarting it (exit code 137 >= 128 is retryable" in x for x in lines)
    p = plan(
        tmp_path, [launch(tmp_path, Replica("Worker", 0), "exit(2)", "ExitCode")], "all-workers"
    )
    outcome, _ = go(p)
    assert (
        not outcome.succeeded and "permanent error under restartPolicy ExitCode" in outcome.reason
    )


@pytest.mark.usefixtures("short_settle")
def test_elastic_succeeds_with_one_worker(tmp_path: Path) -> None:
    p = plan(
        tmp_path,
        [
            launch(tmp_path, Replica("Worker", 0), "pass"),
            launch(tmp_path, Replica("Worker", 1), "import time; time.sleep(600)"),
        ],
        "any-worker",
    )
    outcome, _ = go(p)
    assert outcome.succeeded and outcome.reason.startswith("worker-0 succeeded")


def test_timeout_stops_everything(tmp_path: Path) -> None:
    p = plan(
        tmp_path,
        [launch(tmp_path, Replica("Worker", 0), "import time; time.sleep(600)")],
        "all-workers",
    )
    outcome, _ = go(p, timeout=1)
    assert outcome.timed_out and not outcome.succeeded


def test_kill_replica_kills_processes_in_other_sessions(tmp_path: Path) -> None:
    """Like torchrun's workers: a grandchild in a session of its own dies with the replica."""
    pidfile = tmp_path / "grandchild.pid"
    code = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'],"
        " start_new_session=True)\n"
        f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
        "print('ready', flush=True)\n"
        "time.sleep(600)\n"
    )
    worker = launch(tmp_path, Replica("Worker", 0), code, "Never")
    p = plan(tmp_path, [worker], "all-workers")
    kill = Kill("worker-0", 0, re.compile("^ready$"))
    outcome, lines = go(p, kill=kill)
    assert outcome.reason == "worker-0 exited 137 and its restartPolicy is Never"
    assert "[run-local] killing worker-0 (SIGKILL to all its processes)" in lines
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(grandchild)
    assert pod_processes("no-such-marker") == []


def test_a_replica_killed_on_purpose_is_not_the_first_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 34: the summary named the deliberately killed worker, with an empty quote of its
    error; the job's own first failure is the replica that broke after it (and a replica that
    printed nothing is said to have, never quoted empty)."""
    worker = launch(tmp_path, Replica("Worker", 1), "import time; time.sleep(600)", "Never")
    master_code = (
        "import time, sys\n"
        "time.sleep(1.5)\n"
        "print('RuntimeError: peer worker-1 is gone', file=sys.stderr)\n"
        "sys.exit(1)\n"
    )
    master = launch(tmp_path, Replica("Master", 0), master_code, "Never")
    # The worker's restartPolicy is Never: its kill would end the job first; OnFailure
    # restarts it, and the Master's own failure decides.
    worker = dataclasses.replace(worker, restart_policy="OnFailure")
    p = plan(tmp_path, [master, worker], "master", backoff=5)
    outcome, _ = go(p, kill=Kill("worker-1", 0.2))
    first = outcome.first_failure
    assert first is not None and first.replica == "master-0"
    assert [f.replica for f in outcome.killed] == ["worker-1"]
    assert _summary(outcome) == 1
    out = capsys.readouterr().out
    assert "run-local: worker-1 (attempt 1) was killed on purpose (--kill-replica)" in out
    assert "first failure: master-0 (attempt 1) exited 1; its error:" in out
    assert "  | RuntimeError: peer worker-1 is gone" in out


def test_a_failure_that_printed_nothing_is_never_an_empty_quote(
    capsys: pytest.CaptureFixture[str],
) -> None:
    silent = Failure("worker-0", 2, 1, ["", "   "])
    assert silent.error == []
    assert _summary(Outcome(False, "worker-0 exited 2", [silent])) == 1
    out = capsys.readouterr().out
    assert "first failure: worker-0 (attempt 1) exited 2 without printing anything" in out
    assert "its error:" not in out
