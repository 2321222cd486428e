"""Validate the repository as Argo CD / Flux will see it: render in memory, kustomize build, check.

The rendered files are written to a temporary directory only so the real
kustomize can build each `overlays/<cluster>`; nothing in the repository is
touched. Built objects are mapped back to the rendered file that defines them
(by kind and name), or to the kustomization entry of the generator that made
them, so every finding names a file in the repository a reviewer can open (and
a SARIF upload or a GitHub annotation can point at).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from trainops import build
from trainops.core import paths, yamlio
from trainops.core.errors import InputError, Problem
from trainops.core.findings import Finding, Severity
from trainops.core.manifest import Manifest
from trainops.facts import kustomize as kustomize_facts
from trainops.jobspec.model import ClusterProfile, Repository
from trainops.render import (
    TRAINER_V2_BASE,
    gitops_files,
    render_in_parts,
    render_part,
    render_repository,
)
from trainops.validate.crd import load_crd_dir
from trainops.validate.load import documents_to_manifests
from trainops.validate.locate import SpecLines
from trainops.validate.pipeline import validate_manifests
from trainops.validate.schemas import SchemaStore

RULE_BUILD = "build"
RULE_SPEC = "spec"


@dataclass
class RepoResult:
    findings: list[Finding] = field(default_factory=list)
    resources: int = 0
    built: dict[str, str] = field(default_factory=dict)
    """cluster -> `kustomize build` output (for kubeconform)."""


@dataclass(frozen=True)
class Part:
    """Some jobs of some clusters: cluster -> its jobs to build (None: all), and whether
    gitops/ is checked. Each cluster's platform folder and runtimes are always built."""

    clusters: Mapping[str, Collection[str] | None]
    gitops: bool


@dataclass
class _Sources:
    """Where built objects come from in the rendered files."""

    objects: dict[tuple[str, str], yamlio.Document] = field(default_factory=dict)
    """(kind, name) -> the rendered document defining it (first one wins: base/ sorts first)."""
    trainer_v2: dict[tuple[str, str], yamlio.Document] = field(default_factory=dict)
    """The same for a job's Trainer v2 base (`base/<job>/trainer-v2/`), which defines objects
    of the same kind and name as its v1 base: Trainer v2 clusters read these first."""
    generated: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    """(kind, generator name) -> (kustomization file, line of the generator's `name`)."""


def _source_index(files: dict[str, str]) -> _Sources:
    sources = _Sources()
    for rel, text in files.items():
        if not rel.endswith((".yaml", ".yml")):
            continue
        documents = yamlio.load_text(text, rel, as_kubernetes=True)
        if rel.endswith("kustomization.yaml"):
            for doc in documents:
                _index_generators(doc, sources.generated)
            continue
        for doc in documents:
            if isinstance(doc.data, dict):
                meta = doc.data.get("metadata") or {}
                kind, name = str(doc.data.get("kind")), str(meta.get("name"))
                # By namespace too: two LocalQueues of one name in two namespaces.
                for key in ((kind, name), (kind, f"{meta.get('namespace')}/{name}")):
                    sources.objects.setdefault(key, doc)
                    if f"/{TRAINER_V2_BASE}/" in rel:
                        sources.trainer_v2.setdefault(key, doc)
    return sources


def _index_generators(doc: yamlio.Document, out: dict[tuple[str, str], tuple[str, int]]) -> None:
    if not isinstance(doc.data, dict):
        return
    for field_name, kind in kustomize_facts.GENERATORS.items():
        entries = doc.data.get(field_name)
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                where = (doc.file, doc.line_of([field_name, index, "name"]))
                out.setdefault((kind, entry["name"]), where)


def _attach_sources(
    manifests: list[Manifest], sources: _Sources, overlay: str, trainer_v2: bool = False
) -> None:
    """Point every built object at a file in the repository (never at the build output).

    An object defined in a rendered file gets that file and its lines; one made by a
    configMapGenerator/secretGenerator gets the kustomization entry that declares it;
    anything else the overlay's kustomization.yaml, with no line.
    """
    for m in manifests:
        name = m.name or ""
        doc = None
        for key in ((m.kind, f"{m.namespace}/{name}"), (m.kind, name)):
            doc = doc or (sources.trainer_v2.get(key) if trainer_v2 else None)
            doc = doc or sources.objects.get(key)
        if doc is not None:
            m.file, m.document = doc.file, doc
            continue
        m.document = None
        generated = sources.generated.get((m.kind, name)) or sources.generated.get(
            (m.kind, kustomize_facts.unhashed(name))
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
        converted = load_crd_dir(crd_dir, confine=None if crds else root) if crd_dir else None
        cache[key] = SchemaStore(cluster.kubernetes_version, converted)
    return cache[key]


def validate_repository(
    root: Path,
    repo: Repository,
    *,
    cluster_name: str | None = None,
    crds: Path | None = None,
    unknown_kind: Severity | None = Severity.ERROR,
    run: Callable[[Path], str] = build.kustomize,
    part: Part | None = None,
) -> RepoResult:
    """Findings for every overlay (or one) plus the gitops/ objects of the loaded `repo`;
    with `part`, for that part of it only (`trainops.validate.changes`)."""
    if cluster_name is not None and cluster_name not in repo.clusters:
        known = ", ".join(sorted(repo.clusters)) or "none"
        raise InputError(
            Problem.about("--cluster", f"unknown cluster {cluster_name!r} (known: {known})")
        )
    # Every parsed document (data and node tree) stays alive until we return.
    with yamlio.gc_paused():
        result = _validate(
            root,
            repo,
            cluster_name=cluster_name,
            crds=crds,
            unknown_kind=unknown_kind,
            run=run,
            part=part,
        )
    result.findings.sort(key=Finding.sort_key)
    return result


def _build_finding(name: str, message: str) -> Finding:
    file = f"{paths.OVERLAYS_DIR}/{name}/kustomization.yaml"
    return Finding(RULE_BUILD, Severity.ERROR, message, file=file, cluster=name)


# Room per job and per job placement a rendered tree takes written out, twice what a
# 500-job fleet takes on a memory-backed file system (3.7 files each, a 4 KiB page a file).
_TREE_BYTES_PER_PLACEMENT = 32 << 10


def _tree_size(repo: Repository) -> int:
    """About how much room the rendered tree takes written out (see `build.scratch_parent`)."""
    placements = sum(len(job.targets) + 1 for job in repo.jobs)
    return (placements + 4 * len(repo.clusters)) * _TREE_BYTES_PER_PLACEMENT


def _write_and_start(
    parts: Iterable[tuple[Collection[str], dict[str, str]]], names: list[str], builds: build.Builds
) -> dict[str, str]:
    """Write each rendered part and start the builds of `names` it completes at once (while
    the next parts render), then any left; the rendered files, sorted by path."""
    files: dict[str, str] = {}
    for completed, rendered in parts:
        builds.write(rendered)
        files.update(rendered)
        for cluster in completed:
            if cluster in names:
                builds.start(cluster)
    for name in names:
        builds.start(name)
    return dict(sorted(files.items()))


def _changed_parts(
    repo: Repository, part: Part
) -> Iterator[tuple[Collection[str], dict[str, str]]]:
    """`render_part`'s files in two parts: the overlays, then gitops/ (which renders every job
    on every cluster for the kinds it allows: 2.3 s of 5,000 jobs, while the overlays build)."""
    yield tuple(part.clusters), render_part(repo, part.clusters, gitops=False)
    yield (), gitops_files(repo) if part.gitops else {}


def _validate(
    root: Path,
    repo: Repository,
    *,
    cluster_name: str | None,
    crds: Path | None,
    unknown_kind: Severity | None,
    run: Callable[[Path], str],
    part: Part | None,
) -> RepoResult:
    # (the clusters whose overlays the part completes, its files), rendered as they are asked
    # for: gitops/ last, while the overlays build.
    parts: Iterable[tuple[Collection[str], dict[str, str]]]
    if part is None:
        parts = (((c,) if c else (), files) for c, files in render_in_parts(repo))
        names = [cluster_name] if cluster_name else sorted(repo.clusters)
    else:
        names = sorted(part.clusters)
        parts = _changed_parts(repo, part)
    result = RepoResult()
    # What the loader changed and says so (a YAML 1.1 `5e8` made a number): spec warnings.
    result.findings += [
        Finding(RULE_SPEC, Severity.WARNING, note.message, file=note.file, line=note.line)
        for job in repo.jobs
        for note in job.notes
    ]
    stores: dict[tuple[str, str], SchemaStore] = {}
    # Findings on rendered objects go to the spec lines that produced them.
    specs = SpecLines(root, repo)
    with (
        build.scratch_dir("trainops-validate-", _tree_size(repo)) as work,
        build.Builds(work, run, len(names)) as builds,
    ):
        files = _write_and_start(parts, names, builds)
        # Indexed while the overlays build.
        index = _source_index(files)
        for name, built in builds.results(names):
            if isinstance(built, build.KustomizeError):
                result.findings.append(_build_finding(name, f"kustomize build failed: {built}"))
                continue
            overlay = f"overlays/{name}"
            try:
                docs = yamlio.load_text(built, f"kustomize build {overlay}", as_kubernetes=True)
                manifests, problems = documents_to_manifests(docs, name)
                if problems:
                    raise InputError(problems)
            except InputError as err:
                result.findings.append(
                    _build_finding(
                        name, f"kustomize build printed what is not Kubernetes objects: {err}"
                    )
                )
                continue
            result.built[name] = built
            _attach_sources(manifests, index, overlay, repo.clusters[name].operator.trainer_v2)
            result.resources += len(manifests)
            store = _store_for(repo.clusters[name], root, crds, stores)
            result.findings += specs.to_specs(
                validate_manifests(
                    manifests, repo.clusters[name], store, unknown_kind=unknown_kind
                ),
                manifests,
            )
    gitops = {
        rel: text
        for rel, text in files.items()
        if rel.startswith(f"{paths.GITOPS_DIR}/")
        and not rel.startswith(f"{paths.MONITORING_VALUES_DIR}/")
    }
    if gitops and cluster_name is None:
        manifests = []
        for rel, text in gitops.items():
            if rel.endswith((".yaml", ".yml")):
                found, problems = documents_to_manifests(
                    yamlio.load_text(text, rel, as_kubernetes=True)
                )
                if problems:
                    raise InputError(problems)
                manifests += found
        result.resources += len(manifests)
        store = SchemaStore(crd_schemas=load_crd_dir(crds) if crds else None)
        result.findings += validate_manifests(manifests, None, store, unknown_kind=unknown_kind)
    return result


def build_overlay(
    repo: Repository, cluster_name: str, run: Callable[[Path], str] = build.kustomize
) -> tuple[ClusterProfile, list[Manifest]]:
    """The objects `kustomize build overlays/<cluster>` makes from the repository rendered in
    memory, each pointing at the repository file it came from (as validation findings do).

    For the cluster-facing commands (live diff, server-side dry run, status), which compare
    what Git builds with what the cluster runs. Raises InputError for an unknown cluster or
    output that is not objects, and build.KustomizeError when the build fails.
    """
    if cluster_name not in repo.clusters:
        known = ", ".join(sorted(repo.clusters)) or "none"
        raise InputError(
            Problem.about("--cluster", f"unknown cluster {cluster_name!r} (known: {known})")
        )
    files = render_repository(repo)
    overlay = f"{paths.OVERLAYS_DIR}/{cluster_name}"
    with build.scratch_tree(files, "trainops-build-") as tmp:
        built = run(tmp / overlay)
    manifests, problems = documents_to_manifests(
        yamlio.load_text(built, f"kustomize build {overlay}", as_kubernetes=True), cluster_name
    )
    if problems:
        raise InputError(problems)
    cluster = repo.clusters[cluster_name]
    _attach_sources(manifests, _source_index(files), overlay, cluster.operator.trainer_v2)
    return cluster, manifests
