"""docs/consumers.md read as data: per emitted kind, field patterns with the consumer that reads
each and the test that checks it (or why none is needed); and the leaf fields of built
objects, to match against it (test_consumer_inventory.py).

A pattern is dotted: `*` is one key (a map key, a replica type), `**` any number of keys,
`[]` a list item, `["a.b/c"]` a key holding dots or slashes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.tools import REPO

DOC = REPO / "docs" / "consumers.md"
Segments = tuple[str, ...]
_TOKEN = re.compile(r'\["([^"]+)"\]|\[\]|([^.\[\]]+)')


def segments(pattern: str) -> Segments:
    """`a.b[].c["x.y/z"]` -> ("a", "b", "[]", "c", "x.y/z")."""
    out = []
    for m in _TOKEN.finditer(pattern):
        out.append(m.group(1) or m.group(2) or "[]")
    return tuple(out)


def matches(pattern: Segments, path: Segments) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        return any(matches(rest, path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    if (head == "*" and path[0] != "[]") or head == path[0]:
        return matches(rest, path[1:])
    return False


@dataclass(frozen=True)
class Entry:
    kinds: tuple[str, ...]
    """`group/Kind` (core: `/Kind`) this row's table is about."""
    field: str
    consumer: str
    checked_by: str
    line: int

    @property
    def pattern(self) -> Segments:
        return segments(self.field)

    @property
    def tests(self) -> list[tuple[Path, str]]:
        """(test file, test function) named in `checked_by` (`tests/x.py::test_y`)."""
        found = re.findall(r"(tests/[\w/]+\.py)::(\w+)", self.checked_by)
        return [(REPO / path, name) for path, name in found]


def entries(text: str | None = None) -> list[Entry]:
    """Every row of every `### group/Kind, ...` table in docs/consumers.md."""
    text = DOC.read_text(encoding="utf-8") if text is None else text
    kinds: tuple[str, ...] = ()
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("### "):
            kinds = tuple(k.strip().strip("`") for k in line[4:].split(","))
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if kinds and len(cells) == 3 and cells[0].startswith("`") and cells[0].endswith("`"):
            out.append(Entry(kinds, cells[0].strip("`"), cells[1], cells[2], number))
    return out


def leaves(node: Any, at: Segments = ()) -> Iterator[Segments]:
    """The leaf paths of an object (an empty map or list is a leaf)."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from leaves(value, (*at, str(key)))
    elif isinstance(node, list) and node:
        for value in node:
            yield from leaves(value, (*at, "[]"))
    else:
        yield at


HELM_VALUES = "helm/kube-prometheus-stack values"
"""The kind of `gitops/monitoring/<cluster>.yaml`: chart values, not a Kubernetes object."""


def kind_of(obj: dict[str, Any]) -> str:
    if "apiVersion" not in obj:
        return HELM_VALUES
    return f"{obj['apiVersion'].rpartition('/')[0]}/{obj['kind']}"
