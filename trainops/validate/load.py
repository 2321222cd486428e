"""Read plain Kubernetes YAML (files or directories) into `Manifest`s, strictly.

Every problem that makes a file unusable (bad YAML, a document that is not a
mapping, no `apiVersion` or `kind`) is collected across all files and raised as
one `InputError`, so the user sees them all at once.

A list (`kind: List`, or a typed list such as `ConfigMapList`, with `items`) is
unwrapped as kubectl does: each item is an object of its own, found at its own
line in the same file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from trainops.core import yamlio
from trainops.core.errors import InputError, Problem
from trainops.core.manifest import Manifest

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
# kustomize's own files describe a build, not an object to validate.
KUSTOMIZE_FILES = frozenset({"kustomization.yaml", "kustomization.yml", "Kustomization"})


def manifest_files(paths: Sequence[Path]) -> list[Path]:
    """Files named on the command line, plus YAML/JSON files found under directories (sorted)."""
    files: list[Path] = []
    problems: list[Problem] = []
    for path in paths:
        if path.is_dir():
            files += sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and p.suffix in MANIFEST_SUFFIXES and p.name not in KUSTOMIZE_FILES
            )
        elif path.is_file():
            files.append(path)
        else:
            problems.append(Problem.whole_file(str(path), "no such file or directory"))
    if problems:
        raise InputError(problems)
    return files


def documents_to_manifests(
    documents: Iterable[yamlio.Document], cluster: str | None = None
) -> tuple[list[Manifest], list[Problem]]:
    """Check each document is a Kubernetes object (mapping with apiVersion and kind)."""
    # One small object per document, next to millions of kept YAML nodes: without
    # the pause, a full collection rescans them all (40x slower on 5,000 documents).
    with yamlio.gc_paused():
        return _documents_to_manifests(documents, cluster)


def _documents_to_manifests(
    documents: Iterable[yamlio.Document], cluster: str | None
) -> tuple[list[Manifest], list[Problem]]:
    manifests: list[Manifest] = []
    problems: list[Problem] = []
    for doc in documents:
        _add_object(doc, f"document {doc.index + 1}", cluster, manifests, problems)
    return manifests, problems


def _is_list(data: dict[str, Any]) -> bool:
    kind = data.get("kind")
    return isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list)


def _add_object(
    doc: yamlio.Document,
    what: str,
    cluster: str | None,
    manifests: list[Manifest],
    problems: list[Problem],
) -> None:
    data = doc.data
    if not isinstance(data, dict):
        problems.append(
            Problem(
                doc.file,
                doc.line,
                None,
                f"{what} is a {type(data).__name__}, not a Kubernetes object (a mapping with"
                " apiVersion, kind and metadata)",
            )
        )
        return
    missing = [k for k in ("apiVersion", "kind") if not isinstance(data.get(k), str) or not data[k]]
    if missing:
        names = " and ".join(f"`{k}`" for k in missing)
        problems.append(
            Problem(doc.file, doc.line, None, f"object has no {names}: every manifest needs both")
        )
        return
    if _is_list(data):
        # `ConfigMapList` items may leave out what the list's own kind says (as the API
        # server's list responses do); a plain `List` says nothing about its items.
        item_kind = data["kind"][: -len("List")]
        for index, item in enumerate(data["items"]):
            if item_kind and isinstance(item, dict):
                filled = {"apiVersion": data["apiVersion"], "kind": item_kind, **item}
            else:
                filled = item
            # The data was built from this very node tree, so the item's node is there.
            part = doc.part(["items", index], filled) or dataclasses.replace(doc, data=filled)
            _add_object(part, f"{data['kind']} item {index + 1}", cluster, manifests, problems)
        return
    manifests.append(Manifest(data=data, file=doc.file, document=doc, cluster=cluster))


def load_manifests(paths: Sequence[Path], cluster: str | None = None) -> list[Manifest]:
    """Every object in every file under `paths`; raise InputError listing all bad input."""
    manifests: list[Manifest] = []
    problems: list[Problem] = []
    for path in manifest_files(paths):
        try:
            documents = yamlio.load_file(path, as_kubernetes=True)
        except InputError as err:
            problems += err.problems
            continue
        found, bad = documents_to_manifests(documents, cluster)
        manifests += found
        problems += bad
    if problems:
        raise InputError(problems)
    return manifests
