"""Diff what Git builds for a cluster against what runs there; exit 1 when they differ.

Every object of `kustomize build overlays/<cluster>` is compared with the live object
of the same kind, namespace and name, ignoring status, managed fields and what the API
server, operators and admission webhooks default or stamp (see docs/cluster.md). The
output is a unified diff (`-` live, `+` Git), usable in CI.
"""

from __future__ import annotations

import argparse
import sys

from trainops.cli import cluster_args
from trainops.cluster import compare
from trainops.cluster.status import require_namespaces
from trainops.core.text import inert_lines


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cluster_args.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    profile, built = cluster_args.built_for(args.root, args.cluster)
    client = cluster_args.connect(args, profile)
    require_namespaces(client, [m.namespace for m in built if m.namespace], profile)
    ordered = sorted(built, key=lambda m: (m.file or "", m.kind, m.namespace or "", m.name or ""))
    # Every kind first: a missing CRD stops the command before any diff is printed.
    resources = [client.require(m.api_version, m.kind) for m in ordered]
    differing = 0
    for m, resource in zip(ordered, resources, strict=True):
        namespace = m.namespace if resource.namespaced else None
        live = client.get(resource, namespace, m.name or "")
        where = f"{m.kind} {namespace + '/' if namespace else ''}{m.name}"
        text = compare.unified_diff(
            m.data,
            live,
            git_label=f"git/{m.file} {where}",
            live_label=f"live/{profile.name} {where}" + ("" if live else " (not on the cluster)"),
        )
        if text:
            differing += 1
            sys.stdout.write(inert_lines(text))  # the live object is the cluster's
    noun = "object differs" if differing == 1 else "objects differ"
    print(
        f"{differing} of {len(built)} {noun} between Git and cluster {profile.name}"
        f" (context {client.target.context})",
        file=sys.stderr,
    )
    return 1 if differing else 0
