"""Shared fixtures: schema stores are compiled once per test session (they are the slow part)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tools import require_upstream
from trainops.validate.crd import load_crd_dir
from trainops.validate.schemas import SchemaStore


@pytest.fixture(scope="session")
def ours() -> SchemaStore:
    return SchemaStore()


@pytest.fixture(scope="session")
def upstream_crds() -> dict[tuple[str, str, str], dict[str, Any]]:
    return load_crd_dir(require_upstream() / "crds")


@pytest.fixture(scope="session")
def converted(upstream_crds: dict[tuple[str, str, str], dict[str, Any]]) -> SchemaStore:
    return SchemaStore(crd_schemas=upstream_crds)


@pytest.fixture(scope="session")
def upstream() -> Path:
    return require_upstream()
