"""The repository as every command loads it: the spec checks, plus the policy rules a
cluster profile's `policy:` may name (known here, above the spec layer)."""

from __future__ import annotations

from pathlib import Path

from trainops.rules import RULES_BY_SLUG
from trainops.spec.load import load_repository
from trainops.spec.model import Repository


def load(root: Path) -> Repository:
    return load_repository(root, frozenset(RULES_BY_SLUG))
