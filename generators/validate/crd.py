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
- `metadata` at the top is the core ObjectMeta, as the API server checks it;
- `status` is left out: a manifest in Git carries none (reported separately).

CEL rules (`x-kubernetes-validations`) are not evaluated.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from generators import yamlio
from generators.errors import InputError, Problem
from generators.validate.schemas import CORE_DEFINITIONS_ID, GVK

_OBJECT_META = {
    "$ref": f"{CORE_DEFINITIONS_ID}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
}
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


def convert_schema(schema: dict[str, Any], *, top: bool = False) -> dict[str, Any]:
    """One openAPIV3Schema node to JSON Schema (recursive)."""
    out: dict[str, Any] = {k: schema[k] for k in _PLAIN if k in schema}
    for key in ("exclusiveMinimum", "exclusiveMaximum"):
        bound = "minimum" if key == "exclusiveMinimum" else "maximum"
        if schema.get(key) is True and bound in out:
            out[key] = out.pop(bound)
    for key in _SUBSCHEMA:
        if isinstance(schema.get(key), dict):
            out[key] = convert_schema(schema[key])
    for key in _SUBSCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            out[key] = [convert_schema(s) for s in schema[key]]

    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
        if "pattern" in out:
            # The quantity pattern applies to the string form only.
            pattern = out.pop("pattern")
            out["anyOf"] = [{"type": "integer"}, {"type": "string", "pattern": pattern}]

    properties = schema.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {
            name: convert_schema(sub)
            for name, sub in properties.items()
            if not (top and name == "status")
        }
        if top:
            out["properties"]["metadata"] = dict(_OBJECT_META)
    additional = schema.get("additionalProperties")
    if isinstance(additional, dict):
        out["additionalProperties"] = convert_schema(additional)
    elif isinstance(additional, bool):
        out["additionalProperties"] = additional
    elif schema.get("x-kubernetes-preserve-unknown-fields"):
        pass
    elif schema.get("type") == "object" or isinstance(properties, dict):
        out["additionalProperties"] = False

    if schema.get("x-kubernetes-embedded-resource"):
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
        props.setdefault("metadata", {"type": "object"})

    if schema.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def convert_crd(crd: dict[str, Any]) -> dict[GVK, dict[str, Any]]:
    """Every version of one CRD that has a schema: (group, version, kind) -> JSON Schema."""
    spec = crd.get("spec") or {}
    group = str(spec.get("group", ""))
    kind = str((spec.get("names") or {}).get("kind", ""))
    result: dict[GVK, dict[str, Any]] = {}
    for version in spec.get("versions") or []:
        raw = ((version.get("schema") or {}).get("openAPIV3Schema")) or spec.get(
            "validation", {}
        ).get("openAPIV3Schema")
        if not isinstance(raw, dict):
            continue
        name = str(version.get("name", ""))
        schema = convert_schema(raw, top=True)
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        props = schema.setdefault("properties", {})
        props["apiVersion"] = {"const": f"{group}/{name}"}
        props["kind"] = {"const": kind}
        schema["additionalProperties"] = False
        result[(group, name, kind)] = schema
    return result


def _crd_files(directory: Path) -> Iterable[Path]:
    for pattern in ("*.yaml", "*.yml", "*.json"):
        yield from directory.rglob(pattern)


def load_crd_dir(directory: Path) -> dict[GVK, dict[str, Any]]:
    """Convert every CustomResourceDefinition found under `directory`."""
    if not directory.is_dir():
        raise InputError(
            Problem(str(directory), None, None, "CRD directory does not exist (check `--crds`)")
        )
    schemas: dict[GVK, dict[str, Any]] = {}
    for path in sorted(_crd_files(directory)):
        for doc in yamlio.load_file(path):
            data = doc.data
            if isinstance(data, dict) and data.get("kind") == "CustomResourceDefinition":
                schemas.update(convert_crd(data))
    if not schemas:
        raise InputError(
            Problem(
                str(directory),
                None,
                None,
                "no CustomResourceDefinition with an openAPIV3Schema found here",
            )
        )
    return schemas
