"""`explain` reads a Python traceback as Python prints it, and names what the platform did.

The logs of the first three tests are real: transformers (the trainer extra's pin) loading a
model from a path that is not there under the real torchrun, loading one that is not in the
cache with the hub offline, and a torchrun child killed by SIGKILL. Python prints a chain of
exceptions ("During handling of the above exception, another exception occurred:", "The above
exception was the direct cause of the following exception:"); the last one is what ended the
program. On main explain stopped at the first exception line of the chain (the inner
HFValidationError, whatever `--tail` said) and named none of it in its first line.
The rest: a crash loop caught between two runs, an eviction of a pod the Training Operator
has since created again under the same name, and the scheduler's events.k8s.io series.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.conftest import pod, response
from tests.cluster.test_explain import JOB, _explain, _job
from tests.tools import require_module
from trainops.cluster.emulator_thread import RunningEmulator

HF_MISSING_PATH = """
import torch.distributed as dist
from transformers import AutoModelForCausalLM

dist.init_process_group("gloo")
print(f"rank {dist.get_rank()} loading", flush=True)
if dist.get_rank() == 1:
    AutoModelForCausalLM.from_pretrained("/data/models/Llama-2-13b-hf")
dist.barrier()
"""
HF_OFFLINE = """
from transformers import AutoModelForCausalLM
print("loading", flush=True)
AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-13b-hf")
"""
KILLED = """
import os, signal
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    os.kill(os.getpid(), signal.SIGKILL)
dist.barrier()
"""
KEY = ("ml-vision", f"{JOB}-worker-0", "pytorch", False)


def _run(tmp_path: Path, script: str, *, torchrun: bool) -> str:
    """The combined output of a real run of `script` (what the container log holds)."""
    require_module("torch")
    require_module("transformers")
    path = tmp_path / "train.py"
    path.write_text(script)
    argv = [sys.executable, str(path)]
    if torchrun:
        argv[1:1] = ["-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                     "--max-restarts", "0"]  # fmt: skip
    # TMPDIR: torchrun's agent makes a `torchelastic_*` log folder there and leaves it.
    env = {
        **os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_OFFLINE": "1",
        "TMPDIR": str(tmp_path),
    }  # fmt: skip
    run = subprocess.run(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
        cwd=tmp_path, env=env, check=False,
    )  # fmt: skip
    assert run.returncode != 0, run.stdout
    return run.stdout


def _failed_worker(api: RunningEmulator, repo: Path, log: str) -> None:
    api.add(_job(repo, "failed"), pod(JOB, "worker", 0, response("pods", "error-exit")))
    api.call(lambda e: e.logs.update({KEY: log}))


def _shown(out: str) -> tuple[str, list[str]]:
    """The log section's heading and its lines (indent removed)."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Log of pod/"))
    shown = []
    for line in lines[at + 1 :]:
        if not line.startswith("  "):
            break
        shown.append(line[2:])
    return lines[at], shown


@pytest.mark.slow
def test_a_chained_exception_under_torchrun_is_shown_whole_and_named(
    tmp_path: Path,
    api: RunningEmulator,
    repo: Path,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _failed_worker(api, repo, _run(tmp_path, HF_MISSING_PATH, torchrun=True))
    code, out, err = _explain(capsys, repo, kubeconfig, "--tail", "40")
    assert code == 1, err
    first = out.splitlines()[0]
    assert first.startswith(
        "Error: container pytorch of pod resnet50-ddp-worker-0 exited with code 1; rank 1 raised"
        " huggingface_hub.errors.HFValidationError: Repo id must be in the form"
    ), first
    heading, shown = _shown(out)
    assert heading.startswith(
        "Log of pod/resnet50-ddp-worker-0 container pytorch (current run, first traceback of"
    )
    # The whole chain: the inner exception, Python's chaining line, the one raised last.
    assert shown[0] == "[rank1]: Traceback (most recent call last):"
    chained = shown.index("[rank1]: During handling of the above exception, another exception"
                          " occurred:")  # fmt: skip
    assert 0 < chained < len(shown) - 2
    assert shown[-1].startswith("[rank1]: huggingface_hub.errors.HFValidationError: ")
    assert any("from_pretrained" in line for line in shown[chained:])
    assert "  torchrun: rank 1 (local_rank 1) on host " in out
    assert "ChildFailedError" not in "\n".join(shown)


@pytest.mark.slow
def test_a_direct_cause_with_a_message_over_two_lines_is_the_cause_of_death(
    tmp_path: Path,
    api: RunningEmulator,
    repo: Path,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No torchrun: the last traceback chain of the log, its message whole."""
    log = _run(tmp_path, HF_OFFLINE, torchrun=False)
    _failed_worker(api, repo, log + "W1123 08:42:40.000000 1 shutdown.py:12] bye\n")
    code, out, err = _explain(capsys, repo, kubeconfig, "--tail", "3")
    assert code == 1, err
    assert out.splitlines()[0] == (
        "Error: container pytorch of pod resnet50-ddp-worker-0 exited with code 1; it raised"
        " OSError: We couldn't connect to 'https://huggingface.co' to load the files, and"
        " couldn't find them in the cached files."
    )
    heading, shown = _shown(out)
    assert heading.endswith(f"(current run, the traceback it died of, {len(shown)} lines):")
    assert shown[0] == "Traceback (most recent call last):"
    assert "The above exception was the direct cause of the following exception:" in shown
    assert shown[-2].startswith("OSError: We couldn't connect")
    assert shown[-1].startswith("Check your internet connection")


@pytest.mark.slow
def test_a_torchrun_child_killed_by_a_signal_is_named(
    tmp_path: Path,
    api: RunningEmulator,
    repo: Path,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _failed_worker(api, repo, _run(tmp_path, KILLED, torchrun=True))
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    first = out.splitlines()[0]
    assert first.startswith(
        "Error: container pytorch of pod resnet50-ddp-worker-0 exited with code 1; torchrun:"
        " rank 1 (local_rank 1) on host "
    ), first
    assert f"was killed: Signal {int(signal.SIGKILL)} (SIGKILL) received by PID " in first
    assert "the kernel's OOM killer" in first


def test_a_crash_loop_between_two_runs_shows_the_previous_runs_traceback(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The container runs again after exit 1: on main, `Restarting: ...` and no log."""
    api.add(_job(repo, "restarting"), pod(JOB, "worker", 0, response("pods", "crash-loop-running")))
    previous = ("ml-vision", f"{JOB}-worker-0", "pytorch", True)
    current = ("ml-vision", f"{JOB}-worker-0", "pytorch", False)
    logs = {
        previous: 'step 0\nTraceback (most recent call last):\n  File "/app/t.py", line 3, in'
        " <module>\n    config['lr']\nKeyError: 'lr'\n",
        current: "step 0\n",
    }
    api.call(lambda e: e.logs.update(logs))
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    assert out.splitlines()[0] == (
        "Error: container pytorch of pod resnet50-ddp-worker-0 exited with code 1 and was"
        " restarted (restarts 4); it raised KeyError: 'lr'"
    )
    heading, shown = _shown(out)
    assert heading == (
        "Log of pod/resnet50-ddp-worker-0 container pytorch (previous run, the traceback it"
        " died of, 4 lines):"
    )
    assert shown[-1] == "KeyError: 'lr'"


def test_an_eviction_is_the_cause_after_the_operator_created_the_pod_again(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On main: `Restarting: PyTorchJob ... is restarting ...` (the kubelet's event was about a
    pod of the same name, so it was taken for the live one's)."""
    again = pod(JOB, "worker", 1, response("pods", "pending-recreated"))
    again["metadata"].update(uid="pod-resnet50-ddp-worker-1-second",
                             creationTimestamp="2026-11-23T08:31:05Z")  # fmt: skip
    api.add(_job(repo, "restarting"), again, *response("incidents", "evicted-recreated"))
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    assert out.splitlines()[0] == (
        "Evicted: pod resnet50-ddp-worker-1: The node was low on resource: ephemeral-storage."
        " Threshold quantity: 10Gi, available: 1832Mi. Container pytorch was using 96Gi, request"
        " is 0, has larger consumption of ephemeral-storage. (ephemeral storage: the pod wrote"
        " more to its container filesystem, logs or emptyDir volumes than its limit or the"
        " node's free disk; write caches and checkpoints to a volume, or request"
        " ephemeral-storage)"
    )


def test_the_schedulers_event_series_gives_the_count_and_the_last_time(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """events.k8s.io/v1 events carry `series.count`: on main `x1` and the first time."""
    api.add(
        _job(repo, "created"),
        pod(JOB, "master", 0, response("pods", "pending-insufficient-gpu")),
        *response("incidents", "scheduler-series"),
    )
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    first = out.splitlines()[0]
    assert first.endswith("(FailedScheduling x14, last 2026-11-23T08:41:10.118204Z)"), first
    assert (
        "  2026-11-23T08:41:10.118204Z  Warning  FailedScheduling  pod/resnet50-ddp-master-0:"
        in out
    )
    assert out.count("(x14)") == 1
