"""The fabric preflight of a job: NVIDIA nccl-tests' `all_reduce_perf` as an MPIJob on the same
nodes, GPUs, network attachments and NCCL settings as the job on one cluster (the seeds' "measure
the fabric before a 32-GPU job").

The preflight is the job itself turned into a `framework: mpi` job: same namespace, Workers,
GPUs per Worker, target (GPU product, node selector, tolerations, RDMA devices, Multus network,
NCCL env of the cluster and of the job), security context and pod overrides; only the program
(all_reduce_perf under the generated mpirun, one rank per GPU), the image (the profile's
`monitoring.ncclTestsImage`) and what only training needs (data, checkpoints, DeepSpeed,
elastic, sidecars) change, and who the pods run as: the image's user, whose sshd the Workers run
and whose ~/.ssh holds the operator's keys. The renderer then makes it as it makes every MPIJob
(render/mpijob.py), so the preflight cannot drift from what the job gets.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trainops.facts import derived_names as dn
from trainops.facts.kubeflow import MPIJOB_V2BETA1
from trainops.facts.mpi_ssh import MPI_OPERATOR_IMAGE
from trainops.facts.nccl_tests import ALL_REDUCE_ARGV
from trainops.facts.scratch import CACHE_ENV
from trainops.jobspec.model import ClusterProfile, Mpi, Role, Target, TrainingJob
from trainops.render import netpol, objects
from trainops.render.common import metadata

SUFFIX = "-nccl-preflight"
# The Launcher only runs mpirun: little CPU and memory.
LAUNCHER = Role(replicas=1, gpus=0, cpu="1", memory="1Gi")
# The image: nccl-tests built on the MPI Operator's `mpioperator/openmpi` (docs/monitoring.md),
# whose Workers run its non-root sshd as mpiuser (uid 1000) with the keys in its ~/.ssh: the
# MPI Operator v0.8 launcher/worker contract (facts/mpi_ssh.py), whatever the job runs as.
IMAGE = MPI_OPERATOR_IMAGE
# mpirun placement as the shipped MPI example: one rank per slot (GPU), no core binding.
MPIRUN_ARGS = ("-bind-to", "none", "-map-by", "slot")


def preflight_job(job: TrainingJob, image: str) -> TrainingJob:
    """`job` as the nccl-tests MPIJob it is measured by."""
    workers = job.replicas
    mpi = job.mpi or Mpi(
        api_version=MPIJOB_V2BETA1,
        implementation="OpenMPI",
        launcher=LAUNCHER,
        mpirun_args=MPIRUN_ARGS,
    )
    return replace(
        job,
        name=f"{job.name}{SUFFIX}",
        framework="mpi",
        image=image,
        command=ALL_REDUCE_ARGV,
        args=(),
        replicas=workers,
        elastic=None,
        deepspeed=None,
        volumes=(),
        # The caches the job points into its volumes: the preflight mounts none of them.
        env={k: v for k, v in job.env.items() if k not in CACHE_ENV},
        data_sync=None,
        secret_env=(),
        tensorflow=None,
        mpi=replace(
            mpi,
            launcher=LAUNCHER,
            mpirun_args=MPIRUN_ARGS,
            worker_command=IMAGE.worker_command,
            ssh_auth_mount_path=IMAGE.ssh_dir,
        ),
        security=replace(
            job.security, run_as_user=IMAGE.uid, run_as_group=IMAGE.uid, fs_group=IMAGE.uid
        ),
        pod=replace(job.pod, sidecars=(), volumes=(), volume_mounts=(), by_replica={}),
    )


def refused_name(job: TrainingJob) -> str | None:
    """Why the MPI Operator v0.8 would refuse the preflight of `job` for its name (its worker
    host names `<job>-nccl-preflight-worker-<n>` are DNS-1035 labels: facts/derived_names.py),
    None when it takes it."""
    pre = preflight_job(job, "")
    for name, why in dn.refused(dn.mpi_operator_names(pre.name, pre.replicas)):
        room = dn.MAX_LABEL - len(name.name) + len(job.name)
        return (
            f"the preflight MPIJob `{pre.name}`: {name.what} `{name.name}` is {why}, which the"
            f" {name.consumer} refuses ({name.source}); a job of {pre.replicas} pods can be"
            f" measured with a name of at most {room} characters"
        )
    return None


def preflight_objects(
    job: TrainingJob, cluster: ClusterProfile, target: Target, image: str
) -> list[dict[str, Any]]:
    """The MPIJob and the NetworkPolicy letting its pods reach each other."""
    pre = preflight_job(job, image)
    return [
        objects.training_job(pre, cluster, target),
        netpol.network_policy(pre, metadata(pre, pre.name), cluster),
    ]
