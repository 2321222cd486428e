"""Process-group setup from torchrun's environment (or mpirun's, through `trainer.mpi`).

The device comes from LOCAL_RANK (the GPU index on this node), never from the global RANK: on
the second node of a 2 x 8 GPU job RANK is 8..15 but the GPUs are cuda:0..7 (the seed script's
`model.to(rank)` fails there). nccl on GPUs, gloo on CPU, chosen from what is present.
Without torchrun's variables the trainer runs as a single process with no process group.
"""

from __future__ import annotations

import datetime
import os
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
import torch.distributed as dist

from trainer import mpi

# How often rank 0 polls the store while the ranks of a new round agree on their namespace.
NAMESPACE_POLL_SECONDS = 0.05
# Flight-recorder entries kept per process group (torch 2.13 reads TORCH_FR_BUFFER_SIZE, else
# TORCH_NCCL_TRACE_BUFFER_SIZE, when the group is created; 0 = off). The watchdog dumps the
# unfinished ones of a hung job; 2000 is the size PyTorch's flight-recorder docs use.
FLIGHT_RECORDER_ENTRIES = "2000"

T = TypeVar("T")


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


def setup(collective_timeout: float = 1800.0) -> DistEnv:
    """Pick device and backend, and join the process group when launched by torchrun or
    mpirun (whose rank variables become torchrun's first).

    `collective_timeout` (seconds, `--collective-timeout`) bounds every collective and the
    process-group setup. The flight recorder is turned on (unless the job's env says otherwise)
    so a hang can be dumped, and NCCL writes it on its own timeout too (TORCH_NCCL_DUMP_ON_TIMEOUT).
    """
    os.environ.update(mpi.torch_env(os.environ))
    os.environ.setdefault("TORCH_FR_BUFFER_SIZE", FLIGHT_RECORDER_ENTRIES)
    os.environ.setdefault("TORCH_NCCL_DUMP_ON_TIMEOUT", "1")
    timeout = datetime.timedelta(seconds=collective_timeout)
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
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True" and world > 1:
            store = dist.TCPStore(  # type: ignore[attr-defined]
                os.environ["MASTER_ADDR"],
                int(os.environ["MASTER_PORT"]),
                is_master=False,
                timeout=timeout,
            )
            prefix = round_namespace(store, rank, world, timeout.total_seconds())
            dist.init_process_group(
                backend=backend,
                store=dist.PrefixStore(prefix, store),  # type: ignore[attr-defined]
                rank=rank,
                world_size=world,
                timeout=timeout,
            )
        else:
            dist.init_process_group(backend=backend, timeout=timeout)
    return DistEnv(rank, local_rank, world, restarts, device, backend, distributed)


def round_namespace(store: Any, rank: int, world: int, timeout: float = 1800.0) -> str:
    """A store prefix that all ranks of this worker round share and no earlier round used.

    torchrun (2.x) hands every restarted round the same agent TCPStore without a per-round
    prefix, so a rank can read the connection address that a dead rank of the previous round
    left there and fail with "Connection refused" (seen with gloo here; pytorch/pytorch#167288
    reports it for NCCL). TORCHELASTIC_RESTART_COUNT is no fix: a pod recreated by Kubernetes
    restarts its count at 0 while the surviving pods do not. Instead each rank announces a fresh
    id; rank 0 answers every id it sees under a key only that id names (stale ids get useless
    answers) and waits until all ranks confirm under the new namespace, which no stale process
    can do.
    """
    me = uuid.uuid4().hex
    if rank == 0:
        namespace = f"trainops/round/{uuid.uuid4().hex}"
        answered: dict[int, bytes] = {}
        pending = set(range(1, world))
        deadline = time.monotonic() + timeout
        while pending:
            for peer in sorted(pending):
                key = f"trainops/hello/{peer}"
                if not store.check([key]):
                    continue
                announced = store.get(key)
                if answered.get(peer) != announced:
                    store.set(f"trainops/answer/{announced.decode()}", namespace)
                    answered[peer] = announced
                if store.check([f"{namespace}/joined/{peer}"]):
                    pending.discard(peer)
            if pending:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"ranks {sorted(pending)} never joined the worker round")
                time.sleep(NAMESPACE_POLL_SECONDS)
        return namespace
    store.set(f"trainops/hello/{rank}", me)
    namespace = str(store.get(f"trainops/answer/{me}").decode())  # blocks until rank 0 answers
    store.set(f"{namespace}/joined/{rank}", "1")
    return namespace


def teardown() -> None:
    if dist.is_initialized():
        # Leave together: a rank that destroys its group while a peer is still in a
        # collective (DeepSpeed's CPU shared-memory ops) aborts that peer.
        dist.barrier()
        dist.destroy_process_group()


def barrier(env: DistEnv) -> None:
    if env.distributed:
        dist.barrier()


def all_reduce_sum(env: DistEnv, values: Sequence[float | torch.Tensor]) -> list[float]:
    """Sum a few numbers over all ranks in one collective (float64) and read them on the host.

    A value may be a 0-dim tensor on the device (a step's loss): it joins the collective where
    it is, so the one host sync is the final read. That read waits for every queued kernel: the
    loop calls this only at its sync points (`trainer.cadence`).
    """
    device = env.device if env.distributed and env.backend == "nccl" else torch.device("cpu")
    parts = [
        v.detach().reshape(1).to(device=device, dtype=torch.float64)
        if isinstance(v, torch.Tensor)
        else torch.tensor([v], dtype=torch.float64, device=device)
        for v in values
    ]
    tensor = torch.cat(parts)
    if env.distributed:
        dist.all_reduce(tensor)
    return [float(v) for v in tensor.cpu().tolist()]


def all_gather_str(env: DistEnv, value: str) -> list[str]:
    """Every rank's string (used to compare parameter digests across ranks)."""
    if not env.distributed:
        return [value]
    out: list[object] = [None] * env.world_size
    dist.all_gather_object(out, value)
    return [str(v) for v in out]


def broadcast_object(env: DistEnv, value: T) -> T:
    """Rank 0's `value` on every rank (the other ranks' `value` is ignored).

    For decisions about shared storage that one process must make for all: ranks that each
    read a file on NFS can see different versions of it (attribute caching).
    """
    if not env.distributed:
        return value
    box: list[Any] = [value if env.is_main else None]
    dist.broadcast_object_list(box, src=0)
    out: T = box[0]
    return out
