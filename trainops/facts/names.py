"""The names trainops writes itself into the pods it renders: its volumes and containers.

One module, because two layers need them: the renderer writes them (`trainops.render.pod`,
`tfjob`, `mpijob`) and the spec checks refuse a job's `extraVolumes` and `sidecars` that
reuse one (`trainops.jobspec.job_checks`; change them through `podTemplate`, which merges by
name). A name listed in only one of the two would let a job collide with what is rendered.
The operators' own container names (`pytorch`, `tensorflow`, `mpi-launcher`, `mpi-worker`)
are facts of the operators, in `trainops.facts.kubeflow`.
"""

from __future__ import annotations

from trainops.facts.kubeflow import (
    MPI_LAUNCHER_CONTAINER,
    MPI_WORKER_CONTAINER,
    PYTORCH_CONTAINER,
    TENSORFLOW_CONTAINER,
)
from trainops.facts.scratch import SCRATCH_VOLUMES

# The Memory emptyDir mounted at /dev/shm (NCCL and DataLoader workers need more than 64Mi).
SHM_VOLUME = "dshm"
# The generated DeepSpeed ConfigMap, mounted read-only.
DEEPSPEED_VOLUME = "deepspeed-config"
# The init container that fills the data claim before training starts.
DATA_SYNC_CONTAINER = "data-sync"

RENDERED_VOLUMES = frozenset({SHM_VOLUME, DEEPSPEED_VOLUME, *(name for name, _ in SCRATCH_VOLUMES)})
RENDERED_CONTAINERS = frozenset(
    {
        PYTORCH_CONTAINER,
        TENSORFLOW_CONTAINER,
        MPI_LAUNCHER_CONTAINER,
        MPI_WORKER_CONTAINER,
        DATA_SYNC_CONTAINER,
    }
)
