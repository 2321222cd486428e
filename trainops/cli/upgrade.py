"""List every addition the cluster profiles need after an upgrade of trainops, in one run, with
the lines to add; `--write` adds them (CHANGELOG.md, "Upgrading")."""

from __future__ import annotations

import argparse
import sys

from trainops.cli.load import load
from trainops.jobspec import upgrade


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--write",
        action="store_true",
        help="write the additions into the profile files (blocks that change are rewritten)",
    )


def run(args: argparse.Namespace) -> int:
    found = upgrade.plan(args.root, load)
    for profile in found.needed:
        where = profile.path.relative_to(args.root)
        if args.write:
            upgrade.write(profile)
            print(f"{where}: added")
        else:
            print(f"{where}: add (or merge into the blocks already there):")
        sys.stdout.write(
            "".join(f"  {line}" for line in upgrade.lines_to_add(profile).splitlines(True))
        )
    if not found.needed:
        print("the cluster profiles need no additions")
    for problem in found.remaining:
        print(f"also fix: {problem}")
    if args.write:
        return 1 if found.remaining else 0
    return 1 if found.needed or found.remaining else 0
