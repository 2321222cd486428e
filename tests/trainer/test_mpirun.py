"""The trainer under `mpirun` (an MPIJob's Launcher): Open MPI from Debian, 2 ranks, gloo, CPU.

The ranks find their place from Open MPI's variables and rank 0's host from the hostfile the
launcher was given through `OMPI_MCA_orte_default_hostfile`, the variable the MPI Operator
sets in the Launcher (here it is this machine's host name, so the hostfile, not a loopback
fallback, is what the run proves). The Hydra (Intel MPI, MPICH) variables are checked on
`trainer.mpi.torch_env` directly: no Hydra mpirun is installed here.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests import processes
from tests.tools import REPO, require_module, require_tool
from tests.trainer.launch import TINY_GPT, env, free_port, one
from trainer import mpi

# Open MPI refuses to run as root (CI's containers) without both of these.
AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _mpirun(tmp_path: Path, program: list[str]) -> subprocess.CompletedProcess[str]:
    mpirun = require_tool("mpirun")
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(f"# as the MPI Operator writes it\n{socket.gethostname()} slots=2\n")
    extra = {**AS_ROOT, "OMPI_MCA_orte_default_hostfile": str(hostfile)}
    extra["MASTER_PORT"] = str(free_port())
    exports = ["PYTHONPATH", "OMP_NUM_THREADS", "PYTHONUNBUFFERED", "TRAINOPS_METRICS_PORT"]
    argv = [mpirun, "-np", "2", "--oversubscribe"]
    for name in [*exports, "MASTER_PORT"]:
        argv += ["-x", name]
    return processes.run(  # mpirun's ranks too, on a timeout
        [*argv, sys.executable, *program], cwd=REPO, env=env(**extra), text=True, timeout=240
    )


def test_ranks_take_rank_and_rendezvous_from_open_mpi(tmp_path: Path) -> None:
    # Each rank writes its own file: mpirun interleaves the ranks' stdout chunks (a line and
    # its newline are two writes), so two JSON lines could arrive as one.
    probe = (
        "import json, os, sys; from trainer import mpi; env = mpi.torch_env(os.environ);"
        " open(os.path.join(sys.argv[1], 'rank-' + env['RANK'] + '.json'), 'w')"
        ".write(json.dumps(env))"
    )
    result = _mpirun(tmp_path, ["-c", probe, str(tmp_path)])
    assert result.returncode == 0, result.stderr
    written = sorted(tmp_path.glob("rank-*.json"))
    seen = sorted((json.loads(p.read_text()) for p in written), key=lambda e: e["RANK"])
    assert [(e["RANK"], e["WORLD_SIZE"], e["LOCAL_RANK"]) for e in seen] == [
        ("0", "2", "0"),
        ("1", "2", "1"),
    ]
    assert {e["MASTER_ADDR"] for e in seen} == {socket.gethostname()}


@pytest.mark.slow
def test_trainer_trains_under_mpirun(tmp_path: Path) -> None:
    require_module("torch")
    args = [*TINY_GPT, "--steps", "20", "--check-ranks"]
    result = _mpirun(tmp_path, ["-m", "trainer", *args])
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    start = one(result.stdout, "start")
    assert (start["world_size"], start["backend"]) == (2, "gloo")
    done = one(result.stdout, "finished")
    assert done["step"] == 20 and done["ranks_identical"]


def test_hydra_variables_and_hostfile() -> None:
    """Intel MPI / MPICH: PMI_RANK, PMI_SIZE, MPI_LOCALRANKID, a `host:slots` hostfile."""
    environ = {"PMI_RANK": "9", "PMI_SIZE": "16", "MPI_LOCALRANKID": "1"}
    assert mpi.torch_env({**environ, "MASTER_ADDR": "w0"})["MASTER_ADDR"] == "w0"
    with pytest.raises(mpi.MpiEnvError, match="set MASTER_ADDR"):
        mpi.torch_env(environ)


def test_hostfile_formats(tmp_path: Path) -> None:
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("\n# comment\njob-worker-0.job.ns.svc:8\njob-worker-1.job.ns.svc:8\n")
    environ = {"PMI_RANK": "3", "PMI_SIZE": "16", "I_MPI_HYDRA_HOST_FILE": str(hostfile)}
    assert mpi.torch_env(environ) == {
        "RANK": "3",
        "WORLD_SIZE": "16",
        "LOCAL_RANK": "0",
        "MASTER_ADDR": "job-worker-0.job.ns.svc",
        "MASTER_PORT": "29500",
    }
    hostfile.write_text("job-worker-0.job.ns.svc slots=8\n")
    environ = {"OMPI_COMM_WORLD_RANK": "0", "OMPI_COMM_WORLD_SIZE": "8"}
    environ["OMPI_MCA_orte_default_hostfile"] = str(hostfile)
    assert mpi.torch_env(environ)["MASTER_ADDR"] == "job-worker-0.job.ns.svc"


def test_torchrun_and_plain_runs_are_left_alone() -> None:
    assert mpi.torch_env({"RANK": "1", "OMPI_COMM_WORLD_RANK": "1"}) == {}
    assert mpi.torch_env({}) == {}
