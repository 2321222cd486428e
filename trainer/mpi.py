"""torch.distributed's variables from an MPI launch: run the trainer under `mpirun` too.

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; under mpirun (an
MPIJob's Launcher, or `mpirun -np 2 python -m trainer` here) each rank learns its place from
its MPI implementation instead:

- Open MPI: OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK
  (https://docs.open-mpi.org/en/v5.0.x/tuning-apps/environment-var.html);
- Intel MPI and MPICH (Hydra): PMI_RANK, PMI_SIZE, MPI_LOCALRANKID
  (https://www.intel.com/content/www/us/en/docs/mpi-library/developer-reference-linux/2021-14/other-environment-variables.html).

The rendezvous address is rank 0's host: mpirun places ranks by slot, so ranks 0..slots-1 run
on the first host of the hostfile. MASTER_ADDR wins when set (trainops' MPIJob Launcher
exports it: the MPI Operator mounts the hostfile at /etc/mpi/hostfile in the Launcher only,
not in the Workers where the ranks run); else the hostfile the launcher was given
(OMPI_MCA_orte_default_hostfile, Open MPI 5's PRTE_MCA_prte_default_hostfile, Intel MPI's
I_MPI_HYDRA_HOST_FILE, MPICH's HYDRA_HOST_FILE, as the MPI Operator sets them) when this rank
can read it; else, when every rank runs on this host, 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

# (rank, size, local rank) per implementation family.
RANK_VARIABLES = (
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"),
    ("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"),
)
LOCAL_SIZE_VARIABLES = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS")
HOSTFILE_VARIABLES = (
    "OMPI_MCA_orte_default_hostfile",
    "PRTE_MCA_prte_default_hostfile",
    "I_MPI_HYDRA_HOST_FILE",
    "HYDRA_HOST_FILE",
)
# torch.distributed's default rendezvous port (what trainops' MPIJob exports as MASTER_PORT).
DEFAULT_PORT = "29500"


class MpiEnvError(RuntimeError):
    """Launched by MPI, but no way to find rank 0's host."""


def first_host(hostfile: str) -> str | None:
    """The first host of an Open MPI (`host slots=N`) or Hydra (`host:N`) hostfile."""
    try:
        text = Path(hostfile).read_text(encoding="utf-8")
    except OSError:
        return None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            return line.split()[0].split(":", 1)[0]
    return None


def torch_env(environ: Mapping[str, str]) -> dict[str, str]:
    """RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT for a process mpirun started;
    {} when it was not (or when torchrun's RANK is already there)."""
    if "RANK" in environ:
        return {}
    found = next((names for names in RANK_VARIABLES if names[0] in environ), None)
    if found is None:
        return {}
    rank_name, size_name, local_name = found
    out = {
        "RANK": environ[rank_name],
        "WORLD_SIZE": environ.get(size_name, "1"),
        "LOCAL_RANK": environ.get(local_name, "0"),
        "MASTER_PORT": environ.get("MASTER_PORT", DEFAULT_PORT),
    }
    out["MASTER_ADDR"] = environ.get("MASTER_ADDR") or _rendezvous_host(environ, out["WORLD_SIZE"])
    return out


def _rendezvous_host(environ: Mapping[str, str], world: str) -> str:
    for name in HOSTFILE_VARIABLES:
        host = first_host(environ[name]) if environ.get(name) else None
        if host:
            return "127.0.0.1" if host == "localhost" else host
    local = next((environ[n] for n in LOCAL_SIZE_VARIABLES if n in environ), None)
    if local == world:
        return "127.0.0.1"
    raise MpiEnvError(
        "started by mpirun across hosts, but rank 0's host is unknown: set MASTER_ADDR"
        " (e.g. `-x MASTER_ADDR=<first host>`) or pass a hostfile readable by every rank"
    )
