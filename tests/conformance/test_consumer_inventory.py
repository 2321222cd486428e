"""The consumer-field inventory (docs/consumers.md, issue 33 "Port fidelity"): every field of
every object built from the shipped, rich and variety repositories has a row naming who reads
it and the test that checks it (or why none is needed); no row is stale; every test named
exists. Fields an object gains (a new label, a new setting) fail here until documented."""

from __future__ import annotations

import functools
import re
from typing import Any

import pytest

from tests.conformance import inventory
from tests.conformance.gitops_repos import REPOSITORIES, rendered
from tests.tools import require_kustomize

pytestmark = pytest.mark.slow


@functools.cache
def _built() -> list[dict[str, Any]]:
    """Every object the GitOps tools receive, from every test repository."""
    require_kustomize()
    out = []
    for label in sorted(REPOSITORIES):
        repo = rendered(label)
        out += [doc for docs in repo.gitops.values() for doc in docs]
        for overlay in sorted((repo.root / "overlays").iterdir()):
            if overlay.is_dir():
                out += repo.build(f"overlays/{overlay.name}")
    return out


def _entry_for(kind: str, path: inventory.Segments) -> inventory.Entry | None:
    return next(
        (e for e in inventory.entries() if kind in e.kinds and inventory.matches(e.pattern, path)),
        None,
    )


def test_every_emitted_field_has_an_entry() -> None:
    missing = sorted(
        {
            f"{inventory.kind_of(obj)}: {'.'.join(path)}"
            for obj in _built()
            for path in inventory.leaves(obj)
            if _entry_for(inventory.kind_of(obj), path) is None
        }
    )
    assert not missing, "fields no row of docs/consumers.md covers:\n" + "\n".join(missing)


def test_no_entry_is_stale() -> None:
    """A row that matches no built field of its kinds describes nothing we emit."""
    fields = {(inventory.kind_of(o), p) for o in _built() for p in inventory.leaves(o)}
    stale = [
        f"docs/consumers.md:{e.line}: `{e.field}`"
        for e in inventory.entries()
        if not any(k in e.kinds and inventory.matches(e.pattern, p) for k, p in fields)
    ]
    assert not stale


def test_every_entry_names_a_test_that_exists_or_a_reason() -> None:
    problems = []
    for entry in inventory.entries():
        tests = entry.tests
        if not tests and not entry.checked_by.startswith("reason"):
            problems.append(f"line {entry.line}: neither a test nor a reason")
        for path, name in tests:
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            if not re.search(rf"^def {name}\(", text, re.M):
                problems.append(f"line {entry.line}: {path.name}::{name} does not exist")
    assert not problems


def test_the_pattern_reader_bites() -> None:
    """`*` is one key, `**` any, `[]` a list item, quoted keys keep their dots."""
    seg = inventory.segments
    assert seg('metadata.labels["a.b/c"]') == ("metadata", "labels", "a.b/c")
    assert inventory.matches(
        seg("spec.*.*.replicas"), ("spec", "pytorchReplicaSpecs", "Worker", "replicas")
    )
    assert not inventory.matches(seg("spec.*.replicas"), ("spec", "x", "y", "replicas"))
    assert inventory.matches(seg("**.containers[].image"), ("a", "b", "containers", "[]", "image"))
    assert not inventory.matches(seg("a.*"), ("a", "[]"))
    assert len(inventory.entries()) > 50
