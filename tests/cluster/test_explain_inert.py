"""Issue 35.6 end to end: `trainops explain` against the API emulator (tests/cluster/emulator.py,
a real HTTP server speaking the Kubernetes API) prints a pod's hostile log inert: on main the
log's OSC 52 clipboard write, its cursor moves rewriting the diagnosis line and its
`::add-mask::` line reached the terminal and the CI log raw."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.conftest import built, find, live, pod, response, run_cli
from trainops.cluster.emulator_thread import RunningEmulator

JOB = "resnet50-ddp"
HOSTILE_LOG = (
    "Traceback (most recent call last):\n"
    "\x1b]52;c;ZXZpbA==\x07\x1b[1A\x1b[2KRunning: nothing is wrong\n"
    "::add-mask::reviewer\n"
    "  ::stop-commands::x\n"
    "KeyError: 'lr'\n"
)


def test_explain_prints_a_hostile_log_inert(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = live(find(built(repo), "PyTorchJob", JOB), response("pytorchjob-status", "restarting"))
    api.add(job, pod(JOB, "worker", 0, response("pods", "crash-loop")))
    key = ("ml-vision", f"{JOB}-worker-0", "pytorch", True)
    api.call(lambda e: e.logs.update({key: HOSTILE_LOG}))
    code, out, err = run_cli(
        capsys, "--root", str(repo), "explain", JOB, "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig),
    )  # fmt: skip
    assert code == 1, err
    assert out.splitlines()[0].startswith("CrashLoopBackOff:")  # the diagnosis stays first
    assert "\x1b" not in out and "\x07" not in out, repr(out)
    assert not [line for line in out.splitlines() if line.lstrip().startswith("::")], out
    assert "\\x1b]52;c;ZXZpbA==" in out  # shown, escaped: the reader sees what was there
