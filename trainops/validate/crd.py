"""Convert real CustomResourceDefinition YAML to strict JSON Schemas.

A team validates against exactly the CRDs its clusters run (`--crds DIR`, or
`crds:` in a cluster profile). Each served version's `openAPIV3Schema` becomes a
draft 2020-12 JSON Schema, the way kubeconform's openapi2jsonschema does, but
strict the way the API server's structural pruning + strict field validation is:

- an object schema that does not say otherwise gets `additionalProperties: false`
  (the API server drops or, with `--validate=strict`, rejects unknown fields);
- `x-kubernetes-preserve-unknown-fields: true` keeps the object open;
- `x-kubernetes-int-or-string: true` accepts an integer or a string;
- `x-kubernetes-embedded-resource: true` also allows `apiVersion`, `kind`, `metadata`;
- `nullable: true` adds `null` to the type;
- OpenAPI 3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` become numbers;
- at the top, `apiVersion` and `kind` must be the CRD's and `metadata` is the core
  ObjectMeta, as the API server checks them, whatever the CRD lists; the top is
  closed unless the CRD keeps it open (`x-kubernetes-preserve-unknown-fields`);
- `status` is left out: a manifest in Git carries none (reported separately).

A malformed CRD (a version that is not a mapping, a schema the validator cannot
compile such as `type: strin`) is bad input: an `InputError` naming the CRD's
file and line, like any other unreadable input.

CEL rules (`x-kubernetes-validations`) are not evaluated.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import jsonschema_rs

from trainops.core import yamlio
from trainops.core.errors import InputError, Problem
from trainops.core.limits import inside
from trainops.validate.schemas import CORE_DEFINITIONS_ID, GVK

_OBJECT_META = {
    "$ref": f"{CORE_DEFINITIONS_ID}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
}
# The types a CRD's structural schema may use.
_TYPES = frozenset({"array", "boolean", "integer", "number", "object", "string"})
# OpenAPI keywords that hold one subschema, or a list of them.
_SUBSCHEMA = ("items", "not")
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
# Kept as they are: they mean the same in OpenAPI 3.0 and JSON Schema 2020-12.
_PLAIN = (
    "type",
    "enum",
    "required",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
    "default",
)


class CRDError(ValueError):
    """A CustomResourceDefinition that cannot be converted: where in it, and what is wrong."""

    def __init__(self, path: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.path = list(path)
        self.message = message


def _dotted(path: Sequence[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _subschema(value: Any, path: list[str | int]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise CRDError(path, f"`{_dotted(path)}` must be a schema (a mapping), got {value!r}")
    return value


def convert_schema(
    schema: dict[str, Any], *, top: bool = False, path: Sequence[str | int] = ()
) -> dict[str, Any]:
    """One openAPIV3Schema node to JSON Schema (recursive); `path` locates it for errors.

    Each step below converts one part of the node, in this order (the later ones read what
    the earlier ones wrote)."""
    at = list(path)
    schema = _subschema(schema, at)
    _check_type(schema, at)
    out = _plain(schema)
    _subschemas(schema, at, out)
    _int_or_string(schema, out)
    _properties(schema, at, top, out)
    _additional_properties(schema, at, out)
    _embedded_resource(schema, out)
    if schema.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def _check_type(schema: dict[str, Any], at: list[str | int]) -> None:
    if "type" in schema and schema["type"] not in _TYPES:
        where = [*at, "type"]
        raise CRDError(
            where,
            f"`{_dotted(where)}`: unknown type {schema['type']!r} (OpenAPI types:"
            f" {', '.join(sorted(_TYPES))})",
        )


def _plain(schema: dict[str, Any]) -> dict[str, Any]:
    """The keywords JSON Schema reads alike; OpenAPI's boolean exclusive bounds as numbers."""
    out: dict[str, Any] = {k: schema[k] for k in _PLAIN if k in schema}
    for key in ("exclusiveMinimum", "exclusiveMaximum"):
        bound = "minimum" if key == "exclusiveMinimum" else "maximum"
        if schema.get(key) is True and bound in out:
            out[key] = out.pop(bound)
    return out


def _subschemas(schema: dict[str, Any], at: list[str | int], out: dict[str, Any]) -> None:
    for key in _SUBSCHEMA:
        if key in schema:
            out[key] = convert_schema(schema[key], path=[*at, key])
    for key in _SUBSCHEMA_LISTS:
        if key in schema:
            subs = schema[key]
            if not isinstance(subs, list):
                raise CRDError([*at, key], f"`{_dotted([*at, key])}` must be a list of schemas")
            out[key] = [convert_schema(s, path=[*at, key, i]) for i, s in enumerate(subs)]


def _int_or_string(schema: dict[str, Any], out: dict[str, Any]) -> None:
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
        if "pattern" in out:
            # The quantity pattern applies to the string form only.
            pattern = out.pop("pattern")
            out["anyOf"] = [{"type": "integer"}, {"type": "string", "pattern": pattern}]


def _properties(
    schema: dict[str, Any], at: list[str | int], top: bool, out: dict[str, Any]
) -> None:
    """The properties, converted; the top level's `status` left out (Git holds no status)."""
    properties = schema.get("properties")
    if properties is None:
        return
    if not isinstance(properties, dict):
        where = [*at, "properties"]
        raise CRDError(where, f"`{_dotted(where)}` must be a mapping of property schemas")
    out["properties"] = {
        name: convert_schema(sub, path=[*at, "properties", name])
        for name, sub in properties.items()
        if not (top and name == "status")
    }


def _additional_properties(
    schema: dict[str, Any], at: list[str | int], out: dict[str, Any]
) -> None:
    """Strict objects: unknown fields are refused unless the CRD preserves them."""
    additional = schema.get("additionalProperties")
    if isinstance(additional, bool):
        out["additionalProperties"] = additional
    elif additional is not None:
        out["additionalProperties"] = convert_schema(additional, path=[*at, "additionalProperties"])
    elif schema.get("x-kubernetes-preserve-unknown-fields"):
        pass
    elif schema.get("type") == "object" or isinstance(schema.get("properties"), dict):
        out["additionalProperties"] = False


def _embedded_resource(schema: dict[str, Any], out: dict[str, Any]) -> None:
    if schema.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})


def _text(value: Any, path: list[str | int], what: str) -> str:
    if not isinstance(value, str) or not value:
        raise CRDError(path, f"`{_dotted(path)}` must be {what} (a non-empty string)")
    return value


def convert_crd(
    crd: dict[str, Any], doc: yamlio.Document | None = None
) -> dict[GVK, dict[str, Any]]:
    """Every version of one CRD that has a schema: (group, version, kind) -> JSON Schema.

    A malformed CRD is bad input: `InputError` naming the file and line of `doc`
    (when given) and what is wrong, never a crash deeper down.
    """
    try:
        return _convert_crd(crd)
    except CRDError as err:
        name = (
            (crd.get("metadata") or {}).get("name")
            if isinstance(crd.get("metadata"), dict)
            else None
        )
        raise InputError(_crd_problem(doc, err.path, name, err.message)) from None


def _crd_problem(
    doc: yamlio.Document | None, path: Sequence[str | int], name: Any, message: str
) -> Problem:
    what = (
        f"CustomResourceDefinition {name}" if isinstance(name, str) else "CustomResourceDefinition"
    )
    if doc is None:
        return Problem.about("<CRD>", f"{what}: {message}")
    line, column = doc.position(path)
    return Problem(doc.file, line, column, f"{what}: {message}")


def _convert_crd(crd: dict[str, Any]) -> dict[GVK, dict[str, Any]]:
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        raise CRDError(["spec"], "`spec` must be a mapping (group, names, versions)")
    group = _text(spec.get("group"), ["spec", "group"], "the API group")
    names = spec.get("names")
    if not isinstance(names, dict):
        raise CRDError(["spec", "names"], "`spec.names` must be a mapping with `kind`")
    kind = _text(names.get("kind"), ["spec", "names", "kind"], "the kind")
    versions = spec.get("versions")
    if versions is None:
        versions = []
    if not isinstance(versions, list):
        raise CRDError(["spec", "versions"], "`spec.versions` must be a list of versions")
    legacy = spec.get("validation")
    result: dict[GVK, dict[str, Any]] = {}
    for index, version in enumerate(versions):
        at: list[str | int] = ["spec", "versions", index]
        if not isinstance(version, dict):
            raise CRDError(
                at,
                f"`{_dotted(at)}` must be a mapping with `name` and `schema`, got {version!r}",
            )
        name = _text(version.get("name"), [*at, "name"], "the version name")
        schema_block = version.get("schema")
        if schema_block is not None and not isinstance(schema_block, dict):
            raise CRDError([*at, "schema"], f"`{_dotted([*at, 'schema'])}` must be a mapping")
        raw_path: list[str | int] = [*at, "schema", "openAPIV3Schema"]
        raw = (schema_block or {}).get("openAPIV3Schema")
        if raw is None and isinstance(legacy, dict):
            # apiextensions v1beta1: one schema for every version.
            raw, raw_path = legacy.get("openAPIV3Schema"), ["spec", "validation", "openAPIV3Schema"]
        if raw is None:
            continue
        schema = convert_schema(raw, top=True, path=raw_path)
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        props = schema.setdefault("properties", {})
        # What the API server checks on every object, whatever the CRD lists.
        props["apiVersion"] = {"const": f"{group}/{name}"}
        props["kind"] = {"const": kind}
        props["metadata"] = dict(_OBJECT_META)
        if raw.get("x-kubernetes-preserve-unknown-fields") is True:
            schema.pop("additionalProperties", None)
        else:
            schema["additionalProperties"] = False
        _check_compiles(schema, raw_path)
        result[(group, name, kind)] = schema
    return result


# Enough of the core definitions for a converted schema to compile on its own; the
# real ObjectMeta comes from the SchemaStore's registry when it is used.
_CHECK_REGISTRY = jsonschema_rs.Registry(
    [
        (
            CORE_DEFINITIONS_ID,
            {"$defs": {"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object"}}},
        )
    ]
)


def _check_compiles(schema: dict[str, Any], raw_path: list[str | int]) -> None:
    """A schema the validator cannot compile (`type: strin`, a bad regex) is a CRD error here."""
    try:
        jsonschema_rs.validator_for(schema, registry=_CHECK_REGISTRY)
    except jsonschema_rs.ValidationError as err:
        where = [*raw_path, *err.instance_path]
        raise CRDError(where, f"`{_dotted(where)}` is not a valid schema: {err.message}") from None
    except (ValueError, jsonschema_rs.ReferencingError) as err:
        raise CRDError(raw_path, f"`{_dotted(raw_path)}` is not a valid schema: {err}") from None


def _crd_files(directory: Path) -> Iterable[Path]:
    for pattern in ("*.yaml", "*.yml", "*.json"):
        yield from directory.rglob(pattern)


def load_crd_dir(directory: Path, confine: Path | None = None) -> dict[GVK, dict[str, Any]]:
    """Convert every CustomResourceDefinition found under `directory`.

    `confine`: the repository root, for a `crds:` a cluster profile names (a file a tenant
    may edit): the directory and every file read must resolve inside it, so a profile
    cannot make CI read the machine's files. `--crds` on the command line is not confined.
    """
    if confine is not None and not inside(directory, confine):
        raise InputError(
            Problem.whole_file(
                str(directory),
                "`crds:` in a cluster profile must stay inside the repository (symlinks"
                " resolved); pass a directory elsewhere with `--crds`",
            )
        )
    if not directory.is_dir():
        raise InputError(
            Problem.whole_file(str(directory), "CRD directory does not exist (check `--crds`)")
        )
    schemas: dict[GVK, dict[str, Any]] = {}
    problems: list[Problem] = []
    for path in sorted(_crd_files(directory)):
        if confine is not None and not inside(path, confine):
            problems.append(
                Problem.whole_file(str(path), "a symlink out of the repository; not read")
            )
            continue
        try:
            documents = yamlio.load_file(path, as_kubernetes=True)
        except InputError as err:
            problems += err.problems
            continue
        for doc in documents:
            data = doc.data
            if isinstance(data, dict) and data.get("kind") == "CustomResourceDefinition":
                try:
                    schemas.update(convert_crd(data, doc))
                except InputError as err:
                    problems += err.problems
    if problems:
        raise InputError(problems)
    if not schemas:
        raise InputError(
            Problem.whole_file(
                str(directory),
                "no CustomResourceDefinition with an openAPIV3Schema found here",
            )
        )
    return schemas
