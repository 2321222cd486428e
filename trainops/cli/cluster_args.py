"""Options and set-up shared by the cluster-facing commands (status, explain, live-diff,
validate --server-side): which cluster profile, which kubeconfig and context, how long to
wait, and the objects Git builds for that cluster."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from trainops.build import KustomizeError
from trainops.cli.load import load
from trainops.cluster import DEFAULT_TIMEOUT_SECONDS
from trainops.core.errors import InputError, Problem
from trainops.core.manifest import Manifest
from trainops.jobspec.model import ClusterProfile
from trainops.validate.repo import build_overlay

if TYPE_CHECKING:
    from trainops.cluster.client import Client


def add_connection_arguments(parser: argparse.ArgumentParser) -> None:
    """--context, --kubeconfig, --request-timeout (kubectl's names and meaning)."""
    parser.add_argument(
        "--context",
        help="kubeconfig context to use (default: the profile's `context`, else current-context)",
    )
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="FILE",
        help="kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)",
    )
    parser.add_argument(
        "--request-timeout",
        type=float,
        default=DEFAULT_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help=f"how long to wait for each API request (default: {DEFAULT_TIMEOUT_SECONDS:g})",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", required=True, help="the cluster profile (clusters/NAME.yaml)")
    add_connection_arguments(parser)


def built_for(root: Path, cluster: str) -> tuple[ClusterProfile, list[Manifest]]:
    """The cluster's profile and what `kustomize build overlays/<cluster>` makes of Git."""
    try:
        return build_overlay(load(root), cluster)
    except KustomizeError as err:
        raise InputError(
            Problem.whole_file(f"overlays/{cluster}", f"kustomize build failed: {err}")
        ) from None


def connect(args: argparse.Namespace, profile: ClusterProfile) -> Client:
    """A client for the profile's cluster, through the user's kubeconfig."""
    if args.request_timeout <= 0:
        raise InputError(Problem.about("--request-timeout", "must be a positive number"))
    # pykube and requests, only for a command that talks to a cluster (`validate` parses
    # these options for `--server-side` alone).
    from trainops.cluster.client import Client  # noqa: PLC0415
    from trainops.cluster.kubeconfig import resolve  # noqa: PLC0415

    target = resolve(args.kubeconfig, args.context, profile.context, profile.file)
    return Client(target, timeout=args.request_timeout)
