"""Validate the repository as Argo CD / Flux will see it: render in memory, kustomize build, check.

The rendered files are written to a temporary directory only so the real
kustomize can build each `overlays/<cluster>`; nothing in the repository is
touched. Built objects are mapped back to the rendered file that defines them
(by kind and name), or to the kustomization entry of the generator that made
them, so every finding names a file in the repository a reviewer can open (and
a SARIF upload or a GitHub annotation can point at).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from trainops import kustomize, yamlio
from trainops.errors import InputError, Problem
from trainops.findings import Finding, Severity
from trainops.manifest import Manifest
from trainops.render import render_repository
from trainops.spec.load import load_repository
from trainops.spec.model import ClusterProfile
from trainops.validate.crd import load_crd_dir
from trainops.validate.load import documents_to_manifests
from trainops.validate.pipeline import validate_manifests
from trainops.validate.schemas import SchemaStore

RULE_BUILD = "build"
GITOPS_DIR = "gitops"
# Overlays are built concurrently, one `kustomize build` process per core: each is
# single-threaded and on a large repository takes most of the run (kustomize's own
# cost grows faster than linearly with the resources in an overlay).
MAX_PARALLEL_BUILDS = os.cpu_count() or 1


@dataclass
class RepoResult:
    findings: list[Finding] = field(default_factory=list)
    resources: int = 0
    built: dict[str, str] = field(default_factory=dict)
    """cluster -> `kustomize build` output (for kubeconform)."""


# kustomize generators and the kind of object each produces.
_GENERATORS = {"configMapGenerator": "ConfigMap", "secretGenerator": "Secret"}
# kustomize appends `-` and a 10-character content hash to a generated object's name.
_HASH_SUFFIX = re.compile(r"-[a-z0-9]{10}$")


@dataclass
class _Sources:
    """Where built objects come from in the rendered files."""

    objects: dict[tuple[str, str], yamlio.Document] = field(default_factory=dict)
    """(kind, name) -> the rendered document defining it (first one wins: base/ sorts first)."""
    generated: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    """(kind, generator name) -> (kustomization file, line of the generator's `name`)."""


def _source_index(files: dict[str, str]) -> _Sources:
    sources = _Sources()
    for rel, text in files.items():
        if not rel.endswith((".yaml", ".yml")):
            continue
        documents = yamlio.load_text(text, rel)
        if rel.endswith("kustomization.yaml"):
            for doc in documents:
                _index_generators(doc, sources.generated)
            continue
        for doc in documents:
            if isinstance(doc.data, dict):
                meta = doc.data.get("metadata") or {}
                key = (str(doc.data.get("kind")), str(meta.get("name")))
                sources.objects.setdefault(key, doc)
    return sources


def _index_generators(doc: yamlio.Document, out: dict[tuple[str, str], tuple[str, int]]) -> None:
    if not isinstance(doc.data, dict):
        return
    for field_name, kind in _GENERATORS.items():
        entries = doc.data.get(field_name)
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                where = (doc.file, doc.line_of([field_name, index, "name"]))
                out.setdefault((kind, entry["name"]), where)


def _attach_sources(manifests: list[Manifest], sources: _Sources, overlay: str) -> None:
    """Point every built object at a file in the repository (never at the build output).

    An object defined in a rendered file gets that file and its lines; one made by a
    configMapGenerator/secretGenerator gets the kustomization entry that declares it;
    anything else the overlay's kustomization.yaml, with no line.
    """
    for m in manifests:
        name = m.name or ""
        doc = sources.objects.get((m.kind, name))
        if doc is not None:
            m.file, m.document = doc.file, doc
            continue
        m.document = None
        generated = sources.generated.get((m.kind, name)) or sources.generated.get(
            (m.kind, _HASH_SUFFIX.sub("", name))
        )
        if generated is not None:
            m.file, m.source_line = generated
        else:
            m.file, m.source_line = f"{overlay}/kustomization.yaml", None


def _store_for(
    cluster: ClusterProfile,
    root: Path,
    crds: Path | None,
    cache: dict[tuple[str, str], SchemaStore],
) -> SchemaStore:
    crd_dir = crds or (root / cluster.crds if cluster.crds else None)
    key = (cluster.kubernetes_version, str(crd_dir))
    if key not in cache:
        converted = load_crd_dir(crd_dir) if crd_dir else None
        cache[key] = SchemaStore(cluster.kubernetes_version, converted)
    return cache[key]


def validate_repository(
    root: Path,
    cluster_name: str | None = None,
    crds: Path | None = None,
    unknown_kind: Severity | None = Severity.ERROR,
    build: Callable[[Path], str] = kustomize.build,
) -> RepoResult:
    """Findings for every overlay (or one) plus the gitops/ objects."""
    # Every parsed document (data and node tree) stays alive until we return.
    with yamlio.gc_paused():
        return _validate_repository(root, cluster_name, crds, unknown_kind, build)


def _validate_repository(
    root: Path,
    cluster_name: str | None,
    crds: Path | None,
    unknown_kind: Severity | None,
    build: Callable[[Path], str],
) -> RepoResult:
    repo = load_repository(root)
    if cluster_name is not None and cluster_name not in repo.clusters:
        known = ", ".join(sorted(repo.clusters)) or "none"
        raise InputError(
            Problem("--cluster", None, None, f"unknown cluster {cluster_name!r} (known: {known})")
        )
    files = render_repository(repo)
    result = RepoResult()
    stores: dict[tuple[str, str], SchemaStore] = {}
    names = [cluster_name] if cluster_name else sorted(repo.clusters)
    with tempfile.TemporaryDirectory(prefix="trainops-validate-") as tmp:
        work = Path(tmp)
        for rel, text in files.items():
            target = work / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        with ThreadPoolExecutor(max_workers=max(1, min(len(names), MAX_PARALLEL_BUILDS))) as pool:
            # Started together, consumed in order: findings do not depend on timing,
            # and the first overlay is validated while the others still build.
            builds = [pool.submit(build, work / f"overlays/{name}") for name in names]
            index = _source_index(files)
            for name, pending in zip(names, builds, strict=True):
                cluster = repo.clusters[name]
                overlay = f"overlays/{name}"
                try:
                    built = pending.result()
                except kustomize.KustomizeError as err:
                    result.findings.append(
                        Finding(
                            RULE_BUILD,
                            Severity.ERROR,
                            f"kustomize build failed: {err}",
                            file=f"{overlay}/kustomization.yaml",
                            cluster=name,
                        )
                    )
                    continue
                try:
                    docs = yamlio.load_text(built, f"kustomize build {overlay}")
                    manifests, problems = documents_to_manifests(docs, name)
                    if problems:
                        raise InputError(problems)
                except InputError as err:
                    result.findings.append(
                        Finding(
                            RULE_BUILD,
                            Severity.ERROR,
                            f"kustomize build printed what is not Kubernetes objects: {err}",
                            file=f"{overlay}/kustomization.yaml",
                            cluster=name,
                        )
                    )
                    continue
                result.built[name] = built
                _attach_sources(manifests, index, overlay)
                result.resources += len(manifests)
                store = _store_for(cluster, root, crds, stores)
                result.findings += validate_manifests(
                    manifests, cluster, store, unknown_kind=unknown_kind
                )
        gitops = {rel: text for rel, text in files.items() if rel.startswith(f"{GITOPS_DIR}/")}
        if gitops and cluster_name is None:
            manifests = []
            for rel, text in gitops.items():
                if rel.endswith((".yaml", ".yml")):
                    found, problems = documents_to_manifests(yamlio.load_text(text, rel))
                    if problems:
                        raise InputError(problems)
                    manifests += found
            result.resources += len(manifests)
            store = SchemaStore(crd_schemas=load_crd_dir(crds) if crds else None)
            result.findings += validate_manifests(manifests, None, store, unknown_kind=unknown_kind)
    result.findings.sort(key=Finding.sort_key)
    return result


def build_overlay(
    root: Path, cluster_name: str, build: Callable[[Path], str] = kustomize.build
) -> tuple[ClusterProfile, list[Manifest]]:
    """The objects `kustomize build overlays/<cluster>` makes from the repository rendered in
    memory, each pointing at the repository file it came from (as validation findings do).

    For the cluster-facing commands (live diff, server-side dry run, status), which compare
    what Git builds with what the cluster runs. Raises InputError for bad input or an unknown
    cluster, and kustomize.KustomizeError when the build fails.
    """
    repo = load_repository(root)
    if cluster_name not in repo.clusters:
        known = ", ".join(sorted(repo.clusters)) or "none"
        raise InputError(
            Problem("--cluster", None, None, f"unknown cluster {cluster_name!r} (known: {known})")
        )
    files = render_repository(repo)
    overlay = f"overlays/{cluster_name}"
    with tempfile.TemporaryDirectory(prefix="trainops-build-") as tmp:
        for rel, text in files.items():
            target = Path(tmp) / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        built = build(Path(tmp) / overlay)
    manifests, problems = documents_to_manifests(
        yamlio.load_text(built, f"kustomize build {overlay}"), cluster_name
    )
    if problems:
        raise InputError(problems)
    _attach_sources(manifests, _source_index(files), overlay)
    return repo.clusters[cluster_name], manifests
