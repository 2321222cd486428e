"""Show a running job's pods as its cluster's Prometheus sees them now: GPU utilisation and
memory per pod (DCGM exporter), samples/s, loss, step and the age of the last completed step.

Prometheus is the profile's `monitoring.prometheusUrl` (or --prometheus): an http(s) URL, or
the API server's service-proxy path reached with the kubeconfig. Exit 0 with the table, 2 with
one line when there is no Prometheus to ask or it cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys

from trainops.cli import cluster_args, conventions
from trainops.cli.load import job_on_cluster, load
from trainops.cluster import top
from trainops.cluster.client import Client
from trainops.cluster.errors import ClusterError
from trainops.cluster.prometheus import Prometheus


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOB", help="the job's name (jobs/JOB.yaml)")
    cluster_args.add_arguments(parser)
    parser.add_argument(
        "--prometheus",
        metavar="URL",
        help="Prometheus to query (default: the profile's `monitoring.prometheusUrl`)",
    )
    conventions.add_format(parser, ("table", "json"), "table", "table (default), json or yaml")


def run(args: argparse.Namespace) -> int:
    job, profile, _ = job_on_cluster(load(args.root), args.job, args.cluster)
    url = args.prometheus or profile.watch.prometheus_url
    if not url:
        raise ClusterError(
            f"no Prometheus for cluster `{profile.name}`: set `monitoring.prometheusUrl` in"
            f" {profile.file} (or pass --prometheus URL)"
        )
    client: Client | None = None
    if not url.startswith(("http://", "https://")):
        client = cluster_args.connect(args, profile)
    prometheus = Prometheus(url, client, timeout=args.request_timeout)
    rows = top.collect(prometheus, job.namespace, job.name)
    if args.format == "json":
        out: dict[str, object] = {
            "cluster": profile.name,
            "job": job.name,
            "namespace": job.namespace,
            "pods": [r.to_dict() for r in rows],
        }
        sys.stdout.write(json.dumps(out, indent=2, sort_keys=True) + "\n")
    elif rows:
        sys.stdout.write(top.table(rows))
    else:
        sys.stdout.write(
            f"no metrics for job {job.name} in {job.namespace} on {profile.name}: not running,"
            " or not scraped yet\n"
        )
    return 0
