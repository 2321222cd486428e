"""Build every overlay with the real kustomize and print jobs x clusters.

Builds `overlays/<cluster>` as Argo CD or Flux will (so render first); with
--output DIR, also writes each cluster's built manifests to DIR/<cluster>.yaml.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from trainops import build
from trainops.cli import progress
from trainops.cli.load import load
from trainops.report import table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", help="build only this cluster's overlay")
    parser.add_argument("--output", type=Path, help="write built manifests to DIR/<cluster>.yaml")
    progress.add_argument(parser)


def run(args: argparse.Namespace) -> int:
    repo = load(args.root)
    if args.cluster and args.cluster not in repo.clusters:
        print(
            f"error: unknown cluster {args.cluster!r} (known: {', '.join(repo.clusters)})",
            file=sys.stderr,
        )
        return 2
    names = [args.cluster] if args.cluster else list(repo.clusters)
    try:
        build.check_up_to_date(args.root, repo)
        with progress.Progress.for_args(args, "build", len(names)) as shown:
            built = build.build_committed(
                args.root, names, shown.wrap(build.kustomize), output=args.output
            )
    except (build.OutOfDate, build.OverlayFailed) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    rows = [row for name, objects in built for row in table.rows(repo.clusters[name], objects)]
    print(table.format_table(rows))
    total = sum(int(r["gpus"]) for r in rows)
    print(
        f"\n{len(rows)} job placement(s) on {len({r['cluster'] for r in rows})} cluster(s),"
        f" {total} GPUs at the configured replica counts"
    )
    return 0
