"""The spec folders read: one mapping per file, every file of a folder (the job specs read
before any is built, for `--changed`), the same name defined twice, and files named like a
spec but for the case of the suffix."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from trainops.core.errors import InputError, Problem
from trainops.core.limits import inside
from trainops.core.yamlio import Document, load_file
from trainops.jobspec.problems import Collector

T = TypeVar("T")


EMPTY_FILE = (
    "the file holds no YAML document (it is empty, or only comments): write the spec here,"
    " or delete the file"
)


def single_mapping(
    path: Path, root: Path, confined: bool = False, display: str | None = None
) -> Document | list[Problem]:
    """The file's one document, which must be a mapping; else the problems. `confined`: the
    caller knows the file lies inside `root` (see `read_all`); `display`: its name as shown,
    when the caller has it (default: relative to `root`)."""
    if display is None:
        display = _shown(path, root)
    if not confined and not inside(path, root):
        message = "a symlink to a file outside the repository: put the file itself here"
        return [Problem.whole_file(display, message)]
    try:
        docs = load_file(path, display)
    except InputError as err:
        return err.problems
    if not docs:
        return [Problem.whole_file(display, EMPTY_FILE)]
    if len(docs) != 1:
        found = len(docs)
        message = (
            f"expected exactly one YAML document, found {found}: one spec per file, each named"
            " after its `name` (`---` starts another document)"
        )
        return [Problem.whole_file(display, message)]
    if not isinstance(docs[0].data, dict):
        return [
            Problem(display, docs[0].line, 1, "expected a mapping (key: value) at the top level")
        ]
    return docs[0]


def _shown(path: Path, root: Path) -> str:
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def read_all(
    directory: Path, root: Path, problems: list[Problem]
) -> list[Document | list[Problem]]:
    """Every YAML file of `directory`, read: its document, or the problems reading it met
    (`problems` gets those of the folder itself)."""
    # A file that is not a symlink lies where its folder resolves to: resolving the folder
    # once spares resolving each of 5,000 job specs component by component.
    folder_inside = directory.is_dir() and inside(directory, root)
    entries = _spec_entries(directory)
    shown = _shown(directory, root)
    problems += _misnamed(entries, shown)
    return [
        single_mapping(
            Path(entry.path),
            root,
            confined=folder_inside and not entry.is_symlink(),
            display=f"{shown}/{entry.name}",
        )
        for entry in entries
    ]


def build_all(
    read: list[Document | list[Problem]],
    build: Callable[[Document, Collector], T | None],
    problems: list[Problem],
) -> list[tuple[T, Document]]:
    """Build an object from every document `read_all` read, collecting every problem in the
    files' order."""
    built: list[tuple[T, Document]] = []
    for doc in read:
        if isinstance(doc, list):
            problems += doc
            continue
        out = Collector(doc)
        item = build(doc, out)
        problems += out.problems
        if item is not None:
            built.append((item, doc))
    return built


def load_all(
    directory: Path,
    root: Path,
    build: Callable[[Document, Collector], T | None],
    problems: list[Problem],
) -> list[tuple[T, Document]]:
    """Build an object from every YAML file of `directory`, collecting every problem."""
    return build_all(read_all(directory, root, problems), build, problems)


def duplicates(what: str, loaded: list[tuple[Any, Document]]) -> list[Problem]:
    """Two files defining one name (`x.yaml` and `x.yml`): refuse both rather than let the
    one read later silently overwrite the other's output."""
    by_name: dict[str, list[Document]] = {}
    for item, doc in loaded:
        by_name.setdefault(item.name, []).append(doc)
    problems = []
    for name, docs in sorted(by_name.items()):
        for doc in docs if len(docs) > 1 else ():
            others = ", ".join(f"{o.file}:{o.position(['name'])[0]}" for o in docs if o is not doc)
            line, column = doc.position(["name"])
            problems.append(
                Problem(
                    doc.file,
                    line,
                    column,
                    f"{what} `{name}` is also defined in {others}: keep one file per {what}",
                )
            )
    return problems


SPEC_SUFFIXES = frozenset({".yaml", ".yml"})


def _spec_entries(directory: Path) -> list[os.DirEntry[str]]:
    """The folder's files named like a spec, `x.YAML` too (read, so that what else is wrong
    with it is said, and refused by name: `_misnamed`), by name. One `os.scandir`: the names
    and symlink flags of 5,000 specs without a `stat` or a `Path` each."""
    try:
        with os.scandir(directory) as found:
            entries = [e for e in found if os.path.splitext(e.name)[1].lower() in SPEC_SUFFIXES]
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(entries, key=lambda entry: entry.name)


def yaml_files(directory: Path) -> Iterator[Path]:
    """The spec files of `directory` (see `_spec_entries`), by name."""
    for entry in _spec_entries(directory):
        yield Path(entry.path)


def _misnamed(entries: list[os.DirEntry[str]], shown: str) -> list[Problem]:
    """Specs named but for the letters' case (`x.YAML`): skipped, the job would leave the
    fleet without a word; a `.json` file may be a model config a job's `model.config` names,
    so it is left alone."""
    problems = []
    for entry in entries:
        stem, suffix = os.path.splitext(entry.name)
        if suffix in SPEC_SUFFIXES:
            continue
        message = (
            "a spec's file name ends `.yaml` or `.yml` in lower case: rename it to"
            f" `{stem}{suffix.lower()}`"
        )
        problems.append(Problem.whole_file(f"{shown}/{entry.name}", message))
    return problems
