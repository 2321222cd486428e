"""Serve one cluster's recorded state on a local API server: try `status`, `explain` and
`live-diff` without a cluster.

It holds what Git builds for the cluster, applied as a running cluster would hold it (one job
Running with a crash-looping worker, one never applied, one with another image, one not in
Git), or, with `--state FILE`, the objects a real cluster held (`kubectl get ... -o yaml`).
A kubeconfig for it is written (`--kubeconfig FILE`, else a temporary file) and the commands
to try are printed; it serves until Ctrl-C. No Kubernetes runs: an emulator speaks the API
(docs/cluster.md, "Without a cluster"). Needs the `sandbox` extra: `pip install
'trainops[sandbox]'` (kmock).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import signal
import sys
import tempfile
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from trainops.cli.cluster_args import built_for
from trainops.core.errors import InputError, Problem
from trainops.core.yaml_dump import dump


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cluster", required=True, help="the cluster profile (clusters/NAME.yaml)")
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="FILE",
        help="write the sandbox's kubeconfig here (default: a temporary file, removed on exit)",
    )
    parser.add_argument(
        "--state",
        type=Path,
        metavar="FILE",
        help="serve these objects (a real cluster's `kubectl get ... -o yaml`) instead of the"
        " recorded state made from Git",
    )
    parser.add_argument(
        "--for-seconds",
        type=float,
        metavar="SECONDS",
        help="stop after this long (default: serve until Ctrl-C)",
    )


def _sandbox() -> Any:
    try:
        return importlib.import_module("trainops.cluster.sandbox")
    except ModuleNotFoundError as err:
        raise InputError(
            Problem.about(
                "sandbox",
                f"needs the `sandbox` extra ({err.name} is not installed): pip install"
                " 'trainops[sandbox]'",
            )
        ) from None


def run(args: argparse.Namespace) -> int:
    sandbox = _sandbox()
    profile, built = built_for(args.root, args.cluster)
    if args.state is not None:
        if not args.state.is_file():
            raise InputError(Problem.whole_file(str(args.state), "no such file"))
        state = sandbox.State(objects=sandbox.recorded_objects(args.state))
        state.story.append(f"{len(state.objects)} object(s) from {args.state}")
    else:
        state = sandbox.cluster_state(profile, built, dt.datetime.now(dt.UTC))
    with tempfile.TemporaryDirectory(prefix="trainops-sandbox-") as tmp:
        config = args.kubeconfig or Path(tmp) / "kubeconfig"
        with sandbox.running(state) as api:
            config.write_text(dump(sandbox.kubeconfig(api.url, profile)), encoding="utf-8")
            _tell(args, api.url, config, state.story)
            _wait(args.for_seconds)
    return 0


def _tell(args: argparse.Namespace, url: str, config: Path, story: list[str]) -> None:
    root = "" if str(args.root) == "." else f" --root {args.root}"
    lines = [f"sandbox: an API server on {url} holds cluster `{args.cluster}`:"]
    lines += [f"  - {line}" for line in story]
    lines.append(f"sandbox: kubeconfig {config}; in another shell:")
    job = next((s.split()[1].split("/")[1].rstrip(":") for s in story if "crash-" in s), "JOB")
    for command in (
        f"status --cluster {args.cluster}",
        f"explain {job} --cluster {args.cluster}",
        f"live-diff --cluster {args.cluster}",
    ):
        lines.append(f"  trainops{root} {command} --kubeconfig {config}")
    lines.append("sandbox: serving until Ctrl-C")
    print("\n".join(lines), flush=True)


def _wait(seconds: float | None) -> None:
    """Until Ctrl-C or SIGTERM (or `seconds`)."""
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        stop.wait(seconds)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        sys.stdout.flush()
