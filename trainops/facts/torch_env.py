"""The environment variables torch reads, by name: what `torch-env-unknown` checks a training
pod's `TORCH_*` / `PYTORCH_*` variables against.

`torch_env_names.txt` lists every such name the torch 2.13 wheel holds (Python sources, C++
headers, the string tables of its libraries; `tests/facts/torch_env_gen.py` derives it and
`tests/facts/test_torch_env.py` keeps it current). Torch reads a variable only through a
string of its name, so a name missing from that list is one torch cannot read: a misspelling
(`PYTORCH_CUDA_ALOC_CONF`) or a setting that does not exist (`TORCH_DISTRIBUTED_TIMEOUT`;
the collective timeout is `init_process_group(timeout=...)`).

The list is read from the CPU wheel, which lacks the CUDA-only and Apple-only sources
(`ProcessGroupNCCL.cpp`, the MPS backend): in those families (`DEVICE_FAMILIES`) a name is
reported only when it is one edit-distance step from a listed one (`difflib` ratio >= 0.9),
a likely misspelling rather than a name only the GPU build holds.
"""

from __future__ import annotations

import difflib
from functools import cache
from importlib import resources

TORCH_VERSION = "2.13"
PREFIXES = ("TORCH_", "PYTORCH_")
# Variables of the GPU and Apple builds' own sources, which the CPU wheel does not hold.
DEVICE_FAMILIES = (
    "TORCH_NCCL_",
    "PYTORCH_CUDA_",
    "TORCH_CUDNN_",
    "TORCH_CUBLAS",
    "TORCH_BLAS_",
    "TORCH_LINALG_",
    "PYTORCH_MPS_",
    "PYTORCH_ENABLE_MPS",
    "PYTORCH_HIP_",
    "PYTORCH_MIOPEN_",
    "PYTORCH_ROCM_",
    "PYTORCH_TUNABLEOP_",
    "PYTORCH_XPU_",
    "TORCH_XPU_",
)


# An elastic job's agents must not share the rendezvous round's TCPStore with their workers.
# torch 2.13 `torch/distributed/elastic/rendezvous/dynamic_rendezvous.py`,
# `DynamicRendezvousHandler.next_rendezvous`: with sharing on (the default), rank 0's agent
# starts a TCPStore server the first time it is rank 0 (`_create_tcp_store_server`) and every
# agent caches the round's bootstrap info (`_bootstrap_store_info`, MASTER_ADDR/MASTER_PORT
# under the round's `/torch.rendezvous.<run_id>.<round>/` prefix) and rebuilds it only when it
# has none or becomes rank 0 without a server. When a pod is lost and a replacement joins a
# later round, the surviving rank 0 keeps its cached info and never writes the new round's
# keys; the newcomer waits for them until `DistStoreError: wait timeout` (seen with
# `trainops run-local --kill-replica`, docs/run-local.md). With the variable set to "1"
# (`use_agent_store` is false) each round builds its bootstrap info from the round's own
# store, and the job survives the loss of a pod (checked the same way). Sharing is the default
# since torch 2.5 (pytorch/pytorch#128096; the restart failure: pytorch/pytorch#135712).
SHARED_STORE_OFF = ("TORCH_DISABLE_SHARE_RDZV_TCP_STORE", "1")


@cache
def known() -> frozenset[str]:
    """Every `TORCH_*` / `PYTORCH_*` name torch holds."""
    text = resources.files("trainops.facts").joinpath("torch_env_names.txt").read_text("utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def unknown(name: str) -> str | None:
    """Why torch cannot read `name` (with the likely intended name), or None when it can or
    may: a name outside the prefixes, a listed one, or a device family's name not close to
    a listed one."""
    if not name.startswith(PREFIXES) or name in known():
        return None
    close = difflib.get_close_matches(name, sorted(known()), n=1, cutoff=0.9)
    if name.startswith(DEVICE_FAMILIES) and not close:
        return None
    close = close or difflib.get_close_matches(name, sorted(known()), n=1, cutoff=0.85)
    hint = f"did you mean {close[0]}?" if close else "it has no effect"
    return f"torch {TORCH_VERSION} reads no variable {name}: {hint}"
