"""Real multi-process runs: torchrun --nproc_per_node=2, gloo, CPU."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.processes import reap
from tests.tools import REPO, require_module
from tests.trainer.launch import (
    TINY_GPT,
    env,
    events,
    free_port,
    one,
    run_torchrun,
    start_single_process,
    torchrun_cmd,
    worker_pids,
)

require_module("torch")
pytestmark = pytest.mark.slow

# Long enough that the run is still going when the test intervenes, short enough to finish.
KILL_RUN_STEPS = 150
# Kubernetes' default terminationGracePeriodSeconds.
GRACE_SECONDS = 30
# The end-of-run parameter digest and cross-rank comparison are opt-in.
CHECK_RANKS = "--check-ranks"


def assert_learned(out: str, factor: float = 0.9) -> None:
    steps = events(out, "step")
    assert len(steps) >= 2, out
    first, last = steps[0]["loss"], steps[-1]["loss"]
    assert last < first * factor, f"loss did not fall: {first} -> {last}"


def finished(result: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    done = one(result.stdout, "finished")
    assert done["ranks_identical"], "parameters differ across ranks"
    return done


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """An uninterrupted DDP run (the baseline of the restart test)."""
    ckpt = tmp_path_factory.mktemp("ddp-ref")
    args = [*TINY_GPT, CHECK_RANKS, "--steps", str(KILL_RUN_STEPS), "--checkpoint-dir",
            str(ckpt), "--checkpoint-interval", "10", "--keep-checkpoints", "2"]  # fmt: skip
    result = run_torchrun(args)
    return {"result": result, "args": args, "ckpt": ckpt}


def test_ddp_loss_falls_and_ranks_stay_identical(reference: dict[str, Any]) -> None:
    result = reference["result"]
    done = finished(result)
    assert done["step"] == KILL_RUN_STEPS
    assert_learned(result.stdout, factor=0.7)
    start = one(result.stdout, "start")
    assert start["backend"] == "gloo" and start["world_size"] == 2
    ckpt: Path = reference["ckpt"]
    # keep-last-2, `latest` names the newest, only complete folders remain
    names = sorted(p.name for p in ckpt.iterdir())
    assert names == ["latest", f"step-{KILL_RUN_STEPS - 10}", f"step-{KILL_RUN_STEPS}"]
    assert (ckpt / "latest").read_text() == f"step-{KILL_RUN_STEPS}"
    meta = json.loads((ckpt / f"step-{KILL_RUN_STEPS}" / "meta.json").read_text())
    assert meta["world_size"] == 2 and meta["config"]["model"] == "gpt-tiny"
    assert sorted(p.name for p in (ckpt / f"step-{KILL_RUN_STEPS}").iterdir()) == [
        "meta.json", "rng-rank0.pt", "rng-rank1.pt", "state.pt"]  # fmt: skip
    assert [e["code"] for e in events(result.stdout, "exit")] == [0, 0]


def test_killed_worker_resumes_to_the_uninterrupted_state(
    reference: dict[str, Any], tmp_path: Path
) -> None:
    args = [a if a != str(reference["ckpt"]) else str(tmp_path) for a in reference["args"]]
    proc = subprocess.Popen(
        torchrun_cmd(args, max_restarts=1), cwd=REPO, env=env(),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while not (tmp_path / "latest").exists():
            assert proc.poll() is None, "run ended before its first checkpoint"
            assert time.monotonic() < deadline, "no checkpoint written"
            time.sleep(0.02)
        pids = worker_pids(proc.pid)
        os.kill(pids[1], signal.SIGKILL)
        out, _ = proc.communicate(timeout=240)
    finally:
        reap(proc)  # torchrun's workers too, whatever happened
    assert proc.returncode == 0, out[-4000:]
    resumed = one(out, "resumed")
    assert resumed["restart_count"] == 1 and resumed["exact"]
    assert 0 < resumed["step"] < KILL_RUN_STEPS
    done = one(out, "finished")
    assert done["ranks_identical"]
    ref = one(reference["result"].stdout, "finished")
    # Same world size, same seed: bit-for-bit the state of the uninterrupted run.
    assert done["param_digest"] == ref["param_digest"]


def test_sigterm_checkpoints_and_exits_within_grace_and_serves_metrics(tmp_path: Path) -> None:
    port = free_port()
    # DataLoader workers as in the rendered jobs: torchrun signals each trainer's whole process
    # group, workers included, and a worker killed by it used to fail the rank (no checkpoint).
    args = [*TINY_GPT, "--num-workers", "2", "--steps", "100000",
            "--checkpoint-dir", str(tmp_path), "--checkpoint-interval", "100000",
            "--metrics-port", str(port)]  # fmt: skip
    proc = subprocess.Popen(
        torchrun_cmd(args), cwd=REPO, env=env(TORCHELASTIC_RESTART_COUNT="0"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        body = scrape_until(proc, port, lambda m: m.get("trainops_trainer_step", 0) >= 5)
        for name in (
            "trainops_trainer_samples_per_second",
            "trainops_trainer_tokens_per_second",
            "trainops_trainer_step_duration_seconds_count",
            "trainops_trainer_loss",
            "trainops_trainer_learning_rate",
            "trainops_trainer_step",
            "trainops_trainer_samples_total",
            "trainops_trainer_checkpoint_duration_seconds_count",
            "trainops_trainer_restarts",
            "trainops_trainer_world_size",
        ):
            assert name in body, f"{name} missing from /metrics"
        assert body["trainops_trainer_world_size"] == 2
        assert body["trainops_trainer_restarts"] == 0
        assert body["trainops_trainer_samples_per_second"] > 0
        assert 0 < body["trainops_trainer_loss"] < 20
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=GRACE_SECONDS)
        elapsed = time.monotonic() - sent
    finally:
        reap(proc)  # torchrun's workers too, whatever happened
    assert elapsed < GRACE_SECONDS
    stopped = one(out, "stopped")
    # Without --check-ranks no rank gathers or hashes the model on the way out.
    assert "param_digest" not in stopped and "ranks_identical" not in stopped, stopped
    assert [e["code"] for e in events(out, "exit")] == [0, 0], out[-3000:]
    assert "DataLoader worker" not in out, out[-3000:]
    # torchrun re-raises the signal it got (SignalException, exit 1) although every worker
    # exited 0; docs/trainer.md and the README say so.
    assert proc.returncode == 1, out[-3000:]
    assert (tmp_path / "latest").read_text() == f"step-{stopped['step']}"
    assert (tmp_path / f"step-{stopped['step']}" / "state.pt").is_file()


def scrape_until(proc: subprocess.Popen[str], port: int, ready: Any) -> dict[str, float]:
    """Poll /metrics until `ready(samples)`; returns the unlabelled samples by name."""
    deadline = time.monotonic() + 180
    while True:
        assert proc.poll() is None, "trainer exited before serving metrics"
        assert time.monotonic() < deadline, "metrics never became ready"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
                text = resp.read().decode()
        except OSError:
            time.sleep(0.2)
            continue
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#") and "{" not in line:
                name, value = line.rsplit(" ", 1)
                samples[name] = float(value)
        if ready(samples):
            return samples
        time.sleep(0.2)


def test_single_process_sigterm_exits_zero_with_checkpoint(tmp_path: Path) -> None:
    """`python -m trainer` without torchrun (no process group) handles SIGTERM the same way."""
    args = [*TINY_GPT, "--steps", "100000", "--checkpoint-dir", str(tmp_path),
            "--checkpoint-interval", "100000"]  # fmt: skip
    proc = start_single_process(args)
    assert proc.stdout is not None
    try:
        for line in proc.stdout:  # wait for training to be under way
            if '"event": "step"' in line:
                break
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=GRACE_SECONDS)
    finally:
        reap(proc)  # torchrun's workers too, whatever happened
    assert proc.returncode == 0, out
    step = one(out, "stopped")["step"]
    assert (tmp_path / "latest").read_text() == f"step-{step}"


def test_sigterm_during_a_periodic_save_stops_on_that_checkpoint(tmp_path: Path) -> None:
    """A signal that lands while step N is being saved: stop there, no extra step or save.

    To land it inside the save without depending on timing, the process is frozen (SIGSTOP)
    as soon as the save's temporary folder appears; only if that folder is still there while
    the process is frozen is SIGTERM sent, then SIGCONT. Otherwise the save finished first:
    let it run on and try the next checkpoint.
    """
    interval = 20
    args = [*TINY_GPT, "--steps", "100000", "--checkpoint-dir", str(tmp_path),
            "--checkpoint-interval", str(interval), "--keep-checkpoints", "100",
            "--vocab-size", "32768"]  # fmt: skip
    proc = start_single_process(args)
    caught = None
    try:
        deadline = time.monotonic() + 180
        step = interval
        while caught is None:
            saving = tmp_path / f".tmp-step-{step}"
            while not saving.exists() and not (tmp_path / f"step-{step}").exists():
                assert proc.poll() is None and time.monotonic() < deadline, f"no save of {step}"
            os.kill(proc.pid, signal.SIGSTOP)
            while Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "T":
                time.sleep(0.001)
            if saving.exists():
                caught = step
                os.kill(proc.pid, signal.SIGTERM)
            os.kill(proc.pid, signal.SIGCONT)
            step += interval
        out, _ = proc.communicate(timeout=GRACE_SECONDS)
    finally:
        reap(proc)  # torchrun's workers too, whatever happened
    assert proc.returncode == 0, out[-3000:]
    assert one(out, "stopped")["step"] == caught, out[-3000:]
    saved = list(range(interval, caught + 1, interval))
    assert [e["step"] for e in events(out, "checkpoint")] == saved
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["latest", *(f"step-{n}" for n in saved)]
    )
    assert (tmp_path / "latest").read_text() == f"step-{caught}"


def ds_config(tmp_path: Path, stage: int, accum: int) -> Path:
    path = tmp_path / f"ds-zero{stage}.json"
    path.write_text(json.dumps({
        "train_micro_batch_size_per_gpu": 8,
        "gradient_accumulation_steps": accum,
        "zero_optimization": {"stage": stage},
    }))  # fmt: skip
    return path


DS_ARGS = [a for a in TINY_GPT if a not in {"--batch-size", "8"}]


@pytest.mark.parametrize("stage", [2, 3])
def test_deepspeed_zero_loss_falls_and_ranks_stay_identical(tmp_path: Path, stage: int) -> None:
    require_module("deepspeed")
    accum = 2 if stage == 2 else 1
    ckpt = tmp_path / "ckpt"
    args = [*DS_ARGS, CHECK_RANKS, "--engine", "deepspeed", "--deepspeed-config",
            str(ds_config(tmp_path, stage, accum)), "--steps", "30",
            "--checkpoint-dir", str(ckpt), "--checkpoint-interval", "15"]  # fmt: skip
    result = run_torchrun(args)
    done = finished(result)
    assert done["step"] == 30
    assert_learned(result.stdout)
    start = one(result.stdout, "start")
    assert start["global_batch"] == 8 * accum * 2  # micro x accumulation x world, from the file
    # every rank wrote its ZeRO shard into the checkpoint
    shards = sorted(p.name for p in (ckpt / "step-30" / "deepspeed").iterdir())
    assert sum("optim_states" in name for name in shards) == 2, shards
    # resume at another world size: converted to DeepSpeed's universal checkpoint
    shutil.rmtree(ckpt / "step-30")
    (ckpt / "latest").write_text("step-15")
    args[args.index("--steps") + 1] = "20"
    again = run_torchrun(args, nproc=1)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    resumed = one(again.stdout, "resumed")
    assert resumed["step"] == 15 and not resumed["exact"] and resumed["saved_world_size"] == 2
    assert (ckpt / "step-15" / "deepspeed-universal").is_dir()
    assert one(again.stdout, "finished")["step"] == 20


def test_epoch_run_resumed_at_another_world_size_trains_the_same_samples(tmp_path: Path) -> None:
    """`--epochs 2` over 256 samples: 512 samples whatever the world size, on one LR curve."""
    args = [*TINY_GPT, "--dataset-size", "256", "--epochs", "2", "--schedule", "cosine",
            "--warmup-steps", "4", "--log-interval", "1", "--checkpoint-dir", str(tmp_path),
            "--checkpoint-interval", "4", "--keep-checkpoints", "20"]  # fmt: skip
    first = run_torchrun(args)  # 2 processes x micro batch 8: 16 samples per step
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert one(first.stdout, "finished")["step"] == 32
    lr_at = {16 * e["step"]: e["lr"] for e in events(first.stdout, "step")}  # by samples seen
    # Back to step 8 (128 samples into epoch 0), then one process: 8 samples per step.
    (tmp_path / "latest").write_text("step-8")
    again = run_torchrun(args, nproc=1)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    resumed = one(again.stdout, "resumed")
    assert (resumed["step"], resumed["exact"], resumed["saved_world_size"]) == (8, False, 2)
    done = one(again.stdout, "finished")
    assert done["step"] == 8 + (256 - 128) // 8 + 256 // 8
    meta = json.loads((tmp_path / f"step-{done['step']}" / "meta.json").read_text())
    assert (meta["samples_total"], meta["epoch"]) == (2 * 256, 1)
    # The schedule follows samples consumed: same LR as the 2-process run at the same sample.
    steps = events(again.stdout, "step")
    assert steps[0]["step"] == 9
    compared = 0
    for e in steps:
        seen = 128 + 8 * (e["step"] - 8)
        if seen in lr_at:
            assert e["lr"] == pytest.approx(lr_at[seen], rel=1e-9, abs=1e-15), e
            compared += 1
    assert compared == 24  # every 16 samples from 144 to 512
    assert steps[-1]["lr"] < 1e-4 * steps[0]["lr"]  # the cosine reached its end with the data
