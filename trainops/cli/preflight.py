"""Measure the fabric a job will use: render NVIDIA nccl-tests' all_reduce_perf as an MPIJob on
the job's nodes, GPUs, network attachments and NCCL settings for one cluster, run it there
(--apply) or let the user apply it, and judge its Launcher's log.

Without --result or --apply: prints the MPIJob and its NetworkPolicy (exit 0). With --result
FILE: reads all_reduce_perf's output, prints the average and the largest message's bus
bandwidth, and exits 1 when results were wrong or the bandwidth is below the profile's
`monitoring.minBusBandwidthGBps`, 2 when the log holds no result. With --apply: creates both
objects through the kubeconfig, waits for the operator's verdict (--timeout), judges the
Launcher's log the same way (a Failed or timed-out run exits 1 with the log's tail) and deletes
them unless --keep.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from trainops.cli import cluster_args, conventions
from trainops.cli.load import job_on_cluster, load
from trainops.cluster import preflight as live
from trainops.cluster.admit import Refused
from trainops.core.errors import InputError, Problem
from trainops.core.text import one_line
from trainops.core.yaml_dump import dump_all
from trainops.facts.nccl_tests import AllReduceResult, parse_all_reduce, shortfall
from trainops.jobspec.model import ClusterProfile
from trainops.render import header
from trainops.render.preflight import preflight_objects, refused_name
from trainops.report.formats import to_text

# Scheduling 2+ GPU nodes, pulling the image, then 8 B..8 GiB doubling: minutes, not hours.
DEFAULT_APPLY_TIMEOUT = 1200.0
# Lines of a failed run's Launcher log shown (mpirun's and NCCL's last words).
FAILED_TAIL = 20


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOB", help="the job's name (jobs/JOB.yaml)")
    cluster_args.add_arguments(parser)
    parser.add_argument(
        "--image", help="the nccl-tests image (default: the profile's `monitoring.ncclTestsImage`)"
    )
    parser.add_argument(
        "--result",
        type=Path,
        metavar="LOG",
        help="the Launcher's log of a preflight run to judge (kubectl logs ...-launcher-...)",
    )
    parser.add_argument(
        "--apply",
        action="store_true",
        help="run it on the cluster (kubeconfig), wait, judge the Launcher's log, delete it",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_APPLY_TIMEOUT,
        metavar="SECONDS",
        help=f"--apply: how long to wait for the run (default {DEFAULT_APPLY_TIMEOUT:g})",
    )
    parser.add_argument(
        "--keep", action="store_true", help="--apply: leave the MPIJob on the cluster afterwards"
    )
    conventions.add_format(parser, ("text", "json"), "text", "text (default), json or yaml")


def run(args: argparse.Namespace) -> int:
    job, profile, target = job_on_cluster(load(args.root), args.job, args.cluster)
    if args.result is not None:
        return _judge(args, profile.watch.min_bus_bandwidth_gbps)
    image = args.image or profile.watch.nccl_tests_image
    if not image:
        raise InputError(
            Problem.whole_file(
                profile.file,
                "no nccl-tests image: set `monitoring.ncclTestsImage` (all_reduce_perf built"
                " with MPI, Open MPI, sshd) or pass --image",
            )
        )
    refused = refused_name(job)
    if refused is not None:
        raise InputError(Problem.whole_file(job.file, refused))
    docs = preflight_objects(job, profile, target, image)
    if args.apply:
        return _apply(args, profile, docs, job.file)
    sys.stdout.write(header(f"{job.file} and {profile.file} (trainops preflight)") + dump_all(docs))
    return 0


def _apply(
    args: argparse.Namespace, profile: ClusterProfile, docs: list[dict[str, Any]], source: str
) -> int:
    if args.timeout <= 0:
        raise InputError(Problem("--timeout", None, None, "must be a positive number"))
    client = cluster_args.connect(args, profile)
    try:
        outcome = live.run(
            client,
            docs,
            args.timeout,
            profile=profile,
            source=source,
            keep=args.keep,
            say=lambda line: print(one_line(f"preflight: {line}")),
        )
    except Refused as refused:
        sys.stdout.write(to_text(refused.findings, refused.checked))
        print(
            f"FAIL: not created on the cluster: the preflight is the job's own pods, and they"
            f" break the rules `trainops validate` holds {source} to; fix the job"
        )
        return 1
    where = f"launcher pod {outcome.pod}" if outcome.pod else "no launcher pod"
    result = parse_all_reduce(outcome.log or "")
    if outcome.state != "Succeeded" or result is None:
        why = (
            f"the preflight {outcome.state}: {outcome.message}"
            if outcome.state != "Succeeded"
            else "the preflight Succeeded but its log holds no all_reduce_perf result"
        )
        print(one_line(f"FAIL: {why} ({where})"))
        for line in (outcome.log or "").splitlines()[-FAILED_TAIL:]:
            print(one_line(f"  | {line}"))  # the pod's log: inert
        return 1
    print(one_line(f"preflight: read the log of {where}"))
    return _report(args.format, result, profile.watch.min_bus_bandwidth_gbps)


def _judge(args: argparse.Namespace, minimum: float | None) -> int:
    try:
        text = args.result.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise InputError(Problem.whole_file(str(args.result), err.strerror or str(err))) from None
    result = parse_all_reduce(text)
    if result is None:
        raise InputError(
            Problem.whole_file(
                str(args.result),
                "no all_reduce_perf result (no `# Avg bus bandwidth` line and size rows): did"
                " the run finish? Read the whole Launcher log",
            )
        )
    return _report(args.format, result, minimum)


def _report(fmt: str, result: AllReduceResult, minimum: float | None) -> int:
    problem = shortfall(result, minimum)
    if fmt == "json":
        out = {
            "avg_bus_bandwidth_gbps": result.avg_bus_bandwidth,
            "largest_bytes": result.largest_bytes,
            "largest_bus_bandwidth_gbps": result.largest_bus_bandwidth,
            "min_bus_bandwidth_gbps": minimum,
            "wrong": result.wrong,
            "problem": problem,
        }
        sys.stdout.write(json.dumps(out, indent=2, sort_keys=True) + "\n")
    else:
        sys.stdout.write(
            f"avg bus bandwidth {result.avg_bus_bandwidth:g} GB/s; at {result.largest_bytes} B:"
            f" {result.largest_bus_bandwidth:g} GB/s"
            + (f" (minimum {minimum:g})" if minimum is not None else "")
            + "\n"
            + (f"FAIL: {problem}\n" if problem else "ok\n")
        )
    return 1 if problem else 0
