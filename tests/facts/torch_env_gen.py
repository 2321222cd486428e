"""Derive `trainops/facts/torch_env_names.txt`: every `TORCH_*` / `PYTORCH_*` name torch names
anywhere in the installed wheel (its Python sources, its C++ headers, the string tables of its
shared libraries). A superset of the variables torch reads (a name in a message or a macro is
listed too), so a variable missing from it is one torch 2.13 cannot read: the rule
`torch-env-unknown` says so. The CPU wheel holds no CUDA-only `.cpp`; the CUDA families'
names are judged more leniently for that (`trainops/facts/torch_env.py:DEVICE_FAMILIES`).
`tests/facts/test_torch_env.py` regenerates it and fails when they differ
(`TRAINOPS_UPDATE_GOLDEN=1` rewrites it)."""

from __future__ import annotations

import re
from pathlib import Path

_NAME = re.compile(rb"(?<![A-Za-z0-9_])(?:PYTORCH|TORCH)_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")
_SOURCES = ("*.py", "*.h", "*.hpp", "*.cuh")


def names(torch_dir: Path) -> list[str]:
    """The names, sorted."""
    found: set[bytes] = set()
    for pattern in _SOURCES:
        for path in torch_dir.rglob(pattern):
            found.update(_NAME.findall(path.read_bytes()))
    for path in (torch_dir / "lib").glob("*.so*"):
        found.update(_NAME.findall(path.read_bytes()))
    return sorted(n.decode() for n in found)
