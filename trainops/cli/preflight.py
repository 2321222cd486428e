"""Measure the fabric a job will use: render NVIDIA nccl-tests' all_reduce_perf as an MPIJob on
the job's nodes, GPUs, network attachments and NCCL settings for one cluster (apply it with
kubectl or through Git), then judge its Launcher's log with --result.

Without --result: prints the MPIJob and its NetworkPolicy (exit 0). With --result FILE: reads
all_reduce_perf's output, prints the average and the largest message's bus bandwidth, and
exits 1 when results were wrong or the bandwidth is below the profile's
`monitoring.minBusBandwidthGBps`, 2 when the log holds no result.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from trainops.cli.load import job_on_cluster, load
from trainops.core.errors import InputError, Problem
from trainops.core.yaml_dump import dump_all
from trainops.facts.nccl_tests import parse_all_reduce, shortfall
from trainops.render import header
from trainops.render.preflight import preflight_objects


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", metavar="JOB", help="the job's name (jobs/JOB.yaml)")
    parser.add_argument("--cluster", required=True, help="the cluster profile (clusters/NAME.yaml)")
    parser.add_argument(
        "--image", help="the nccl-tests image (default: the profile's `monitoring.ncclTestsImage`)"
    )
    parser.add_argument(
        "--result",
        type=Path,
        metavar="LOG",
        help="the Launcher's log of a preflight run to judge (kubectl logs ...-launcher-...)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")


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
    docs = preflight_objects(job, profile, target, image)
    sys.stdout.write(header(f"{job.file} and {profile.file} (trainops preflight)") + dump_all(docs))
    return 0


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
    problem = shortfall(result, minimum)
    if args.format == "json":
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
