"""Test helpers: load manifests from files or text, run the rules, extract the seeds' YAML."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from tests.tools import SEEDS, require_shared
from trainops.core.findings import Finding
from trainops.core.manifest import Manifest
from trainops.core.yamlio import load_file, load_text
from trainops.jobspec.model import ClusterProfile
from trainops.rules import check

FIXTURES = Path(__file__).parent / "fixtures"


def manifests_from_text(text: str, file: str = "test.yaml") -> list[Manifest]:
    return [Manifest(d.data, file, d) for d in load_text(text, file) if isinstance(d.data, dict)]


def manifests_from_file(path: Path, display: str | None = None) -> list[Manifest]:
    name = display or str(path)
    return [Manifest(d.data, name, d) for d in load_file(path, name) if isinstance(d.data, dict)]


def run(manifests: Sequence[Manifest], cluster: ClusterProfile | None = None) -> list[Finding]:
    return check(list(manifests), cluster)


def rules_of(findings: Sequence[Finding]) -> set[str]:
    return {f.rule for f in findings}


def seed_text(prefix: str) -> str:
    """The seed article `../shared/seeds/<prefix>_*.txt`; skip when absent, fail under CI."""
    matches = sorted(require_shared(SEEDS).glob(f"{prefix}_*.txt"))
    if not matches:
        require_shared(SEEDS / f"{prefix}_*.txt")
    return matches[0].read_text(encoding="utf-8")


_TOP_LEVEL_KEY = re.compile(r"^[A-Za-z]+:( |$)")


def yaml_blocks(text: str) -> list[str]:
    """Kubernetes YAML blocks of an article: from `apiVersion:` to the first prose line."""
    blocks: list[str] = []
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("apiVersion:"):
            if current:
                blocks.append("\n".join(current))
            current = [line]
        elif current is not None:
            if line and not line[0].isspace() and not _TOP_LEVEL_KEY.match(line):
                blocks.append("\n".join(current))
                current = None
            else:
                current.append(line)
    if current:
        blocks.append("\n".join(current))
    return blocks


def json_block(text: str) -> str:
    """The first top-level `{ ... }` JSON block of an article."""
    start = text.index("\n{\n") + 1
    end = text.index("\n}\n", start) + 2
    return text[start:end]
