"""The spec folders read: one mapping per file, every file of a folder (the job specs read
before any is built, for `--changed`), the same name defined twice, and files named like a
spec but for the case of the suffix."""

from __future__ import annotations

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


def single_mapping(path: Path, root: Path, confined: bool = False) -> Document | list[Problem]:
    """The file's one document, which must be a mapping; else the problems. `confined`: the
    caller knows the file lies inside `root` (see `load_all`)."""
    display = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
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


def read_all(
    directory: Path, root: Path, problems: list[Problem]
) -> list[Document | list[Problem]]:
    """Every YAML file of `directory`, read: its document, or the problems reading it met
    (`problems` gets those of the folder itself)."""
    # A file that is not a symlink lies where its folder resolves to: resolving the folder
    # once spares resolving each of 5,000 job specs component by component.
    folder_inside = directory.is_dir() and inside(directory, root)
    problems += misnamed_specs(directory, root)
    return [
        single_mapping(path, root, confined=folder_inside and not path.is_symlink())
        for path in yaml_files(directory)
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


def yaml_files(directory: Path) -> Iterator[Path]:
    if directory.is_dir():
        # `x.YAML` too: read, so that what else is wrong with it is said, and refused by name
        # (`misnamed_specs`).
        yield from sorted(p for p in directory.iterdir() if p.suffix.lower() in SPEC_SUFFIXES)


def misnamed_specs(directory: Path, root: Path) -> list[Problem]:
    """Specs of `directory` named but for the letters' case (`x.YAML`): skipped, the job
    would leave the fleet without a word; a `.json` file may be a model config a job's
    `model.config` names, so it is left alone."""
    if not directory.is_dir():
        return []
    problems = []
    for path in sorted(directory.iterdir()):
        suffix = path.suffix
        if suffix in SPEC_SUFFIXES or suffix.lower() not in SPEC_SUFFIXES:
            continue
        display = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        message = (
            "a spec's file name ends `.yaml` or `.yml` in lower case: rename it to"
            f" `{path.stem}{suffix.lower()}`"
        )
        problems.append(Problem.whole_file(display, message))
    return problems
