"""A `framework: mpi` job as an MPIJob: the MPI Operator's `kubeflow.org/v2beta1` (default) or
the Training Operator's `kubeflow.org/v1`. One Launcher runs the generated `mpirun`; the job's
`replicas` are the Workers, each with `slotsPerWorker` = GPUs per Worker ranks.

The mpirun argv is generated, one element per word (never `-x NCCL_DEBUG=INFO` as one string,
the seed's mistake): `-np` = Workers x slots; with Open MPI a `-x NAME` for every variable of
the Launcher's env (the ranks start under the Workers' sshd or kubectl exec and see only what
mpirun exports: the cluster's NCCL settings, the job's env and secrets, the rendezvous
address), with Intel MPI and MPICH none (Hydra passes the Launcher's whole env to every rank);
and on a cluster the options keeping MPI's own TCP traffic on its socket interface.

The rendezvous address for a torch.distributed program (our trainer) is the first host of the
operator's hostfile, Worker 0, where mpirun places ranks 0..slots-1: `MASTER_ADDR` in the
Launcher's env, exported like the rest (the hostfile itself is mounted in the Launcher only).

Launcher and Workers restart `OnFailure`: the Launcher's first mpirun often fails before the
Workers' DNS names resolve (the MPI Operator's own default for it, kubeflow/mpi-operator#420),
and a Worker's sshd that dies comes back under the same host name, where the next mpirun finds
it. https://github.com/kubeflow/mpi-operator/blob/master/proposals/scalable-robust-operator.md
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trainops.facts.kubeflow import (
    MPI_LAUNCHER_CONTAINER,
    MPI_WORKER_CONTAINER,
    MPIJOB_V2BETA1,
    mpi_worker_host,
)
from trainops.jobspec.model import ClusterProfile, Target, TrainingJob
from trainops.render.common import job_metadata, replica_spec, run_policy, total_pods
from trainops.render.pod import Replica, pod_template, program_args, training_replica

RESTART_POLICY = "OnFailure"
# torch.distributed's default rendezvous port, served by rank 0 in Worker 0.
RENDEZVOUS_PORT = "29500"


def rendezvous_env(job: TrainingJob) -> tuple[tuple[str, str], ...]:
    """MASTER_ADDR/MASTER_PORT for the ranks: Worker 0's host name under the MPI Operator's
    headless Service. The Training Operator's v1 MPIJob creates no such Service: none there;
    ranks that run another program than python (`mpi.rankProgram: executable`, e.g. the NCCL
    tests) read no torch.distributed variables: none there either."""
    assert job.mpi is not None
    if job.mpi.api_version != MPIJOB_V2BETA1 or job.mpi.rank_program != "python":
        return ()  # no such Service, or ranks that are not torch.distributed
    host = mpi_worker_host(job.name, job.namespace, 0)
    return (("MASTER_ADDR", host), ("MASTER_PORT", RENDEZVOUS_PORT))


def interface_options(implementation: str, interface: str) -> list[str]:
    """mpirun options that keep MPI's TCP traffic (out-of-band and byte transfer) on the
    cluster's socket interface, as NCCL_SOCKET_IFNAME does for NCCL.
    https://docs.open-mpi.org/en/v5.0.x/tuning-apps/networking/tcp.html (btl_tcp_if_include,
    oob_tcp_if_include); Intel MPI and MPICH Hydra: `-iface`."""
    if implementation == "OpenMPI":
        return ["-mca", "btl_tcp_if_include", interface, "-mca", "oob_tcp_if_include", interface]
    return ["-iface", interface]


def mpirun_args(
    job: TrainingJob, target: Target | None, cluster: ClusterProfile | None, env_names: list[str]
) -> list[str]:
    """The Launcher's args after `mpirun`: the job's options, -np, env exports, the cluster's
    interface, then the program each rank runs."""
    assert job.mpi is not None
    mpi = job.mpi
    args = list(mpi.mpirun_args)
    if mpi.implementation == "OpenMPI" and job.security.run_as_user == 0:
        args.append("--allow-run-as-root")  # Open MPI refuses root without it
    args += ["-np", str(job.pods_on(target) * job.slots())]
    if mpi.implementation == "OpenMPI":
        for name in env_names:
            args += ["-x", name]
    if cluster is not None:
        args += interface_options(mpi.implementation, cluster.network.socket_interface)
    return [*args, *job.command, *program_args(job)]


def mpijob(
    job: TrainingJob, cluster: ClusterProfile | None = None, target: Target | None = None
) -> dict[str, Any]:
    assert job.mpi is not None
    mpi = job.mpi
    launcher = Replica(
        container=MPI_LAUNCHER_CONTAINER,
        command=["mpirun"],
        args=[],
        gpus=mpi.launcher.gpus,
        cpu=mpi.launcher.cpu,
        memory=mpi.launcher.memory,
        data=False,
        nccl_device=False,
        env=rendezvous_env(job),
    )
    # The argv exports the Launcher's env (the escape hatch's too): read it from a first
    # rendering, then render with the argv, so that an override of `args` still wins.
    first = pod_template(job, cluster, target, launcher, "Launcher")
    container = next(c for c in first["spec"]["containers"] if c["name"] == MPI_LAUNCHER_CONTAINER)
    names = [e["name"] for e in container.get("env") or []]
    launcher = replace(launcher, args=mpirun_args(job, target, cluster, names))
    launcher_template = pod_template(job, cluster, target, launcher, "Launcher")
    # The Workers hold the ranks (their GPUs, data and NCCL traffic); the program and its
    # args reach them through the Launcher's mpirun, not their own command.
    command = list(mpi.worker_command) if mpi.worker_command else None
    worker = replace(training_replica(job, MPI_WORKER_CONTAINER, command), args=None)
    specs = {
        "Launcher": replica_spec(1, RESTART_POLICY, launcher_template),
        "Worker": replica_spec(
            job.pods_on(target),
            RESTART_POLICY,
            pod_template(job, cluster, target, worker, "Worker"),
        ),
    }
    spec: dict[str, Any] = {
        "mpiReplicaSpecs": specs,
        "runPolicy": run_policy(job, cluster, total_pods(specs)),
        "slotsPerWorker": job.slots(),
    }
    if mpi.api_version == MPIJOB_V2BETA1:
        spec["mpiImplementation"] = mpi.implementation
        if mpi.ssh_auth_mount_path:
            spec["sshAuthMountPath"] = mpi.ssh_auth_mount_path
    return {
        "apiVersion": mpi.api_version,
        "kind": "MPIJob",
        "metadata": job_metadata(job, cluster),
        "spec": spec,
    }
