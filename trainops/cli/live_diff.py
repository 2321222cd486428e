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
    differing, unserved = 0, []
    for m in ordered:
        resource = client.resource(m.api_version, m.kind)
        namespace = m.namespace if resource is None or resource.namespaced else None
        where = f"{m.kind} {namespace + '/' if namespace else ''}{m.name}"
        if resource is None:
            # An optional CRD the cluster lacks (no Prometheus Operator): say so, compare the rest.
            unserved.append(
                f"not compared: {where} ({m.file}): {client.not_served(m.api_version, m.kind)}"
            )
            continue
        live = client.get(resource, namespace, m.name or "")
        text = compare.unified_diff(
            m.data,
            live,
            git_label=f"git/{m.file} {where}",
            live_label=f"live/{profile.name} {where}" + ("" if live else " (not on the cluster)"),
        )
        if text:
            differing += 1
            sys.stdout.write(inert_lines(text))  # the live object is the cluster's
    for line in unserved:
        print(line, file=sys.stderr)
    compared = len(built) - len(unserved)
    noun = "object differs" if differing == 1 else "objects differ"
    if unserved:
        noun = f"compared {noun}"
    tail = f"; {len(unserved)} not compared (kind not served)" if unserved else ""
    print(
        f"{differing} of {compared} {noun} between Git and cluster {profile.name}"
        f" (context {client.target.context}){tail}",
        file=sys.stderr,
    )
    return 1 if differing or unserved else 0
