"""What `trainops validate` runs, without the command line: the manifests mode and the
repository mode (all of it or what a change reaches), kubeconform beside the schemas, and bad
input as findings for the machine formats.

The CLI parses its options into these calls and prints what they return; progress is the
CLI's too (it hands in the kustomize runner it wraps).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from trainops import build
from trainops.core.errors import InputError, Problem
from trainops.core.findings import Finding, Severity
from trainops.core.limits import read_bounded
from trainops.jobspec.model import ClusterProfile, Repository
from trainops.validate import changes, kubeconform, locate
from trainops.validate.crd import load_crd_dir
from trainops.validate.load import load_manifests
from trainops.validate.pipeline import validate_manifests
from trainops.validate.repo import RULE_SPEC, validate_repository
from trainops.validate.schemas import DEFAULT_KUBERNETES_VERSION, SchemaStore

UNKNOWN_KINDS = {"error": Severity.ERROR, "warning": Severity.WARNING, "ignore": None}
"""`--unknown-kinds`: the severity of an object of a kind with no schema (None: not reported)."""


@dataclass(frozen=True)
class Options:
    """What every mode takes from the command line."""

    crds: Path | None = None
    """`--crds DIR`: CRD YAML to validate custom resources against."""
    unknown_kind: Severity | None = Severity.ERROR
    """What an object of a kind with no schema is."""
    kubeconform: bool = False
    """Also run kubeconform on the same objects with the same schemas."""

    def __post_init__(self) -> None:
        if self.kubeconform and shutil.which("kubeconform") is None:
            raise InputError(Problem.about("--kubeconform", "`kubeconform` is not on PATH"))


@dataclass(frozen=True)
class Outcome:
    findings: list[Finding]
    resources: int
    """The number of objects checked."""


def cluster_named(repo: Repository, name: str) -> ClusterProfile:
    """The profile `--cluster` names; bad input listing the known ones when there is none."""
    if name not in repo.clusters:
        known = ", ".join(sorted(repo.clusters)) or "none"
        raise InputError(Problem.about("--cluster", f"unknown cluster {name!r} (known: {known})"))
    return repo.clusters[name]


def validate_files(
    root: Path,
    files: Sequence[Path],
    cluster: ClusterProfile | None,
    options: Options,
    kubernetes_version: str | None = None,
) -> Outcome:
    """`--manifests`: these files or directories, with `cluster`'s context when given.

    The core schemas are those of `kubernetes_version`, else the cluster's, else the default;
    the CRDs those of `--crds`, else the profile's `crds` (confined to the repository).
    """
    version = kubernetes_version or (
        cluster.kubernetes_version if cluster else DEFAULT_KUBERNETES_VERSION
    )
    crd_dir = options.crds or (root / cluster.crds if cluster and cluster.crds else None)
    confine = None if options.crds else root
    store = SchemaStore(version, load_crd_dir(crd_dir, confine) if crd_dir else None)
    manifests = load_manifests(list(files), cluster.name if cluster else None)
    findings = validate_manifests(manifests, cluster, store, unknown_kind=options.unknown_kind)
    if options.kubeconform:
        names = sorted({m.file for m in manifests if m.file})
        texts = {f: read_bounded(Path(f), f).decode("utf-8") for f in names}
        findings += kubeconform.findings(texts, version)
    return Outcome(findings, len(manifests))


def validate_repo(
    root: Path,
    repo: Repository,
    scope: changes.Scope | None,
    cluster_name: str | None,
    options: Options,
    *,
    run: Callable[[Path], str] = build.kustomize,
) -> Outcome:
    """The rendered repository, built by `run` overlay by overlay: all of it (`scope` None)
    or what a change reaches."""
    if scope is None:
        result = validate_repository(
            root,
            repo,
            cluster_name=cluster_name,
            crds=options.crds,
            unknown_kind=options.unknown_kind,
            run=run,
        )
    else:
        result = changes.validate_changed(
            root,
            repo,
            scope,
            cluster_name=cluster_name,
            crds=options.crds,
            unknown_kind=options.unknown_kind,
            run=run,
        )
    # One finding per mistake: the same finding on every replica type and cluster is one.
    findings = locate.merge(result.findings)
    if options.kubeconform:
        for name, text in result.built.items():
            findings += kubeconform.findings(
                {f"overlays/{name}/kustomization.yaml": text},
                repo.clusters[name].kubernetes_version,
            )
    return Outcome(findings, result.resources)


def spec_findings(err: InputError) -> list[Finding]:
    """Each problem of bad input as a `spec` error finding (file and line where it has them).

    Problems about an option rather than a file (`--cluster`, `<kubernetes version>`) carry
    no file: the name goes into the message, where a reader still sees it.
    """
    findings = []
    for problem in err.problems:
        pseudo = problem.file.startswith(("-", "<"))
        findings.append(
            Finding(
                RULE_SPEC,
                Severity.ERROR,
                f"{problem.file}: {problem.message}" if pseudo else problem.message,
                file=None if pseudo else problem.file,
                line=None if pseudo else problem.line,
            )
        )
    return findings
