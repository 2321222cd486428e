"""Validate objects against the real upstream CRDs (read from ../shared/upstream at test time).

The conversion is the one kubeconform's openapi2jsonschema does, made strict:
objects with `properties` and no `additionalProperties` or
`x-kubernetes-preserve-unknown-fields` reject unknown fields, as the API server
does for structural CRD schemas.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml


def _strict(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items() if not k.startswith("x-kubernetes-")}
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if (
        "properties" in schema
        and "additionalProperties" not in schema
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def crd_validator(path: Path, version: str) -> jsonschema.Draft4Validator:
    """Validator for `version` of the CRD in `path`, with apiVersion/kind/metadata allowed."""
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            schema = _strict(served["schema"]["openAPIV3Schema"])
            schema["properties"]["metadata"] = {"type": "object"}
            return jsonschema.Draft4Validator(schema)
    raise AssertionError(f"{path} has no version {version}")


def errors(validator: jsonschema.Draft4Validator, obj: dict[str, Any]) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)
    ]
