"""The roles a job has beside its training pods, typed: a TFJob's parameter servers and
evaluator, an MPIJob's Launcher and settings (re-exported by `trainops.jobspec.model`)."""

from __future__ import annotations

from dataclasses import dataclass

from trainops.jobspec.schemas import JOB, default


@dataclass(frozen=True)
class Role:
    """An extra replica role beside the training pods (a TF parameter server or evaluator, the
    MPI Launcher): its own size, GPUs and CPU and memory."""

    replicas: int
    """Pods of this role."""
    gpus: int
    """GPUs per pod of this role."""
    cpu: str | None
    """CPU request per pod; None: none."""
    memory: str | None
    """Memory request and limit per pod; None: none."""


@dataclass(frozen=True)
class TensorFlow:
    """TFJob roles (`framework: tensorflow`); the Chief and Workers are the job's `replicas`."""

    chief: bool
    """One of the training pods is the Chief; False: Workers only (worker 0 leads)."""
    success_policy: str
    """`ChiefOrWorker0` (the operator's default, rendered as "") or `AllWorkers`."""
    parameter_servers: Role | None = None
    """The PS role (ParameterServerStrategy), if any."""
    evaluator: Role | None = None
    """The one Evaluator, if any."""


@dataclass(frozen=True)
class Mpi:
    """MPIJob settings (`framework: mpi`); the Workers are the job's `replicas`."""

    api_version: str
    """`kubeflow.org/v2beta1` (MPI Operator, SSH) or `kubeflow.org/v1` (Training Operator)."""
    implementation: str
    """`OpenMPI`, `Intel` or `MPICH`: the mpirun flavour and the operator's hostfile and env."""
    launcher: Role
    """The Launcher pod that runs mpirun (no GPU unless asked)."""
    mpirun_args: tuple[str, ...]
    """mpirun options before the generated ones, one argv element each."""
    worker_command: tuple[str, ...] | None = None
    """The Workers' command; None leaves it to the operator (v2beta1: sshd) or the image."""
    ssh_auth_mount_path: str | None = None
    """Where the MPI Operator mounts the SSH keys (v2beta1); None: its default."""
    rank_program: str = default(JOB, "mpi.rankProgram")
    """`python` (a python program, with torch.distributed's rendezvous variables) or
    `executable` (any program mpirun starts as written: all_reduce_perf, a wrapper script)."""
