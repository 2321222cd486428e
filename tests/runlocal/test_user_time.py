"""run-local respects the user's time (issue 34, item 5): DeepSpeed's op cache is one directory
kept between runs (locked, its stale build locks cleared), a build under way is said, the
warnings of installed packages are cut to what the user can act on, and one option (`--tiny`)
runs a job whose weights and data this machine lacks."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools import REPO
from trainops.core.errors import InputError
from trainops.runlocal import op_cache
from trainops.runlocal.op_cache import LOCK_FILE, OpCache
from trainops.runlocal.options import Options
from trainops.runlocal.plan import Plan, make_plan
from trainops.runlocal.source import load_built_job
from trainops.runlocal.warnings_filter import WarningFilter


def _plan(job: str, tmp_path: Path, **options: object) -> Plan:
    built = load_built_job(REPO, job, "cloud-h100")
    return make_plan(built, Options(**options), tmp_path)  # type: ignore[arg-type]


@pytest.mark.usefixtures("needs_kustomize")
def test_every_replica_of_every_run_shares_one_op_cache(tmp_path: Path) -> None:
    cache = tmp_path / "ops"
    first = _plan("llm-finetune", tmp_path / "a", op_cache=cache)
    second = _plan("llm-finetune", tmp_path / "b", op_cache=cache)
    dirs = {launch.env[op_cache.ENV] for p in (first, second) for launch in p.launches}
    assert dirs == {str(cache)}
    # ... and not under the replica's home, which every run starts empty.
    for launch in first.launches:
        assert not launch.env[op_cache.ENV].startswith(launch.env["HOME"])
    assert any(c.startswith(f"{op_cache.ENV}={cache} in every replica") for c in first.changes)


def test_the_default_cache_is_the_users_own(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(op_cache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert op_cache.default_dir() == tmp_path / "trainops" / "torch_extensions"
    monkeypatch.setenv(op_cache.ENV, str(tmp_path / "mine"))
    assert op_cache.default_dir() == tmp_path / "mine"


def test_a_stale_build_lock_is_cleared_when_no_other_run_holds_the_cache(tmp_path: Path) -> None:
    """A build killed midway leaves torch's baton; the next build would wait on it for ever."""
    (tmp_path / "cpu_adam").mkdir()
    (tmp_path / "cpu_adam" / "lock").write_text("")
    with OpCache(tmp_path) as cache:
        assert cache.cleared == ["cpu_adam"]
        assert not (tmp_path / "cpu_adam" / "lock").exists()


def test_a_build_lock_stays_while_another_run_holds_the_cache(tmp_path: Path) -> None:
    """Another run (another process) holding the cache may be building right now."""
    (tmp_path / "cpu_adam").mkdir()
    (tmp_path / "cpu_adam" / "lock").write_text("")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time\n"
         f"fd = os.open({str(tmp_path / LOCK_FILE)!r}, os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_SH); print('held', flush=True); time.sleep(60)\n"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with OpCache(tmp_path) as cache:
            assert cache.cleared == []
            assert (tmp_path / "cpu_adam" / "lock").exists()
            # Held shared by both: a third run could take it shared too, not exclusively.
            fd = os.open(tmp_path / LOCK_FILE, os.O_RDWR)
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.close(fd)
    finally:
        holder.kill()
        holder.wait()


def test_a_build_under_way_is_said_when_it_starts_and_while_it_lasts(tmp_path: Path) -> None:
    now = [100.0]
    with OpCache(tmp_path) as cache:
        tick = cache.progress(lambda: now[0])
        assert tick() == []
        (tmp_path / "cpu_adam").mkdir()
        (tmp_path / "cpu_adam" / "lock").write_text("")
        assert tick() == []  # loading a built op holds the baton for a moment too
        now[0] += op_cache.BUILD_SECONDS
        [said] = tick()
        assert said.startswith(f"building DeepSpeed op(s) cpu_adam into {tmp_path} (3s so far")
        now[0] += 5
        assert tick() == []  # not on every poll
        now[0] += op_cache.PROGRESS_SECONDS
        [said] = tick()
        assert "(23s so far; kept for the next runs)" in said
        (tmp_path / "cpu_adam" / "lock").unlink()
        assert tick() == []


# What torch and DeepSpeed print: `path:line: Category: message`, then the source line.
TORCH_WARNING = (
    "/venv/lib/python3.11/site-packages/torch/distributed/fsdp/api.py:12: FutureWarning:"
    " `torch.distributed._shard` is deprecated"
)
DS_WARNING = (
    "/venv/lib/python3.11/site-packages/deepspeed/runtime/zero/linear.py:47: FutureWarning:"
    " `torch.cuda.amp.custom_fwd(args...)` is deprecated"
)
OWN_WARNING = "/app/trainer/data.py:88: UserWarning: shard 3 is smaller than the others"


def test_installed_packages_future_warnings_are_hidden_and_counted() -> None:
    shown = WarningFilter()
    output = [
        ("worker-0", TORCH_WARNING),
        ("worker-0", "  from torch.distributed._shard import x"),
        ("worker-1", TORCH_WARNING),
        ("worker-1", "  from torch.distributed._shard import x"),
        ("worker-0", DS_WARNING),
        ("worker-0", "  @autocast_custom_fwd"),
        ("worker-0", '{"event": "step", "step": 1}'),
        ("worker-0", OWN_WARNING),
        ("worker-0", "  warnings.warn(...)"),
        ("worker-1", OWN_WARNING),
        ("worker-1", "  warnings.warn(...)"),
        ("worker-1", '{"event": "step", "step": 1}'),
    ]
    kept = [(r, line) for r, line in output if shown.keep(r, line)]
    assert kept == [
        ("worker-0", '{"event": "step", "step": 1}'),
        ("worker-0", OWN_WARNING),
        ("worker-0", "  warnings.warn(...)"),
        ("worker-1", '{"event": "step", "step": 1}'),
    ]
    assert shown.summary() == (
        "3 FutureWarning/DeprecationWarning line(s) from installed packages hidden (deepspeed 1,"
        " torch 2): nothing in the job changes them; --all-warnings shows them"
    )
    assert WarningFilter().summary() is None


@pytest.mark.usefixtures("needs_kustomize")
def test_tiny_swaps_the_model_and_data_for_the_jobs_kind(tmp_path: Path) -> None:
    llm = _plan("llm-finetune", tmp_path / "llm", tiny=True)
    argv = llm.launches[0].argv
    assert "--model=gpt-tiny" in argv and "--data=synthetic-tokens" in argv
    assert "--seq-len=64" in argv
    assert not [a for a in argv if a.startswith(("--hf-model", "--data-path", "--token-dtype"))]
    assert "args: --hf-model removed (--tiny)" in llm.changes
    resnet = _plan("resnet50-ddp", tmp_path / "resnet", tiny=True)
    argv = resnet.launches[0].argv
    assert "--model=resnet18" in argv and "--data=synthetic-image" in argv
    assert not [a for a in argv if a.startswith("--data-path")]


@pytest.mark.usefixtures("needs_kustomize")
def test_tiny_refuses_a_program_that_is_not_ours(tmp_path: Path) -> None:
    """Even with --allow-any-program (which lets another program run as it is), --tiny has
    nothing to swap in a program that is not our trainer, so it refuses."""
    built = load_built_job(REPO, "resnet50-ddp", "cloud-h100")
    for spec in built.job["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["containers"][0]["image"] = "registry.example/other:1.0"
    with pytest.raises(InputError, match="--tiny swaps our trainer's model and data"):
        make_plan(built, Options(tiny=True, allow_any_program=True), tmp_path)
