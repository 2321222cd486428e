"""Render jobs/ and clusters/ into base/, overlays/ and gitops/.

With --check, write nothing and exit 1 listing stale, missing or extra files.
"""

from __future__ import annotations

import argparse
import sys

from trainops.cli.load import load
from trainops.render import render_repository, write


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 if the committed output is not what render would write",
    )


def run(args: argparse.Namespace) -> int:
    repo = load(args.root)
    for job in repo.jobs:
        for note in job.notes:
            print(f"note: {note}", file=sys.stderr)
    files = render_repository(repo)
    if args.check:
        drift = write.check(args.root, files)
        for item in drift:
            print(f"{item.path}: {item.reason}", file=sys.stderr)
        if drift:
            print(
                f"{len(drift)} generated file(s) out of date: run `trainops render` and commit",
                file=sys.stderr,
            )
            return 1
        print(f"{len(files)} generated files are current")
        return 0
    changes = write.write(args.root, files)
    for item in changes:
        verb = {"missing": "created", "stale": "updated", "extra": "removed"}[item.reason]
        print(f"{verb}: {item.path}")
    print(
        f"rendered {len(repo.jobs)} job(s) for {len(repo.clusters)} cluster(s):"
        f" {len(files)} files, {len(changes)} changed"
    )
    return 0
