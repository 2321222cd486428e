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
from trainops.spec.model import ClusterProfile
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
    }


def _path_text(path: Sequence[str | int]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(object)"


def _schema_findings(
    manifest: Manifest, validator: jsonschema_rs.Validator, data: Any, *, unnamed: bool = False
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
            message = f"{_path_text(path)}: unknown field (not in the schema)"
        else:
            message = f"{_path_text(path)}: {error.message}"
        findings.append(Finding(RULE_SCHEMA, Severity.ERROR, message, **_where(manifest, path)))
    return findings


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
        findings += _schema_findings(manifest, validator, data, unnamed=unnamed)
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
