"""Where each kind's JSON Schema comes from, compiled once and reused.

Three sources, looked up in this order for an object's (group, version, kind):

1. Converted CRDs (`--crds DIR` or a cluster profile's `crds:`), see `crd.py`.
2. The project's own strict CRD schemas in `trainops/schemas/crds/`, laid out the way
   kubeconform's `-schema-location` and the CRDs-catalog name them:
   `{group}/{kind lowercased}_{version}.json`. Their pod templates and other
   core types are `$ref`s to `../_kubernetes/_definitions.json#/$defs/<name>`,
   which at run time is the `_definitions.json` kubernetes-validate ships for the
   selected Kubernetes version (`kubeconform.py` writes the same file next to
   them for kubeconform).
3. Core kinds: kubernetes-validate's bundled *strict* schemas
   (`v<version>-local-strict/<kind>-<group prefix>-<version>.json`), whose refs
   point at `https://kubernetes.io/api/_definitions.json`.

Compiling is what makes a naive validator slow (kubernetes-validate re-reads and
re-compiles ~1.3 MB of definitions for every document), so each validator is
built with jsonschema-rs once per (store, kind) and cached.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema_rs

from trainops.core import paths
from trainops.facts.kubernetes_schemas import (
    DEFAULT_KUBERNETES_VERSION,
    core_definitions,
    core_schema_dir,
    supported_versions,
)
from trainops.facts.kubernetes_schemas import read_json as _read_json

# The project's strict CRD schemas (package data `trainops/schemas/crds`).
CRD_SCHEMA_DIR = paths.SCHEMA_DIR / "crds"
# Where the CRD schemas expect the core definitions (relative refs, so kubeconform
# resolves them against the schema file's own location).
CORE_DEFINITIONS_REL = "_kubernetes/_definitions.json"
# The `$id` kubernetes-validate gives its definitions file; its kind files ref it.
CORE_DEFINITIONS_ID = "https://kubernetes.io/api/_definitions.json"
__all__ = [
    "DEFAULT_KUBERNETES_VERSION",
    "GVK",
    "SchemaSource",
    "SchemaStore",
    "core_definitions",
    "core_schema_dir",
    "supported_versions",
]
GVK = tuple[str, str, str]
"""(group, version, kind); the core group is ""."""


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def core_schema_file(directory: Path, gvk: GVK) -> Path:
    """kubernetes-validate (and kubeconform) naming: `deployment-apps-v1.json`, `pod-v1.json`."""
    group, version, kind = gvk
    prefix = f"{group.split('.')[0]}-" if group else ""
    return directory / f"{kind.lower()}-{prefix}{version}.json"


def crd_schema_file(directory: Path, gvk: GVK) -> Path:
    """CRDs-catalog naming: `{group}/{kind lowercased}_{version}.json`."""
    group, version, kind = gvk
    return directory / group / f"{kind.lower()}_{version}.json"


@dataclass(frozen=True)
class SchemaSource:
    """What a kind is validated against, for messages and `--format json` consumers."""

    origin: str
    """`core`, `project` or `crd`."""
    location: str


class SchemaStore:
    """Compiled validators for one Kubernetes version (+ optional converted CRDs)."""

    def __init__(
        self,
        kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
        crd_schemas: Mapping[GVK, dict[str, Any]] | None = None,
        crd_dir: Path = CRD_SCHEMA_DIR,
    ) -> None:
        self.kubernetes_version = kubernetes_version
        self.core_dir = core_schema_dir(kubernetes_version)
        self.crd_dir = crd_dir
        self.converted: dict[GVK, dict[str, Any]] = dict(crd_schemas or {})
        self._validators: dict[GVK, tuple[jsonschema_rs.Validator, SchemaSource] | None] = {}
        self._registry: jsonschema_rs.Registry | None = None

    def registry(self) -> jsonschema_rs.Registry:
        """Core definitions under both names they are referenced by, plus our shared files."""
        if self._registry is None:
            self._registry = _registry(self.kubernetes_version, self.crd_dir)
        return self._registry

    def lookup(self, gvk: GVK) -> tuple[jsonschema_rs.Validator, SchemaSource] | None:
        """Compiled validator for a kind, or None when no source has a schema for it."""
        if gvk in self._validators:
            return self._validators[gvk]
        found = self._compile(gvk)
        self._validators[gvk] = found
        return found

    def raw(self, gvk: GVK) -> Any:
        """The JSON Schema a kind is validated against (for messages), or None."""
        if gvk in self.converted:
            return self.converted[gvk]
        project = crd_schema_file(self.crd_dir, gvk)
        if project.is_file():
            return _read_json(project)
        core = core_schema_file(self.core_dir, gvk)
        return _read_json(core) if core.is_file() else None

    def _compile(self, gvk: GVK) -> tuple[jsonschema_rs.Validator, SchemaSource] | None:
        group, version, kind = gvk
        where = f"{group + '/' if group else ''}{version} {kind}"
        if gvk in self.converted:
            validator = jsonschema_rs.validator_for(self.converted[gvk], registry=self.registry())
            return validator, SchemaSource("crd", where)
        return _compiled(self.kubernetes_version, self.crd_dir, gvk)


# Compiled once per process and shared by every store of the same Kubernetes version and CRD
# folder: a repository's clusters, gitops/ and `--changed`'s partial runs each have a store,
# and compiling the same kinds again for each was a tenth of a one-job pull request's time.
# What a store's converted CRDs define is its own (`SchemaStore._compile`).
@functools.cache
def _registry(kubernetes_version: str, crd_dir: Path) -> jsonschema_rs.Registry:
    definitions = core_definitions(kubernetes_version)
    without_id = {k: v for k, v in definitions.items() if k != "$id"}
    resources: list[tuple[str, Any]] = [
        (CORE_DEFINITIONS_ID, definitions),
        ((crd_dir / CORE_DEFINITIONS_REL).as_uri(), without_id),
    ]
    shared = crd_dir / "_shared"
    if shared.is_dir():
        resources += [(p.as_uri(), _read_json(p)) for p in sorted(shared.glob("*.json"))]
    return jsonschema_rs.Registry(resources)


@functools.cache
def _compiled(
    kubernetes_version: str, crd_dir: Path, gvk: GVK
) -> tuple[jsonschema_rs.Validator, SchemaSource] | None:
    """The validator of a kind from the project's CRD schemas or the core ones, or None."""
    group, version, kind = gvk
    where = f"{group + '/' if group else ''}{version} {kind}"
    registry = _registry(kubernetes_version, crd_dir)
    project = crd_schema_file(crd_dir, gvk)
    if project.is_file():
        validator = jsonschema_rs.validator_for(
            _read_json(project), registry=registry, base_uri=project.as_uri()
        )
        return validator, SchemaSource("project", str(project.relative_to(crd_dir)))
    core = core_schema_file(core_schema_dir(kubernetes_version), gvk)
    if core.is_file():
        schema = _read_json(core)
        # The file name drops the group's domain (`apps`, `rbac`): make sure the
        # schema really is for this group, so `foo.example.com/v1 Deployment`
        # is not validated as an apps/v1 Deployment.
        declared = {
            (g.get("group", ""), g.get("version"), g.get("kind"))
            for g in schema.get("x-kubernetes-group-version-kind", [])
        }
        if gvk not in declared:
            return None
        validator = jsonschema_rs.validator_for(schema, registry=registry)
        return validator, SchemaSource("core", f"Kubernetes {kubernetes_version} {where}")
    return None
