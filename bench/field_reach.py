"""How many modules one field crosses (issue 27: "a field crosses at most 6 modules").

A module references a field when its code (not its docstrings or comments) names it: the
YAML key as a string (`"maxReplicas"`, `"transport"`), the spec model's attribute
(`.max_replicas`, `.transport`, read on `elastic` / `network`), a keyword of that name, or the
model field's declaration. A module that reads the value through a shared function
(`elastic_range`, `Network.is_rdma`) does not reference the field: that is the point.
Modules are the Python files of `trainops/` and `trainer/`, at a git revision or in the
working tree.

Run: `python -m bench.field_reach [--rev REV]` from the repository root (docs/development.md
holds the before/after table).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("trainops", "trainer")


@dataclass(frozen=True)
class Field:
    name: str
    keys: frozenset[str]
    """The field's YAML keys, as string constants (spec and built object)."""
    attributes: frozenset[str]
    """The model's attribute or keyword names for it."""
    owners: frozenset[str]
    """What the attribute is read on (`x.network.transport`, `net.transport`): `nccl_log.transport`
    is another thing's."""


FIELDS = (
    Field(
        "elastic.maxReplicas",
        frozenset({"maxReplicas"}),
        frozenset({"max_replicas"}),
        frozenset({"elastic"}),
    ),
    Field(
        "network.transport",
        frozenset({"transport"}),
        frozenset({"transport"}),
        frozenset({"network", "net"}),
    ),
)


def _owner(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def sources(rev: str | None) -> Iterator[tuple[str, str]]:
    """(path, text) of every Python module of the packages, at `rev` or in the working tree."""
    if rev is None:
        for package in PACKAGES:
            for path in sorted((REPO / package).rglob("*.py")):
                yield str(path.relative_to(REPO)), path.read_text(encoding="utf-8")
        return
    listing = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, *PACKAGES],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in sorted(n for n in listing if n.endswith(".py")):
        text = subprocess.run(
            ["git", "show", f"{rev}:{name}"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
        yield name, text


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function, attribute)."""
    found: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for stmt in body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                found.add(id(stmt.value))
    return found


def references(text: str, field: Field) -> bool:
    tree = ast.parse(text)
    docstrings = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value in field.keys and id(node) not in docstrings:
                return True
        elif isinstance(node, ast.Attribute) and node.attr in field.attributes:
            if _owner(node.value) in field.owners:
                return True
        elif isinstance(node, ast.keyword) and node.arg in field.attributes:
            return True
        elif (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id in field.attributes
        ):
            return True  # the model's field itself
    return False


def reach(rev: str | None) -> dict[str, list[str]]:
    modules = list(sources(rev))
    return {f.name: [path for path, text in modules if references(text, f)] for f in FIELDS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision (default: the working tree)")
    args = parser.parse_args(argv)
    for name, paths in reach(args.rev).items():
        print(f"{name}: {len(paths)} modules")
        for path in paths:
            print(f"  {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
