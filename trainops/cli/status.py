"""Show the training jobs on a cluster, and whether each job of Git is there and in sync.

For every PyTorchJob, TFJob, MPIJob (and TrainJob) in the cluster profile's namespaces:
phase, replicas per type (active/succeeded/failed), restarts, GPUs, age, Kueue admission
or Volcano PodGroup phase; for every job Git builds for the cluster: whether it is on
the cluster and whether its spec matches. A table on a terminal, JSON otherwise.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys

from trainops.cli import cluster_args, conventions
from trainops.cluster import status
from trainops.cluster.hang import DEFAULT_STALL_SECONDS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cluster_args.add_arguments(parser)
    conventions.add_format(
        parser,
        ("table", "json"),
        "table",
        "table (the default, to a terminal and a pipe alike), json or yaml",
    )
    parser.add_argument(
        "--stall-after",
        type=int,
        default=DEFAULT_STALL_SECONDS,
        metavar="SECONDS",
        help="a running job with no completed training step for this long is Hung"
        f" (default: {DEFAULT_STALL_SECONDS})",
    )


def run(args: argparse.Namespace) -> int:
    profile, built = cluster_args.built_for(args.root, args.cluster)
    client = cluster_args.connect(args, profile)
    now = dt.datetime.now(dt.UTC)
    rows = status.collect(client, profile, built, now, max(1, args.stall_after))
    if args.format == "table":
        sys.stdout.write(status.table(rows))
    else:
        out = {
            "cluster": profile.name,
            "context": client.target.context,
            "jobs": [r.to_dict() for r in rows],
        }
        sys.stdout.write(json.dumps(out, indent=2, sort_keys=True) + "\n")
    return 0
