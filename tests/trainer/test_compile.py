"""`--compile`: the trainer's DDP engine runs `torch.compile`d, and its checkpoints stay
interchangeable with uncompiled runs.

Real processes, real TorchInductor: on CPU inductor generates and builds C++ (the C compiler the
test machine has); on the GPU machine it generates Triton kernels (bench/trainer.py measures
that path's speed). `nn.Module.compile()` compiles in place; `torch.compile(model)` would wrap
the model and prefix every state-dict key with `_orig_mod.` (torch/_dynamo/eval_frame.py,
OptimizedModule), which an uncompiled resume could not load.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import processes
from tests.tools import REPO
from tests.trainer.launch import TINY_GPT, env, events, one


def run_single(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in env().items() if k not in {"RANK", "MASTER_ADDR", "WORLD_SIZE"}}
    clean["TORCHINDUCTOR_CACHE_DIR"] = str(cache)  # where inductor writes what it generated
    return processes.run(  # inductor's compile workers too, on a timeout
        [sys.executable, "-m", "trainer", *args], cwd=REPO, env=clean, text=True, timeout=600
    )


@pytest.mark.slow
def test_compiled_run_trains_and_an_uncompiled_run_resumes_its_checkpoint(tmp_path: Path) -> None:
    base = [*TINY_GPT, "--log-interval", "1", "--checkpoint-dir", str(tmp_path / "ckpt")]
    cache = tmp_path / "inductor"
    compiled = run_single([*base, "--compile", "--steps", "6"], cache)
    assert compiled.returncode == 0, compiled.stdout[-3000:] + compiled.stderr[-3000:]
    steps = events(compiled.stdout, "step")
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5, 6]
    assert steps[-1]["loss"] < steps[0]["loss"]
    assert one(compiled.stdout, "finished")["step"] == 6
    generated = list(cache.rglob("*.py"))
    assert generated, "inductor generated no code: the model ran uncompiled"

    uncompiled_cache = tmp_path / "inductor-off"
    resumed = run_single([*base, "--no-compile", "--steps", "8"], uncompiled_cache)
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert one(resumed.stdout, "resumed")["step"] == 6
    assert one(resumed.stdout, "finished")["step"] == 8
    assert not list(uncompiled_cache.rglob("*.py"))
