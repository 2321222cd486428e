"""Where the core Kubernetes JSON Schemas come from: kubernetes-validate's bundled strict
schemas, one directory per Kubernetes minor version. The spec layer checks a job's pod
template overrides against them at load time, and `trainops validate` checks every built
core object against them; both pick the version here, the same way."""

from __future__ import annotations

import importlib.util
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from trainops.core.errors import InputError, Problem

# Used by `--manifests` without `--cluster`: a version every supported cluster
# runs today. Pinned (not "the newest bundled") so results do not move when the
# kubernetes-validate package is upgraded.
DEFAULT_KUBERNETES_VERSION = "1.31"


# Built-in kinds (API group, kind) whose schema holds no pod template anywhere, in every
# bundled version (tests/facts/test_pod_free_kinds.py derives it from each version's
# definitions): an object of one is not searched for things shaped like a pod template
# (`Object.unread_pod_templates`), which most of a repository's objects are.
POD_FREE_KINDS = frozenset(
    {
        ("", "ConfigMap"),
        ("", "Endpoints"),
        ("", "LimitRange"),
        ("", "Namespace"),
        ("", "PersistentVolume"),
        ("", "PersistentVolumeClaim"),
        ("", "ResourceQuota"),
        ("", "Secret"),
        ("", "Service"),
        ("", "ServiceAccount"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("coordination.k8s.io", "Lease"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("networking.k8s.io", "Ingress"),
        ("networking.k8s.io", "NetworkPolicy"),
        ("policy", "PodDisruptionBudget"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("storage.k8s.io", "StorageClass"),
    }
)


def _package_dir(name: str) -> Path:
    """Where an installed package's files are, without running its `__init__`."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"no package {name!r}: pip install {name.replace('_', '-')}")
    return Path(next(iter(spec.submodule_search_locations))).resolve()


# The schemas kubernetes-validate ships, found without importing it (its package imports the
# Python jsonschema library: a sixth of the start of `trainops validate`).
_K8S_SCHEMA_ROOT = _package_dir("kubernetes_validate") / "kubernetes-json-schema"
_VERSION_DIR = re.compile(r"^v(\d+)\.(\d+)\.\d+-local-strict$")


def supported_versions() -> list[tuple[int, int]]:
    """Kubernetes major.minor versions kubernetes-validate ships strict schemas for."""
    found = []
    for entry in _K8S_SCHEMA_ROOT.iterdir():
        match = _VERSION_DIR.match(entry.name)
        if match:
            found.append((int(match.group(1)), int(match.group(2))))
    return sorted(found)


def parse_version(kubernetes_version: str) -> tuple[int, int] | None:
    """`1.31`, `v1.31` or `1.31.2` as (1, 31); None when it is not a version."""
    match = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?", kubernetes_version.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def core_schema_dir(kubernetes_version: str) -> Path:
    """Strict schema directory for the newest bundled version not newer than the one asked for.

    Compared as numbers (kubernetes-validate itself compares strings: "1.9" > "1.31").
    """
    wanted = parse_version(kubernetes_version)
    if wanted is None:
        raise InputError(
            Problem.about(
                "<kubernetes version>",
                f"Kubernetes version must look like `1.31`, got {kubernetes_version!r}",
            )
        )
    candidates = [v for v in supported_versions() if v <= wanted]
    if not candidates:
        oldest = supported_versions()[0]
        raise InputError(
            Problem.about(
                "<kubernetes version>",
                f"no schemas for Kubernetes {kubernetes_version}: the oldest supported is"
                f" {oldest[0]}.{oldest[1]}",
            )
        )
    major, minor = candidates[-1]
    return _K8S_SCHEMA_ROOT / f"v{major}.{minor}.0-local-strict"


@cache
def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def core_definitions(kubernetes_version: str) -> dict[str, Any]:
    """kubernetes-validate's `_definitions.json` for that version (shared, do not mutate)."""
    data: dict[str, Any] = read_json(core_schema_dir(kubernetes_version) / "_definitions.json")
    return data
