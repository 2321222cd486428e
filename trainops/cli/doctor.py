"""Check that the cluster runs what its profile assumes, before the first job: one line per check.

Against the live API through your kubeconfig: the server version against `kubernetesVersion`,
every custom kind the overlay renders served at that version, the operators' Deployments and
the flags the profile relies on, Kueue's integrations against `installed.kueue`, each GPU
product's nodes and device plugin, the RDMA device plugin, the DCGM exporter, the delivery
tool and what its service account may do. Exit 0 when every check passes, 1 when one fails,
2 when the cluster cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import sys

from trainops.build import KustomizeError
from trainops.cli import cluster_args, conventions
from trainops.cli.load import load
from trainops.cluster.doctor_run import examine
from trainops.core.errors import InputError, Problem
from trainops.validate.repo import build_overlay


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cluster_args.add_arguments(parser)
    conventions.add_format(
        parser, ("text", "json"), "text", "text: one line per check; json (or yaml): the report"
    )


def run(args: argparse.Namespace) -> int:
    repo = load(args.root)
    try:
        profile, built = build_overlay(repo, args.cluster)
    except KustomizeError as err:
        raise InputError(
            Problem.whole_file(f"overlays/{args.cluster}", f"kustomize build failed: {err}")
        ) from None
    client = cluster_args.connect(args, profile)
    report = examine(client, repo, profile, built)
    if args.format == "json":
        sys.stdout.write(json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(report.text())
    return 1 if report.failed else 0
