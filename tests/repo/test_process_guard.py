"""Issue 35.10: the suite fails when a process a test started is still alive at its end, with
and without xdist, and the process is gone afterwards (tests/process_guard.py). Each case runs
a small suite of its own in a real pytest subprocess, with the guard registered as
tests/conftest.py registers it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests import processes
from tests.tools import REPO

LEAKY = """\
import os, subprocess

def test_leaves_an_orphan():
    # `sh` starts sleep in the background and exits: the sleep is orphaned, as torchrun's
    # workers were when a timeout killed torchrun alone.
    env = {**os.environ, "GUARD_MARK": "MARK"}
    subprocess.run(["sh", "-c", "sleep 600 >/dev/null 2>&1 &"], env=env, check=True)

def test_clean():
    subprocess.run(["true"], check=True)
"""
CLEAN = """\
import subprocess
from tests.processes import run, started

def test_reaped_tree():
    with started(["sh", "-c", "sleep 600 & sleep 600"]):
        pass

def test_run_kills_the_tree_on_timeout():
    try:
        run(["sh", "-c", "sleep 600 & sleep 600"], timeout=0.5)
    except subprocess.TimeoutExpired:
        pass
"""


def _suite(
    tmp_path: Path, body: str, *options: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    mark = uuid.uuid4().hex
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["tests.process_guard"]\n')
    (tmp_path / "test_case.py").write_text(body.replace("MARK", mark))
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:kmock",
            "--rootdir", str(tmp_path), "-c", "/dev/null", *options, str(tmp_path)]  # fmt: skip
    # The leak sleeps 600 s: the guard's grace (10 s in the real suite) would only be waited.
    env = {**os.environ, "PYTHONPATH": str(REPO), "TRAINOPS_PROCESS_GRACE": "1"}
    result = processes.run(argv, timeout=300, cwd=tmp_path, text=True, env=env)
    return result, mark


@pytest.mark.slow  # a whole pytest session each, with its start-up and the guard's grace time
@pytest.mark.parametrize("options", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_leaked_process_fails_the_suite_and_is_killed(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    result, mark = _suite(tmp_path, LEAKY, *options)
    out = result.stdout + result.stderr
    assert result.returncode == 1, out
    assert "leaked processes" in out and "sleep 600" in out, out
    assert "test_leaves_an_orphan" in out, out
    assert "2 passed" in out, out  # the tests themselves passed: the suite fails on the leak
    assert processes.marked("GUARD_MARK", mark) == []


@pytest.mark.slow  # a whole two-worker pytest session: 1 s alone, 14 s beside a busy suite
def test_a_suite_that_reaps_what_it_starts_passes(tmp_path: Path) -> None:
    result, _ = _suite(tmp_path, CLEAN, "-n", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "leaked" not in result.stdout
