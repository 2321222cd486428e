"""`trainops run-local` on an MPIJob: the built Launcher's mpirun against local worker hosts.

Real processes: the committed overlay built by kustomize, Debian's Open MPI `mpirun`, our
trainer as the ranks' program on CPU/gloo. The job is the shipped MPIJob example as written
(jobs/horovod-training.yaml: our trainer's `mpi` image, `python -m trainer` on every rank),
with only its model shrunk for a CPU (`--set-arg`, as docs/run-local.md shows).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runlocal.conftest import variant_repo
from tests.runlocal.test_run_local import events, lines_of, run_local
from tests.tools import require_tool
from trainops.core.errors import InputError
from trainops.runlocal.mpi import make_mpi_plan
from trainops.runlocal.options import Options
from trainops.runlocal.source import load_built_job

pytestmark = pytest.mark.usefixtures("needs_kustomize")

# gpt-small at 1024 tokens in bf16 is the GPUs' job; the same program, small, for a CPU.
SMALL = ["--set-arg=--model=gpt-tiny", "--set-arg=--seq-len=32", "--set-arg=--precision=fp32",
         "--set-arg=--log-interval=1", "--set-arg=--num-workers=0"]  # fmt: skip


@pytest.fixture
def mpi_repo(tmp_path: Path) -> Path:
    return variant_repo(tmp_path / "repo", "horovod-training")


@pytest.mark.slow
def test_mpijob_runs_its_mpirun_locally(mpi_repo: Path) -> None:
    require_tool("mpirun")
    result = run_local(mpi_repo, "horovod-training", "--cluster", "cloud-h100", "--steps", "3",
                       *SMALL)  # fmt: skip
    out = result.stdout
    assert result.returncode == 0, out[-3000:] + result.stderr[-2000:]
    assert "image ghcr.io/example/trainops-trainer:0.1.0-mpi is our trainer" in out
    assert "(MPIJob, Launcher+2 Worker(s)): 2 rank(s)" in out
    assert "mpirun -np 32 -> 2 (the local ranks)" in out
    assert "btl_tcp_if_include eth0 dropped" in out
    (start,) = events(out, "launcher-0", "start")
    assert start["world_size"] == 2 and start["backend"] == "gloo"
    (done,) = events(out, "launcher-0", "finished")
    assert done["step"] == 3 and done["ranks_identical"]  # every rank stepped the same 3 steps
    exits = sorted((e["rank"], e["code"]) for e in events(out, "launcher-0", "exit"))
    assert exits == [(0, 0), (1, 0)]
    assert "the job Succeeded: launcher-0 succeeded" in out


@pytest.mark.slow
def test_a_rank_that_fails_fails_the_job_with_its_error_first(mpi_repo: Path) -> None:
    require_tool("mpirun")
    result = run_local(mpi_repo, "horovod-training", "--cluster", "cloud-h100", "--steps", "3",
                       *SMALL, "--set-arg=--lr=fast", "--backoff-limit=1")  # fmt: skip
    assert result.returncode == 1, result.stdout[-3000:]
    assert "the job Failed" in result.stdout
    error = result.stdout.split("first failure: launcher-0", 1)[1]
    assert "argument --lr: invalid float value: 'fast'" in error
    assert any("invalid float value" in line for line in lines_of(result.stdout, "launcher-0"))


def test_without_mpirun_it_says_what_to_install(
    mpi_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built = load_built_job(mpi_repo, "horovod-training", "cloud-h100")
    monkeypatch.setenv("PATH", str(tmp_path))  # a machine with no MPI installed
    with pytest.raises(InputError, match="install an MPI implementation"):
        make_mpi_plan(built, Options(), tmp_path)


def test_tfjob_is_refused_with_the_reason(tmp_path: Path) -> None:
    repo = variant_repo(tmp_path / "repo", "tf-distributed")
    result = run_local(repo, "tf-distributed", "--cluster", "cloud-h100")
    assert result.returncode == 2
    assert "run-local does not run TFJobs yet" in result.stderr
    assert "Traceback" not in result.stderr
