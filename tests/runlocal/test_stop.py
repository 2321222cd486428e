"""run-local stopped from outside: SIGTERM (a CI job cancelled, `timeout`, `kill`), SIGHUP (its
terminal closed) and Ctrl-C's SIGINT stop every replica first, as at the end of a job, remove
run-local's temporary directory and exit 128 + the signal. Python's default for SIGTERM and
SIGHUP ended run-local at once and left the replicas, each in a session of its own, training
with no supervisor (trainops/cli/run_local.py, `Stopped`).

The replicas are real torchrun process groups running a program that sleeps (resnet50-ddp with
its command replaced, `--allow-any-program`), so the stop is the one a training job gets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.processes import marked, reap
from tests.runlocal.conftest import variant_repo
from tests.tools import REPO
from trainops.cli.run_local import _stopped_by_signals
from trainops.runlocal.supervise import POD_MARKER

UP = "replica up"
DEADLINE = 90.0
"""Seconds the replicas may take to start on a loaded 2-core machine."""


def _sleeper(spec: dict[str, Any]) -> None:
    """resnet50-ddp whose program says UP, then sleeps far longer than the test."""
    spec["image"] = "python:3.11"
    code = f"import time; print({UP!r}, flush=True); time.sleep(600)"
    spec["command"] = ["python", "-m", "timeit", "-n", "1", "-r", "1", "-s", code, "pass"]
    spec["args"] = []
    spec.pop("dataSync", None)


@pytest.fixture(scope="module")
def sleeper_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return variant_repo(tmp_path_factory.mktemp("stop") / "repo", "resnet50-ddp", _sleeper)


DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL);"
    " os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)
"""Exec'd in front of run-local: SIGINT at its default, as in a terminal's foreground. A test
run in the background inherits SIGINT ignored (`cmd &` without job control), which run-local
rightly keeps (docs/run-local.md)."""


@pytest.mark.slow
@pytest.mark.usefixtures("needs_kustomize")
@pytest.mark.parametrize(
    "signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=lambda s: signal.Signals(s).name
)
def test_a_signal_stops_the_replicas_first_and_removes_the_temporary_directory(
    sleeper_repo: Path, tmp_path: Path, signum: int
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    log = tmp_path / "run-local.log"
    argv = [sys.executable, "-c", DEFAULT_SIGINT, "-m", "trainops", "--root", str(sleeper_repo),
            "run-local", "resnet50-ddp", "--cluster", "cloud-h100", "--replicas", "2",
            "--timeout", "300", "--allow-any-program"]  # fmt: skip
    # The venv's torchrun on PATH (the job's image is not our trainer); tempfile's folder here.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path, "TMPDIR": str(temp)}
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + DEADLINE
        while log.read_text().count(UP) < 2:
            assert proc.poll() is None and time.monotonic() < end, log.read_text()
            time.sleep(0.2)
        assert marked(POD_MARKER, f"{proc.pid}-"), "the replicas run"
        proc.send_signal(signum)
        code = proc.wait(timeout=60)
        left = marked(POD_MARKER, f"{proc.pid}-")
    finally:
        reap(proc, also=marked(POD_MARKER, f"{proc.pid}-"))
    output = log.read_text()
    name = signal.Signals(signum).name
    assert code == 128 + signum, output
    assert left == [], "no replica process outlives run-local"
    assert list(temp.iterdir()) == [], "run-local's temporary directory is removed"
    stopping = output.index("[run-local] stopping master-0, worker-0: run-local is exiting")
    assert stopping < output.index(f"run-local: stopped by {name}; its replicas were stopped first")


def test_off_the_main_thread_the_handlers_stay_as_they_are() -> None:
    """`trainops.cli.main` called from a thread (an embedding program): Python sets signal
    handlers from the main thread only; run-local then leaves them alone instead of failing."""
    seen: list[object] = []

    def body() -> None:
        with _stopped_by_signals():
            seen.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    assert seen == [before]
    with _stopped_by_signals():  # the main thread: run-local's own handler
        assert signal.getsignal(signal.SIGTERM) is not before
    assert signal.getsignal(signal.SIGTERM) is before
