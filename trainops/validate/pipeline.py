"""The validation pipeline: schema checks on every object, then every registered checker.

Policy rules plug in without touching this module's callers: append a function
`(manifests, cluster) -> Iterable[Finding]` to `CHECKERS` and it runs after the
schema checks on the same objects, for every entry point (`--manifests` and the
rendered repository alike).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import jsonschema_rs

from trainops import rules
from trainops.core import yamlio
from trainops.core.findings import Finding, Severity
from trainops.core.manifest import Manifest
from trainops.facts.kubeflow import REMOVED_APIS
from trainops.jobspec.model import ClusterProfile
from trainops.validate.schemas import SchemaStore, split_api_version

RULE_SCHEMA = "schema"

Checker = Callable[[list[Manifest], ClusterProfile | None], Iterable[Finding]]
CHECKERS: list[Checker] = [rules.check]
"""Run after the schema checks, in order: the policy-rule engine."""

# A broken object can fail hundreds of nested constraints that all say the same
# thing (e.g. a mis-indented pod template); the first few point at the fix.
MAX_ERRORS_PER_OBJECT = 20


def _where(manifest: Manifest, path: Sequence[str | int] = ()) -> dict[str, Any]:
    return {
        "file": manifest.file,
        "line": manifest.line_of(path),
        "kind": manifest.kind or None,
        "name": manifest.name,
        "namespace": manifest.namespace,
        "cluster": manifest.cluster,
        "path": tuple(path),
    }


def path_text(path: Sequence[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(object)"


def _subschema(schema: Any, schema_path: Sequence[str | int]) -> dict[str, Any]:
    """The schema at `schema_path` inside `schema` ({} when it runs through a `$ref`)."""
    node = schema
    for part in schema_path:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if in_dict or in_list:
            node = node[part]
        else:
            return {}
    return node if isinstance(node, dict) else {}


def _contains_message(path: str, items: Any, schema: dict[str, Any], parent: dict[str, Any]) -> str:
    """What a `contains` constraint wants, instead of every item printed as JSON."""
    wanted = [
        f"{key}: {sub['const']}"
        for key, sub in sorted((schema.get("properties") or {}).items())
        if isinstance(sub, dict) and "const" in sub
    ]
    names = (
        [str(i.get("name")) for i in items if isinstance(i, dict) and "name" in i]
        if isinstance(items, list)
        else []
    )
    what = (
        f"no item with {', '.join(wanted)}" if wanted else "no item matches what is required here"
    )
    have = f" (found name: {', '.join(names)})" if names else ""
    why = parent.get("description", "")
    return f"{path}: {what}{have}" + (f"; {why}" if why else "")


def _schema_findings(
    manifest: Manifest,
    validator: jsonschema_rs.Validator,
    data: Any,
    *,
    unnamed: bool = False,
    schema: Any = None,
) -> list[Finding]:
    findings: list[Finding] = []
    errors = validator.iter_errors(data)
    if unnamed:
        # Already reported as the missing name, which says what to add.
        errors = (
            e for e in errors if e.instance_path or getattr(e.kind, "property", None) != "metadata"
        )
    for count, error in enumerate(errors):
        if count == MAX_ERRORS_PER_OBJECT:
            findings.append(
                Finding(
                    RULE_SCHEMA,
                    Severity.ERROR,
                    f"more than {MAX_ERRORS_PER_OBJECT} schema errors; fix these first",
                    **_where(manifest),
                )
            )
            break
        path: list[str | int] = list(error.instance_path)
        unexpected = getattr(error.kind, "unexpected", None)
        if isinstance(unexpected, list) and len(unexpected) == 1:
            # Point at the unknown key itself, not at its parent.
            path.append(str(unexpected[0]))
            message = f"{path_text(path)}: unknown field (not in the schema)"
        elif type(error.kind).__name__ == "Contains":
            at = list(error.schema_path)
            message = _contains_message(
                path_text(path),
                error.instance,
                _subschema(schema, at),
                _subschema(schema, at[:-1]),
            )
        elif error.instance is None:
            # `key:` with nothing after it: YAML's null, which a Quantity or a list reads as
            # empty; the validator's own wording (`oneOf`, "not of type") hides that.
            message = (
                f"{path_text(path)}: has no value (the key is written with nothing after it):"
                " give it a value or delete the key"
            )
        elif type(error.kind).__name__ == "Required":
            missing = getattr(error.kind, "property", None)
            message = f"{path_text(path)}: required field `{missing}` is missing"
        else:
            message = _unquoted(manifest, path, error) or f"{path_text(path)}: {error.message}"
        findings.append(Finding(RULE_SCHEMA, Severity.ERROR, message, **_where(manifest, path)))
    return findings


def _unquoted(manifest: Manifest, path: Sequence[str | int], error: Any) -> str | None:
    """A string field holding an unquoted `1e-4`, `8` or `y`: kubectl reads a number or a bool
    there (go-yaml, trainops/core/yaml_go.py), which the API server refuses; say what to write."""
    types = getattr(error.kind, "types", None)
    if type(error.kind).__name__ != "Type" or "string" not in (types or ()):
        return None
    written = manifest.document.scalar_text(path) if manifest.document is not None else None
    if written is None or isinstance(error.instance, str):
        return None
    what = "a bool" if isinstance(error.instance, bool) else "a number"
    return (
        f"{path_text(path)}: the unquoted `{written}` is {what} to kubectl and the API server,"
        f' which take only text here: quote it ("{written}")'
    )


def check_schema(
    manifest: Manifest, store: SchemaStore, unknown_kind: Severity | None = Severity.ERROR
) -> list[Finding]:
    """Schema findings for one object: committed status, no name, unknown kind, schema
    violations."""
    findings: list[Finding] = []
    data = manifest.data
    if "status" in data:
        findings.append(
            Finding(
                RULE_SCHEMA,
                Severity.ERROR,
                "`status` is written by the controller; a manifest in Git must not carry it"
                " (delete the `status:` block)",
                **_where(manifest, ["status"]),
            )
        )
        data = {k: v for k, v in data.items() if k != "status"}
    meta = data.get("metadata")
    unnamed = not (isinstance(meta, dict) and (meta.get("name") or meta.get("generateName")))
    if unnamed:
        findings.append(
            Finding(
                RULE_SCHEMA,
                Severity.ERROR,
                "metadata.name: required (or metadata.generateName): the API server rejects"
                " an object without a name",
                **_where(manifest, ["metadata"]),
            )
        )
    group, version = split_api_version(manifest.api_version)
    found = store.lookup((group, version, manifest.kind))
    if found is None:
        if (manifest.kind, manifest.api_version) in REMOVED_APIS:
            return findings  # the `api-removed` rule says what replaces it
        if unknown_kind is not None:
            findings.append(
                Finding(
                    RULE_SCHEMA,
                    unknown_kind,
                    f"no schema for {manifest.kind} {manifest.api_version} (Kubernetes"
                    f" {store.kubernetes_version}): it cannot be checked; pass `--crds DIR` with"
                    " its CustomResourceDefinition, or `--unknown-kinds warning` to accept it",
                    **_where(manifest, ["kind"]),
                )
            )
        return findings
    validator, _source = found
    if not validator.is_valid(data):
        findings += _schema_findings(
            manifest,
            validator,
            data,
            unnamed=unnamed,
            schema=store.raw((group, version, manifest.kind)),
        )
    return findings


def validate_manifests(
    manifests: list[Manifest],
    cluster: ClusterProfile | None,
    store: SchemaStore | None = None,
    *,
    unknown_kind: Severity | None = Severity.ERROR,
    checkers: Sequence[Checker] | None = None,
) -> list[Finding]:
    """Schema checks on every object, then each checker (default: `CHECKERS`); sorted findings."""
    if store is None:
        store = SchemaStore(cluster.kubernetes_version) if cluster else SchemaStore()
    findings: list[Finding] = []
    # The manifests and their YAML node trees stay alive throughout: a full
    # collection triggered by the checks' small allocations would only rescan them.
    with yamlio.gc_paused():
        for manifest in manifests:
            findings += check_schema(manifest, store, unknown_kind)
        for checker in CHECKERS if checkers is None else checkers:
            findings += checker(manifests, cluster)
    return sorted(findings, key=Finding.sort_key)
