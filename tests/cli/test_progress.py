"""Long commands show progress on a terminal and stay quiet otherwise: `trainops validate`
run for real with stderr on a pseudo-terminal, on a pipe, and with --quiet."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from tests.tools import REPO, require_kustomize

CLUSTERS = len(list((REPO / "clusters").glob("*.yaml")))


def _stderr(args: list[str], tty: bool) -> tuple[int, str]:
    require_kustomize()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "trainops", "--root", str(REPO), *args]
    if not tty:
        proc = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        return proc.returncode, proc.stderr
    leader, follower = pty.openpty()
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=follower, env=env) as proc:
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        code = proc.wait()
    os.close(leader)
    return code, b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.parametrize("command", [["validate"], ["build"]])
def test_progress_on_a_terminal(command: list[str]) -> None:
    code, err = _stderr(command, tty=True)
    assert code == 0, err
    assert f"{CLUSTERS} overlay(s) built in" in err
    assert "slowest " in err  # names the slowest overlay


def test_quiet_off_a_terminal_and_with_quiet() -> None:
    code, err = _stderr(["validate"], tty=False)
    assert code == 0 and "overlay" not in err, err
    code, err = _stderr(["validate", "--quiet"], tty=True)
    assert code == 0 and "overlay" not in err, err
