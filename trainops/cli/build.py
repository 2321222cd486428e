"""Build every overlay with the real kustomize and print jobs x clusters.

Builds `overlays/<cluster>` as Argo CD or Flux will (so render first); with
--output DIR, also writes each cluster's built manifests to DIR/<cluster>.yaml.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from trainops import build
from trainops.cli import progress
from trainops.cli.load import load
from trainops.kube.trainjob import find_runtime
from trainops.render import render_repository, write
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
    if write.check(args.root, render_repository(repo)):
        print("error: rendered output is out of date: run `trainops render` first", file=sys.stderr)
        return 1
    rows: list[dict[str, str]] = []
    names = [args.cluster] if args.cluster else list(repo.clusters)
    with progress.Progress.for_args(args, "build", len(names)) as shown:
        built = list(build.build_overlays(args.root, names, shown.wrap(build.kustomize)))
    for name, stream in built:
        if isinstance(stream, build.KustomizeError):
            print(f"error: kustomize build overlays/{name} failed:\n{stream}", file=sys.stderr)
            return 1
        if args.output:
            args.output.mkdir(parents=True, exist_ok=True)
            (args.output / f"{name}.yaml").write_text(stream)
        objs = [obj for obj in yaml.safe_load_all(stream) if obj]
        for obj in objs:
            if obj.get("kind") in table.KINDS:
                rows.append(table.summarize(repo.clusters[name], obj))
            elif obj.get("kind") == "TrainJob":
                runtime = find_runtime(obj, objs)
                rows.append(table.summarize(repo.clusters[name], obj, runtime))
    print(table.format_table(rows))
    total = sum(int(r["gpus"]) for r in rows)
    print(
        f"\n{len(rows)} job placement(s) on {len({r['cluster'] for r in rows})} cluster(s),"
        f" {total} GPUs at the configured replica counts"
    )
    return 0
