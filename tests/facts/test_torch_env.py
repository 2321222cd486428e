"""`trainops/facts/torch_env_names.txt` is what the installed torch names (regenerated here;
`TRAINOPS_UPDATE_GOLDEN=1` rewrites it), and `unknown` reads it as documented."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.facts import torch_env_gen
from tests.tools import require_module
from trainops.facts import torch_env

NAMES = Path(torch_env.__file__).with_name("torch_env_names.txt")


@pytest.mark.slow
def test_the_names_are_the_installed_torchs() -> None:
    torch = require_module("torch")
    assert torch.__version__.startswith(torch_env.TORCH_VERSION + ".")
    names = torch_env_gen.names(Path(torch.__file__).parent)
    header = NAMES.read_text(encoding="utf-8").splitlines()[0]
    if os.environ.get("TRAINOPS_UPDATE_GOLDEN") == "1":
        NAMES.write_text("\n".join([header, *names]) + "\n", encoding="utf-8")
    assert sorted(torch_env.known()) == names


def test_torch_reads_these_and_not_those() -> None:
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "TORCH_DISTRIBUTED_DEBUG", "TORCH_HOME"):
        assert torch_env.unknown(name) is None, name
    assert torch_env.unknown("NCCL_DEBUG") is None  # not torch's prefix
    assert "PYTORCH_CUDA_ALLOC_CONF?" in str(torch_env.unknown("PYTORCH_CUDA_ALOC_CONF"))
    assert "no effect" in str(torch_env.unknown("TORCH_DISTRIBUTED_TIMEOUT"))


def test_gpu_build_families_are_judged_by_closeness_only() -> None:
    """The CPU wheel lacks ProcessGroupNCCL.cpp: a TORCH_NCCL_* name it does not hold may be
    the GPU build's; only a near miss of a listed one is reported."""
    assert torch_env.unknown("TORCH_NCCL_USE_COMM_NONBLOCKING") is None
    assert "TORCH_NCCL_ASYNC_ERROR_HANDLING" in str(
        torch_env.unknown("TORCH_NCCL_ASYNC_ERROR_HANDLNG")
    )
