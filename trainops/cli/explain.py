"""Explain why a training job is not running or failed: the likely cause first, then evidence.

Reads the job's conditions, its pods (Pending and the scheduler's reason, image pulls,
OOMKilled, CrashLoopBackOff, evictions, preemption), Kueue or Volcano state, recent events
and the failing containers' logs (torchrun's failing child first), hangs and NCCL's
network. Exit 0 when the job is running or succeeded, 1 when something is wrong, 2 when
the cluster cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys

from trainops.cli import cluster_args, conventions
from trainops.cluster.explain import DEFAULT_TAIL_LINES, explain
from trainops.cluster.hang import DEFAULT_STALL_SECONDS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOB", help="the job's name (jobs/JOB.yaml)")
    cluster_args.add_arguments(parser)
    parser.add_argument(
        "--tail",
        type=int,
        default=DEFAULT_TAIL_LINES,
        metavar="N",
        help=f"log lines of the failing container to show (default: {DEFAULT_TAIL_LINES})",
    )
    parser.add_argument(
        "--stall-after",
        type=int,
        default=DEFAULT_STALL_SECONDS,
        metavar="SECONDS",
        help="a running job with no completed training step for this long is Hung"
        f" (default: {DEFAULT_STALL_SECONDS}; keep it above the trainer's log interval"
        " times its step time)",
    )
    conventions.add_format(parser, ("text", "json"), "text", "text (default), json or yaml")


def run(args: argparse.Namespace) -> int:
    profile, built = cluster_args.built_for(args.root, args.cluster)
    client = cluster_args.connect(args, profile)
    result = explain(
        client,
        profile,
        args.job,
        built,
        tail_lines=max(1, args.tail),
        stall_seconds=max(1, args.stall_after),
    )
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(result.text())
    return 0 if result.healthy else 1
