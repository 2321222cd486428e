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
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from trainops import build
from trainops.cli import cluster_args, conventions, progress
from trainops.cli.load import load
from trainops.core.errors import InputError, Problem
from trainops.core.findings import Finding
from trainops.core.git import default_base
from trainops.jobspec.checked import CheckedSpecs
from trainops.jobspec.model import Repository
from trainops.report import formats as report
from trainops.validate import changed_files, changes, command
from trainops.validate.schemas import DEFAULT_KUBERNETES_VERSION


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--manifests",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="validate these YAML files or directories instead of the rendered repository",
    )
    parser.add_argument("--cluster", help="only this cluster (its profile's Kubernetes version)")
    conventions.add_format(
        parser, report.FORMATS, "text", "output format (default: text; yaml: the json document)"
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
        choices=sorted(command.UNKNOWN_KINDS),
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


def _change(root: Path, base: str) -> tuple[changed_files.Change, CheckedSpecs | None]:
    change = changed_files.change_from(root, base)
    return change, changed_files.specs_checked(change)


def load_changed(args: argparse.Namespace) -> tuple[Repository, changes.Scope | None]:
    """The repository and, with `--changed`, the scope of the change (described on stderr);
    specs the change does not reach are loaded without their checks
    (`trainops.jobspec.checked`)."""
    if not args.changed:
        if args.base is not None:
            raise InputError(Problem.about("--base", "only applies with --changed"))
        return load(args.root), None
    base = args.base if args.base is not None else default_base(args.root)
    # git walks the working tree while the specs are read (5,000 specs: 0.4 s each).
    with ThreadPoolExecutor(max_workers=1) as pool:
        pending = pool.submit(_change, args.root, base)
        repo = load(args.root, lambda: pending.result()[1])
        change, checked = pending.result()
    scope = changes.affected(args.root, repo, change, getattr(args, "cluster", None))
    for line in changes.describe(scope, repo, checked):
        print(line, file=sys.stderr)
    return repo, scope


def run(args: argparse.Namespace) -> int:
    if args.server_side:
        from trainops.cli import server_side  # noqa: PLC0415 (the cluster client: only here)

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
            sys.stdout.write(report.render(args.format, command.spec_findings(err), 0))
        raise
    color = args.format == "text" and conventions.color(args)
    sys.stdout.write(report.render(args.format, findings, resources, color=color))
    return 1 if report.failed(findings) else 0


def _validate(args: argparse.Namespace) -> tuple[list[Finding], int]:
    """Findings and the number of objects checked; raise InputError for bad input."""
    options = command.Options(
        crds=args.crds,
        unknown_kind=command.UNKNOWN_KINDS[args.unknown_kinds],
        kubeconform=args.kubeconform,
    )
    if args.manifests:
        cluster = command.cluster_named(load(args.root), args.cluster) if args.cluster else None
        outcome = command.validate_files(
            args.root, args.manifests, cluster, options, args.kubernetes_version
        )
        return outcome.findings, outcome.resources
    repo, scope = load_changed(args)
    total = 1 if args.cluster else len(repo.clusters)
    if scope is not None and not scope.everything:
        total = len(scope.checked)
    with progress.Progress.for_args(args, "validate", total) as shown:
        outcome = command.validate_repo(
            args.root, repo, scope, args.cluster, options, run=shown.wrap(build.kustomize)
        )
    return outcome.findings, outcome.resources
