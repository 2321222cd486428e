"""Saying what is wrong with a spec: the JSON Schema's verdicts as `file:line:column:
message` with a did-you-mean for unknown keys, and the problems of every file collected before
anything is raised (one mistake told once across clusters). Reading the files:
`trainops.jobspec.spec_files`."""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from trainops.core.errors import Addition, Problem
from trainops.core.yamlio import Document
from trainops.facts.kubeflow import TRAINING_JOB_KINDS
from trainops.jobspec import schemas
from trainops.jobspec.key_hints import contained, renamed

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
        problem = Problem(self.doc.file, line, column, message, additions)
        if problem not in self.problems:  # a schema's branches can word one mistake alike
            self.problems.append(problem)


# Each spec kind and the folder it is read from.
SPEC_FOLDERS = {"TrainingJob": "jobs/", "ClusterProfile": "clusters/"}


def _wrong_kind(doc: Document, schema_name: str) -> str | None:
    """Why a document of another kind is in this folder (a profile saved in jobs/, a Kubeflow
    manifest dropped there), said once instead of as every key the schema does not know."""
    wanted = schemas.schema(schema_name).get("properties", {}).get("kind", {}).get("const")
    kind = doc.data.get("kind")
    if wanted is None or not isinstance(kind, str) or kind == wanted:
        return None
    here = SPEC_FOLDERS.get(wanted, "")
    if kind in SPEC_FOLDERS:
        return f"`kind: {kind}` belongs in {SPEC_FOLDERS[kind]}: {here} holds `kind: {wanted}`"
    if kind in {k.kind for k in TRAINING_JOB_KINDS}:
        return (
            f"`kind: {kind}` is a Kubeflow manifest, not a `{wanted}`: `trainops import FILE`"
            f" writes the job spec from it (keep the manifest out of {here})"
        )
    if difflib.get_close_matches(kind, [wanted], n=1, cutoff=0.6):
        return None  # a misspelt kind: the schema's `must be` says it
    return f"`kind: {kind}` is not a `{wanted}`: {here} holds `kind: {wanted}` specs only"


def schema_problems(doc: Document, schema_name: str, out: Collector) -> None:
    if schemas.surely_valid(schema_name, doc.data):
        return
    wrong = _wrong_kind(doc, schema_name)
    if wrong:
        out.add(["kind"], wrong)
        return
    places = key_places(schema_name)
    report_errors(schemas.validator(schema_name).iter_errors(doc.data), out, places=places)


@functools.cache
def key_places(schema_name: str) -> dict[str, tuple[str, ...]]:
    """Each key the schema allows -> the mappings that hold it (`targets[]`, `volumes.<name>`),
    for a key written at the wrong indentation: where it belongs is the fix to name."""
    root = schemas.schema(schema_name)
    found: dict[str, set[str]] = {}

    def walk(node: Any, where: str, refs: frozenset[str]) -> None:
        if not isinstance(node, dict):
            return
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref not in refs:
            walk(root.get("$defs", {}).get(ref.removeprefix("#/$defs/")), where, refs | {ref})
        for key, sub in (node.get("properties") or {}).items():
            found.setdefault(key, set()).add(where)
            walk(sub, f"{where}.{key}" if where else key, refs)
        walk(node.get("items"), f"{where}[]", refs)
        walk(node.get("additionalProperties"), f"{where}.<name>" if where else "<name>", refs)
        for option in ("anyOf", "oneOf", "allOf"):
            for sub in node.get(option) or ():
                walk(sub, where, refs)

    walk(root, "", frozenset())
    return {key: tuple(sorted(where)) for key, where in found.items()}


def _schema_path(path: Sequence[str | int]) -> str:
    """A data path as `key_places` writes places: list indexes as `[]`."""
    return dotted([p if isinstance(p, str) else 0 for p in path]).replace("[0]", "[]")


def _unknown_key(
    key: str,
    path: Sequence[str | int],
    err: jsonschema.ValidationError,
    places: dict[str, tuple[str, ...]],
) -> tuple[str, str | None]:
    """The message for an unknown key, and the key it stands for in this mapping, if any."""
    properties = err.schema.get("properties", {})
    allowed = sorted(properties)
    required = err.schema.get("required", ())
    missing = [k for k in required if k not in err.instance]
    where = f" in `{dotted(path)}`" if path else ""
    listed = f" (allowed: {', '.join(allowed)})"
    hint = renamed(str(key), missing) or next(
        iter(difflib.get_close_matches(str(key), allowed, n=1)), None
    )
    here = _schema_path(path) if path else ""
    # Nearest first: inside this mapping, then the shallowest.
    elsewhere = sorted(
        (p for p in places.get(str(key), ()) if p != here),
        key=lambda p: (not p.startswith(here), p.count(".") + p.count("[")),
    )
    if hint is None and elsewhere:
        belongs = " or ".join(f"under `{p}`" if p else "at the top level" for p in elsewhere[:2])
        return (
            f"unknown key `{key}`{where}: it belongs {belongs}; check its indentation" + listed,
            None,
        )
    hint = hint or contained(str(key), allowed)
    did_you_mean = f"; did you mean `{hint}`?" if hint else ""
    return f"unknown key `{key}`{where}{did_you_mean}{listed}", hint


def report_errors(
    found: Iterable[jsonschema.ValidationError],
    out: Collector,
    prefix: Sequence[str | int] = (),
    places: dict[str, tuple[str, ...]] | None = None,
) -> None:
    """JSON Schema errors as problems; `prefix`: where the validated value sits in the file;
    `places`: where each key of the schema belongs (`key_places`), for misplaced keys."""
    errors = sorted(found, key=lambda e: list(e.path))
    # (mapping path, key) that a did-you-mean already names: its "required" error is noise.
    suggested: set[tuple[tuple[str | int, ...], str]] = set()
    # Keys written in the wrong mapping: their parent's "required" error is the same mistake.
    misplaced: set[str] = set()
    for err in errors:
        path = [*prefix, *err.absolute_path]
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            allowed = err.schema.get("properties", {})
            for key in err.instance:
                if key in allowed:
                    continue
                message, hint = _unknown_key(str(key), path, err, places or {})
                if hint:
                    suggested.add((tuple(path), hint))
                elif (places or {}).get(str(key)):
                    misplaced.add(str(key))
                out.add([*path, key], message)
    for err in errors:
        path = [*prefix, *err.absolute_path]
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            continue
        if err.validator == "required":
            missing = [k for k in err.validator_value if k not in err.instance]
            missing = [
                k for k in missing if (tuple(path), k) not in suggested and k not in misplaced
            ]
            if missing:
                where = f" in `{dotted(path)}`" if path else ""
                keys = ", ".join(f"`{k}`" for k in missing)
                out.add(path, f"missing required key {keys}{where}")
        else:
            value = json.dumps(err.instance)
            if len(value) > 60:
                value = value[:57] + "..."
            hint = _nearest(err) or _quoting(err, out.doc.scalar_text(path))
            out.add(path, f"`{dotted(path)}` {_explain(err)}, got {value}{hint}")


def _quoting(err: jsonschema.ValidationError, written: str | None) -> str:
    """What the quotes change, for a type error they cause: `kubernetesVersion: 1.30` is the
    number 1.3 to YAML (quote it), `replicas: "4"` a string (drop the quotes)."""
    if err.validator != "type" or written is None:
        return ""
    wanted = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
    if "integer" in wanted and isinstance(err.instance, float) and err.instance.is_integer():
        return f"; write a whole number: {int(err.instance)}"
    if "string" in wanted and isinstance(err.instance, (bool, int, float)):
        what = "a boolean" if isinstance(err.instance, bool) else "a number"
        return f': YAML reads `{written}` as {what}; write it in quotes, "{written}"'
    if isinstance(err.instance, str) and "#" in err.instance:
        return "; a comment needs a space before its `#` (`4 # four`)"
    if isinstance(err.instance, str) and {"integer", "number", "boolean"} & set(wanted):
        try:
            typed = json.loads(err.instance.strip().lower())
        except ValueError:
            return ""
        fits = {
            "boolean": isinstance(typed, bool),
            "integer": isinstance(typed, int) and not isinstance(typed, bool),
            "number": isinstance(typed, (int, float)) and not isinstance(typed, bool),
        }
        if any(fits.get(w, False) for w in wanted):
            return f"; write it without quotes: {err.instance.strip().lower()}"
    return ""


def _nearest(err: jsonschema.ValidationError) -> str:
    """`; did you mean "pytorch"?` for a string not one of an enum's values, else nothing."""
    if err.validator != "enum" or not isinstance(err.instance, str):
        return ""
    choices = [str(v) for v in err.validator_value]
    near = difflib.get_close_matches(err.instance, choices, n=1, cutoff=0.6)
    if near and near[0] == err.instance:  # `zeroStage: "3"`: the quotes made it a string
        return f"; write it without quotes: {err.instance}"
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


def merge_per_cluster(problems: list[Problem], clusters: Sequence[str]) -> list[Problem]:
    """One problem for one mistake: the same message at the same place for several target
    clusters (`DeepSpeed config invalid on `a`: ...`, then on `b`) becomes one naming them all:
    the first's message, then `(the same on `b`)`."""
    merged: list[Problem] = []
    named: dict[tuple[int | None, int | None, str], tuple[int, list[str]]] = {}
    for problem in problems:
        found = [c for c in clusters if f"`{c}`" in problem.message]
        if len(found) != 1 or problem.message.count(f"`{found[0]}`") != 1:
            merged.append(problem)
            continue
        shape = problem.message.replace(f"`{found[0]}`", "\0")
        key = (problem.line, problem.column, shape)
        if key not in named:
            named[key] = (len(merged), [found[0]])
            merged.append(problem)
            continue
        at, names = named[key]
        names.append(found[0])
        others = ", ".join(f"`{n}`" for n in names[1:-1])
        others += (" and " if others else "") + f"`{names[-1]}`"
        message = shape.replace("\0", f"`{names[0]}`") + f" (the same on {others})"
        merged[at] = replace(merged[at], message=message)
    return merged
