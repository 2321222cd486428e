"""`trainops validate --server-side --cluster NAME`: the dry run, in validate's formats.

Not a subcommand of its own: `validate` hands over here when --server-side is given.
"""

from __future__ import annotations

import argparse
import sys

from trainops.cli import cluster_args, conventions
from trainops.cluster.dryrun import dry_run
from trainops.core.errors import InputError, Problem
from trainops.core.findings import Severity
from trainops.report import formats as report


def run(args: argparse.Namespace) -> int:
    if args.cluster is None:
        raise InputError(Problem.about("--server-side", "needs --cluster NAME: the cluster to ask"))
    if args.manifests:
        raise InputError(Problem.about("--server-side", "checks what Git builds; drop --manifests"))
    profile, built = cluster_args.built_for(args.root, args.cluster)
    client = cluster_args.connect(args, profile)
    findings = dry_run(client, built)
    color = args.format == "text" and conventions.color(args)
    sys.stdout.write(report.render(args.format, findings, len(built), color=color))
    return 1 if any(f.severity is Severity.ERROR for f in findings) else 0
