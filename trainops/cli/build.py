"""Build every overlay with the real kustomize and print jobs x clusters.

Builds `overlays/<cluster>` as Argo CD or Flux will (so render first); with
--output DIR, also writes each cluster's built manifests to DIR/<cluster>.yaml.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from trainops import build as kustomize
from trainops.core import paths
from trainops.render import render_repository, write
from trainops.spec.load import load_repository

COLUMNS = (
    "cluster",
    "job",
    "namespace",
    "shape",
    "pods",
    "gpus",
    "gpu product",
    "scheduler",
    "nccl",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", help="build only this cluster's overlay")
    parser.add_argument("--output", type=Path, help="write built manifests to DIR/<cluster>.yaml")


def _container_env(template: dict[str, Any]) -> dict[str, str]:
    container = template["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def summarize(cluster: str, job: dict[str, Any]) -> dict[str, str]:
    """One table row from a built PyTorchJob."""
    spec = job["spec"]
    replicas = spec["pytorchReplicaSpecs"]
    pods = sum(r.get("replicas", 1) for r in replicas.values())
    gpus = 0
    template: dict[str, Any] = {}
    for replica in replicas.values():
        template = replica["template"]
        limits = template["spec"]["containers"][0].get("resources", {}).get("limits", {})
        per_pod = sum(int(v) for k, v in limits.items() if k.endswith("/gpu"))
        gpus += per_pod * replica.get("replicas", 1)
    elastic = spec.get("elasticPolicy")
    shape = (
        f"elastic {elastic['minReplicas']}-{elastic['maxReplicas']}"
        if elastic
        else "+".join(sorted(replicas))
    )
    scheduler = template["spec"].get("schedulerName") or (
        "kueue" if "kueue.x-k8s.io/queue-name" in job["metadata"].get("labels", {}) else "default"
    )
    env = _container_env(template)
    nccl = {"0": "rdma", "1": "tcp"}.get(env.get("NCCL_IB_DISABLE", ""), "-")
    product = ",".join(template["spec"].get("nodeSelector", {}).values()) or "-"
    return {
        "cluster": cluster,
        "job": job["metadata"]["name"],
        "namespace": job["metadata"].get("namespace", ""),
        "shape": shape,
        "pods": str(pods),
        "gpus": str(gpus),
        "gpu product": product,
        "scheduler": scheduler,
        "nccl": nccl,
    }


def table(rows: list[dict[str, str]]) -> str:
    widths = {c: max([len(c), *(len(r[c]) for r in rows)]) for c in COLUMNS}
    lines = ["  ".join(c.upper().ljust(widths[c]) for c in COLUMNS)]
    lines += ["  ".join(r[c].ljust(widths[c]) for c in COLUMNS) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def run(args: argparse.Namespace) -> int:
    repo = load_repository(args.root)
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
    for name in repo.clusters:
        if args.cluster and name != args.cluster:
            continue
        try:
            stream = kustomize.build(args.root / paths.OVERLAYS_DIR / name)
        except kustomize.KustomizeError as err:
            print(f"error: kustomize build overlays/{name} failed:\n{err}", file=sys.stderr)
            return 1
        if args.output:
            args.output.mkdir(parents=True, exist_ok=True)
            (args.output / f"{name}.yaml").write_text(stream)
        for obj in yaml.safe_load_all(stream):
            if obj and obj.get("kind") == "PyTorchJob":
                rows.append(summarize(name, obj))
    print(table(rows))
    total = sum(int(r["gpus"]) for r in rows)
    print(
        f"\n{len(rows)} job placement(s) on {len({r['cluster'] for r in rows})} cluster(s),"
        f" {total} GPUs at the configured replica counts"
    )
    return 0
