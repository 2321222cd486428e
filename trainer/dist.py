"""Process-group setup from torchrun's environment.

The device comes from LOCAL_RANK (the GPU index on this node), never from the global RANK: on
the second node of a 2 x 8 GPU job RANK is 8..15 but the GPUs are cuda:0..7 (the seed script's
`model.to(rank)` fails there). nccl on GPUs, gloo on CPU, chosen from what is present.
Without torchrun's variables the trainer runs as a single process with no process group.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

# Collective timeout: long enough for a checkpoint of a large model to reach shared storage
# while other ranks wait in a barrier (torch's default for nccl is 10 minutes).
COLLECTIVE_TIMEOUT = datetime.timedelta(minutes=30)


@dataclass(frozen=True)
class DistEnv:
    """Where this process sits in the job."""

    rank: int
    local_rank: int
    world_size: int
    restart_count: int
    device: torch.device
    backend: str
    distributed: bool

    @property
    def is_main(self) -> bool:
        """Rank 0 does all shared I/O (checkpoint metadata, purge, logs)."""
        return self.rank == 0


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def setup() -> DistEnv:
    """Pick device and backend, and join the process group when launched by torchrun."""
    rank = _env_int("RANK", 0)
    local_rank = _env_int("LOCAL_RANK", 0)
    world = _env_int("WORLD_SIZE", 1)
    restarts = _env_int("TORCHELASTIC_RESTART_COUNT", 0)
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        backend = "nccl"
    else:
        device = torch.device("cpu")
        backend = "gloo"
    distributed = "RANK" in os.environ and "MASTER_ADDR" in os.environ
    if distributed and not dist.is_initialized():
        dist.init_process_group(backend=backend, timeout=COLLECTIVE_TIMEOUT)
    return DistEnv(rank, local_rank, world, restarts, device, backend, distributed)


def teardown() -> None:
    if dist.is_initialized():
        # Leave together: a rank that destroys its group while a peer is still in a
        # collective (DeepSpeed's CPU shared-memory ops) aborts that peer.
        dist.barrier()
        dist.destroy_process_group()


def barrier(env: DistEnv) -> None:
    if env.distributed:
        dist.barrier()


def all_reduce_sum(env: DistEnv, values: list[float]) -> list[float]:
    """Sum a few floats over all ranks in one collective (float64 on the CPU side)."""
    tensor = torch.tensor(values, dtype=torch.float64)
    if env.distributed:
        tensor = tensor.to(env.device) if env.backend == "nccl" else tensor
        dist.all_reduce(tensor)
    return [float(v) for v in tensor.cpu().tolist()]


def all_gather_str(env: DistEnv, value: str) -> list[str]:
    """Every rank's string (used to compare parameter digests across ranks)."""
    if not env.distributed:
        return [value]
    out: list[object] = [None] * env.world_size
    dist.all_gather_object(out, value)
    return [str(v) for v in out]
