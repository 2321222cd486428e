"""GPU capacity per cluster and GPU product (and queue): declared against requested by Git.

Declared: the cluster profile's `capacity:` (nodes per product, GPU quota per queue); a
product or queue without it is shown as `not declared` and its headroom as `cannot judge`.
Requested: every job in Git on that cluster, at its configured size and (MIN) with elastic
jobs at minReplicas. With --base REF, the change the working tree makes against REF.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from trainops import diff
from trainops.cli import conventions
from trainops.cli.load import load
from trainops.core.errors import InputError, Problem
from trainops.core.git import GitError
from trainops.jobspec.model import Repository
from trainops.report import capacity, capacity_view

INPUTS = ("jobs", "clusters", "trainops.yaml")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", help="only this cluster")
    parser.add_argument(
        "--base",
        metavar="REF",
        help="also show the change against the jobs and clusters committed at REF",
    )
    conventions.add_format(parser, ("text", "json"), "text", "text (default), json or yaml")


def repository_at(root: Path, ref: str, dest: Path) -> Repository:
    """The repository's inputs (jobs/, clusters/, trainops.yaml) at git `ref`, loaded."""
    diff.extract_ref(root, ref, dest, INPUTS)
    return load(dest)


def run(args: argparse.Namespace) -> int:
    repo = load(args.root)
    if args.cluster and args.cluster not in repo.clusters:
        known = ", ".join(sorted(repo.clusters))
        raise InputError(
            Problem.about("--cluster", f"unknown cluster {args.cluster!r} (known: {known})")
        )
    fleet = capacity.repository_fleet(repo, args.cluster)
    changes = None
    if args.base:
        with tempfile.TemporaryDirectory(prefix="trainops-capacity-") as tmp:
            try:
                base = repository_at(args.root, args.base, Path(tmp))
            except GitError as err:
                raise InputError(Problem.whole_file(str(args.root), f"git: {err}")) from None
            only = args.cluster if args.cluster in base.clusters else None
            before = capacity.repository_fleet(base, only)
            if args.cluster and only is None:
                before = capacity.Fleet()
        changes = capacity.compare(before, fleet)
    if args.format == "json":
        sys.stdout.write(capacity_view.to_json(fleet, changes))
    else:
        sys.stdout.write(capacity_view.format_text(fleet, changes))
    return 0
