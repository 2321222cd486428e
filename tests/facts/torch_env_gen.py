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

# `TORCH_...` first: a pattern that starts with a literal is found by a fast scan; one that
# starts with a look-behind and an alternation is tried at every byte of ~1 GB of libraries
# (8.4 s -> 0.9 s, the same names).
_TORCH_NAME = re.compile(rb"TORCH_[A-Z0-9_]*[A-Z0-9](?![A-Za-z0-9_])")
_WORD = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_SOURCES = ("*.py", "*.h", "*.hpp", "*.cuh")


def _scan(data: bytes, found: set[bytes]) -> None:
    """Add each whole-word `TORCH_*` or `PYTORCH_*` name in `data` to `found`."""
    for match in _TORCH_NAME.finditer(data):
        start = match.start()
        if start >= 2 and data[start - 2 : start] == b"PY":
            start -= 2
        if start == 0 or data[start - 1] not in _WORD:
            found.add(data[start : match.end()])


def names(torch_dir: Path) -> list[str]:
    """The names, sorted."""
    found: set[bytes] = set()
    for pattern in _SOURCES:
        for path in torch_dir.rglob(pattern):
            _scan(path.read_bytes(), found)
    for path in (torch_dir / "lib").glob("*.so*"):
        _scan(path.read_bytes(), found)
    return sorted(n.decode() for n in found)
