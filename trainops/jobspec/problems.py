"""Reading spec files and saying what is wrong with them: one mapping per file, the JSON
Schema's verdicts as `file:line:column: message` with a did-you-mean for unknown keys, and
the problems of every file collected before anything is raised."""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from trainops.core.errors import Addition, InputError, Problem
from trainops.core.limits import inside
from trainops.core.yamlio import Document, load_file
from trainops.jobspec import schemas

if TYPE_CHECKING:
    import jsonschema

T = TypeVar("T")


def dotted(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


class Collector:
    """Problems of one file, positioned through its document."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.problems: list[Problem] = []

    def add(
        self, path: Sequence[str | int], message: str, additions: tuple[Addition, ...] = ()
    ) -> None:
        line, column = self.doc.position(path)
        self.problems.append(Problem(self.doc.file, line, column, message, additions))


def schema_problems(doc: Document, schema_name: str, out: Collector) -> None:
    if schemas.surely_valid(schema_name, doc.data):
        return
    report_errors(schemas.validator(schema_name).iter_errors(doc.data), out)


def report_errors(
    found: Iterable[jsonschema.ValidationError],
    out: Collector,
    prefix: Sequence[str | int] = (),
) -> None:
    """JSON Schema errors as problems; `prefix`: where the validated value sits in the file."""
    errors = sorted(found, key=lambda e: list(e.path))
    # (mapping path, key) that a did-you-mean already names: its "required" error is noise.
    suggested: set[tuple[tuple[str | int, ...], str]] = set()
    for err in errors:
        path = [*prefix, *err.absolute_path]
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            allowed = sorted(err.schema.get("properties", {}))
            for key in err.instance:
                if key in allowed:
                    continue
                hint = difflib.get_close_matches(str(key), allowed, n=1)
                did_you_mean = f"; did you mean `{hint[0]}`?" if hint else ""
                suggested.update((tuple(path), h) for h in hint)
                where = f" in `{dotted(path)}`" if path else ""
                out.add(
                    [*path, key],
                    f"unknown key `{key}`{where}{did_you_mean} (allowed: {', '.join(allowed)})",
                )
    for err in errors:
        path = [*prefix, *err.absolute_path]
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            continue
        if err.validator == "required":
            missing = [k for k in err.validator_value if k not in err.instance]
            missing = [k for k in missing if (tuple(path), k) not in suggested]
            if missing:
                where = f" in `{dotted(path)}`" if path else ""
                keys = ", ".join(f"`{k}`" for k in missing)
                out.add(path, f"missing required key {keys}{where}")
        else:
            value = json.dumps(err.instance)
            if len(value) > 60:
                value = value[:57] + "..."
            out.add(path, f"`{dotted(path)}` {_explain(err)}, got {value}{_nearest(err)}")


def _nearest(err: jsonschema.ValidationError) -> str:
    """`; did you mean "pytorch"?` for a string not one of an enum's values, else nothing."""
    if err.validator != "enum" or not isinstance(err.instance, str):
        return ""
    choices = [str(v) for v in err.validator_value]
    near = difflib.get_close_matches(err.instance, choices, n=1, cutoff=0.6)
    return f"; did you mean {json.dumps(near[0])}?" if near else ""


def _explain(err: jsonschema.ValidationError) -> str:
    schema = err.schema if isinstance(err.schema, dict) else {}
    if err.validator == "enum":
        return "must be one of " + ", ".join(json.dumps(v) for v in err.validator_value)
    if err.validator == "const":
        return f"must be {json.dumps(err.validator_value)}"
    if err.validator == "pattern":
        desc = schema.get("description")
        return f"must match {err.validator_value}" + (f" ({desc})" if desc else "")
    if err.validator == "not":
        desc = schema.get("description")
        return "is not allowed" + (f" ({desc})" if desc else "")
    if err.validator == "type":
        return f"must be of type {err.validator_value}"
    if err.validator in {"minimum", "maximum", "minItems", "minLength", "minProperties"}:
        return f"must satisfy {err.validator} {err.validator_value}"
    return "is invalid: " + str(err.message)


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
    if len(docs) != 1:
        found = len(docs)
        message = f"expected exactly one YAML document, found {found}"
        return [Problem.whole_file(display, message)]
    if not isinstance(docs[0].data, dict):
        return [
            Problem(display, docs[0].line, 1, "expected a mapping (key: value) at the top level")
        ]
    return docs[0]


def load_all(
    directory: Path,
    root: Path,
    build: Callable[[Document, Collector], T | None],
    problems: list[Problem],
) -> list[tuple[T, Document]]:
    """Build an object from every YAML file of `directory`, collecting every problem."""
    built: list[tuple[T, Document]] = []
    # A file that is not a symlink lies where its folder resolves to: resolving the folder
    # once spares resolving each of 5,000 job specs component by component.
    folder_inside = directory.is_dir() and inside(directory, root)
    for path in yaml_files(directory):
        doc = single_mapping(path, root, confined=folder_inside and not path.is_symlink())
        if isinstance(doc, list):
            problems += doc
            continue
        out = Collector(doc)
        item = build(doc, out)
        problems += out.problems
        if item is not None:
            built.append((item, doc))
    return built


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


def yaml_files(directory: Path) -> Iterator[Path]:
    if directory.is_dir():
        yield from sorted(p for p in directory.iterdir() if p.suffix in {".yaml", ".yml"})
