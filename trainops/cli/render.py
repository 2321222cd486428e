"""Render jobs/ and clusters/ into base/, overlays/ and gitops/.

With --check, write nothing and exit 1 listing stale, missing or extra files.
"""

from __future__ import annotations

import argparse
import sys

from trainops.cli import validate
from trainops.core.errors import InputError, Problem
from trainops.core.text import one_line
from trainops.render import render_repository, write
from trainops.validate import changes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the committed output is not what render would write",
    )
    validate.add_changed_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if args.changed and not args.check:
        raise InputError(Problem.about("--changed", "only applies with --check"))
    repo, scope = validate.load_changed(args)
    for job in repo.jobs:
        for note in job.notes:
            print(one_line(f"note: {note}"), file=sys.stderr)
    if args.check:
        if scope is None:
            files = render_repository(repo)
            compared, drift = len(files), write.check(args.root, files)
        else:
            compared, drift = changes.check_changed(args.root, repo, scope)
        for item in drift:
            print(f"{item.path}: {item.reason}", file=sys.stderr)
        if drift:
            print(
                f"{len(drift)} generated file(s) out of date: run `trainops render` and commit",
                file=sys.stderr,
            )
            return 1
        print(f"{compared} generated files are current")
        return 0
    files = render_repository(repo)
    written = write.write(args.root, files)
    for item in written:
        verb = {"missing": "created", "stale": "updated", "extra": "removed"}[item.reason]
        print(f"{verb}: {item.path}")
    print(
        f"rendered {len(repo.jobs)} job(s) for {len(repo.clusters)} cluster(s):"
        f" {len(files)} files, {len(written)} changed"
    )
    return 0
