"""Validate rendered output (or any manifests) against strict schemas and the policy rules.

Without --manifests: render in memory, `kustomize build` each overlay, validate
every built object and the gitops/ objects. With --manifests: validate those
files or directories (any Kubernetes YAML). Exit 0 clean (warnings allowed),
1 error findings, 2 bad input or usage.

Bad input (a job or cluster spec violating its schema, unreadable YAML, a
malformed CRD) is reported on stderr and, in the machine formats (json, junit,
sarif, github), also as `spec` findings on stdout, so CI shows it where it shows
every other finding; the exit code stays 2.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from trainops import build
from trainops.cli import cluster_args, progress, server_side
from trainops.cli.load import load
from trainops.core.errors import InputError, Problem
from trainops.core.findings import Finding, Severity
from trainops.core.git import default_base
from trainops.core.limits import read_bounded
from trainops.report import formats as report
from trainops.spec.model import ClusterProfile, Repository
from trainops.validate import changes, kubeconform
from trainops.validate.crd import load_crd_dir
from trainops.validate.load import load_manifests
from trainops.validate.pipeline import validate_manifests
from trainops.validate.repo import RULE_SPEC, validate_repository
from trainops.validate.schemas import DEFAULT_KUBERNETES_VERSION, SchemaStore

UNKNOWN_KINDS = {"error": Severity.ERROR, "warning": Severity.WARNING, "ignore": None}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--manifests",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="validate these YAML files or directories instead of the rendered repository",
    )
    parser.add_argument("--cluster", help="only this cluster (its profile's Kubernetes version)")
    parser.add_argument(
        "--format", choices=report.FORMATS, default="text", help="output format (default: text)"
    )
    parser.add_argument(
        "--crds",
        type=Path,
        metavar="DIR",
        help="validate CRD kinds against the CustomResourceDefinition YAML in DIR",
    )
    parser.add_argument(
        "--kubernetes-version",
        metavar="X.Y",
        help="Kubernetes version of the core schemas for --manifests without --cluster"
        f" (default {DEFAULT_KUBERNETES_VERSION})",
    )
    parser.add_argument(
        "--unknown-kinds",
        choices=sorted(UNKNOWN_KINDS),
        default="error",
        help="what an object of a kind with no schema is (default: error)",
    )
    parser.add_argument(
        "--kubeconform",
        action="store_true",
        help="also run kubeconform (must be on PATH) on the same objects with the same schemas",
    )
    parser.add_argument(
        "--server-side",
        action="store_true",
        help="ask the cluster of --cluster instead: a server-side dry-run apply of every built"
        " object (admission webhooks, quotas, CEL rules, CRDs); findings have rule `server`",
    )
    add_changed_arguments(parser)
    cluster_args.add_connection_arguments(parser)
    progress.add_argument(parser)


def add_changed_arguments(parser: argparse.ArgumentParser) -> None:
    """`--changed [--base REF]`, shared with `render --check`."""
    parser.add_argument(
        "--changed",
        action="store_true",
        help="only what the change from --base to the working tree can reach (untracked files"
        " included); says on stderr what it skipped and why",
    )
    parser.add_argument(
        "--base",
        metavar="REF",
        help="with --changed: the commit to compare with (default: the merge base with main)",
    )


def changed_scope(args: argparse.Namespace, repo: Repository) -> changes.Scope | None:
    """The scope of `--changed` (None without it), described on stderr."""
    if not args.changed:
        if args.base is not None:
            raise InputError(Problem.about("--base", "only applies with --changed"))
        return None
    base = args.base if args.base is not None else default_base(args.root)
    scope = changes.affected(args.root, repo, base, getattr(args, "cluster", None))
    for line in changes.describe(scope, repo):
        print(line, file=sys.stderr)
    return scope


def _cluster_profile(args: argparse.Namespace) -> ClusterProfile | None:
    if args.cluster is None:
        return None
    repo = load(args.root)
    if args.cluster not in repo.clusters:
        known = ", ".join(sorted(repo.clusters)) or "none"
        raise InputError(
            Problem.about("--cluster", f"unknown cluster {args.cluster!r} (known: {known})")
        )
    return repo.clusters[args.cluster]


def _run_kubeconform(texts: dict[str, str], version: str) -> list[Finding]:
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory(prefix="trainops-kubeconform-") as tmp:
        kubeconform.write_schema_layout(Path(tmp), version)
        for source, text in sorted(texts.items()):
            code, output = kubeconform.run_kubeconform(text, Path(tmp), version)
            if code != 0:
                findings.append(
                    Finding("schema", Severity.ERROR, f"kubeconform: {output.strip()}", file=source)
                )
    return findings


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


def run(args: argparse.Namespace) -> int:
    if args.server_side:
        return server_side.run(args)
    if args.changed and (args.manifests or args.server_side):
        raise InputError(
            Problem.about("--changed", "does not apply with --manifests or --server-side")
        )
    if args.context or args.kubeconfig:
        raise InputError(Problem.about("--context/--kubeconfig", "only apply with --server-side"))
    try:
        findings, resources = _validate(args)
    except InputError as err:
        if args.format != "text":
            # The terminal gets the usual `error: file:line:column: ...` lines from
            # the caller (exit 2); a machine reading stdout gets the same as findings.
            sys.stdout.write(report.render(args.format, spec_findings(err), 0))
        raise
    color = args.format == "text" and sys.stdout.isatty()
    sys.stdout.write(report.render(args.format, findings, resources, color=color))
    return 1 if report.failed(findings) else 0


def _validate(args: argparse.Namespace) -> tuple[list[Finding], int]:
    """Findings and the number of objects checked; raise InputError for bad input."""
    unknown = UNKNOWN_KINDS[args.unknown_kinds]
    if args.kubeconform and shutil.which("kubeconform") is None:
        raise InputError(Problem.about("--kubeconform", "`kubeconform` is not on PATH"))
    if args.manifests:
        cluster = _cluster_profile(args)
        version = args.kubernetes_version or (
            cluster.kubernetes_version if cluster else DEFAULT_KUBERNETES_VERSION
        )
        crd_dir = args.crds or (args.root / cluster.crds if cluster and cluster.crds else None)
        confine = None if args.crds else args.root
        store = SchemaStore(version, load_crd_dir(crd_dir, confine) if crd_dir else None)
        manifests = load_manifests(args.manifests, cluster.name if cluster else None)
        findings = validate_manifests(manifests, cluster, store, unknown_kind=unknown)
        resources = len(manifests)
        if args.kubeconform:
            files = sorted({m.file for m in manifests if m.file})
            texts = {f: read_bounded(Path(f), f).decode("utf-8") for f in files}
            findings += _run_kubeconform(texts, version)
    else:
        repo = load(args.root)
        scope = changed_scope(args, repo)
        total = 1 if args.cluster else len(repo.clusters)
        if scope is not None and not scope.everything:
            total = len(scope.checked)
        with progress.Progress.for_args(args, "validate", total) as shown:
            run = shown.wrap(build.kustomize)
            if scope is None:
                result = validate_repository(
                    args.root,
                    repo,
                    cluster_name=args.cluster,
                    crds=args.crds,
                    unknown_kind=unknown,
                    run=run,
                )
            else:
                result = changes.validate_changed(
                    args.root,
                    repo,
                    scope,
                    cluster_name=args.cluster,
                    crds=args.crds,
                    unknown_kind=unknown,
                    run=run,
                )
        findings, resources = result.findings, result.resources
        if args.kubeconform:
            for name, text in result.built.items():
                findings += _run_kubeconform(
                    {f"overlays/{name}/kustomization.yaml": text},
                    repo.clusters[name].kubernetes_version,
                )
    return findings, resources
