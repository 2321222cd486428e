"""Run a job's built PyTorchJob here, one process group per replica, as the operator would;
an MPIJob as its Launcher's mpirun against local worker hosts (trainops.runlocal.mpi).

Takes the job from the committed, kustomize-built overlay; starts each replica's container
command with the Training Operator's env (MASTER_ADDR/PORT, WORLD_SIZE, RANK, PET_*), the
container's own env and its ConfigMap volumes materialised in a temporary directory; GPUs become
CPU processes (gloo). Output is prefixed per replica; the exit code is the job's outcome
(0 Succeeded, 1 Failed or timed out, 2 bad input), or 128 + N when signal N stopped run-local
(130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), its replicas stopped first. See docs/run-local.md.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shlex
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

from trainops.core.errors import InputError, Problem
from trainops.core.text import one_line
from trainops.runlocal import op_cache, scrape, supervise
from trainops.runlocal import plan as planning
from trainops.runlocal.mpi import make_mpi_plan
from trainops.runlocal.op_cache import OpCache
from trainops.runlocal.options import Options
from trainops.runlocal.source import load_built_job
from trainops.runlocal.warnings_filter import WarningFilter

DEFAULT_TIMEOUT = 900.0
DEFAULT_KILL_AFTER = 20.0
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
"""Besides Ctrl-C's SIGINT (KeyboardInterrupt): SIGTERM (a CI job cancelled, `timeout`, `kill`)
and SIGHUP (the terminal closed). Python's default for both ends the process at once, and the
replicas, each in a session of its own, trained on without a supervisor."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("job", help="job name (or jobs/<name>.yaml)")
    parser.add_argument("--cluster", help="the target cluster's overlay (default: the only one)")
    parser.add_argument("--replicas", type=int, help="local pods (default: min(job's, 2))")
    parser.add_argument(
        "--procs-per-replica",
        type=int,
        default=1,
        help="processes per pod, instead of one per GPU (default 1)",
    )
    parser.add_argument("--steps", type=int, help="our trainer only: stop after N steps")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds before the run is stopped"
    )
    parser.add_argument(
        "--kill-replica",
        metavar="K",
        help="SIGKILL replica K (`worker-1`, or its position) after --after seconds",
    )
    parser.add_argument(
        "--after", type=float, default=DEFAULT_KILL_AFTER, help="seconds before --kill-replica"
    )
    parser.add_argument(
        "--after-output",
        metavar="REGEX",
        help="count --after from the first output line matching REGEX (e.g. a checkpoint)",
    )
    parser.add_argument(
        "--set-arg",
        action="append",
        default=[],
        metavar="--FLAG=VALUE",
        help="replace (or add) a flag in the rendered args; repeatable (a tiny model: --tiny)",
    )
    parser.add_argument(
        "--drop-arg",
        action="append",
        default=[],
        metavar="--FLAG",
        help="remove a flag (and its value) from the rendered args; repeatable",
    )
    parser.add_argument(
        "--tiny",
        action="store_true",
        help="our trainer only: a tiny random model and synthetic data of the job's kind"
        " (gpt-tiny on tokens, resnet18 on images) in place of weights and data sets this"
        " machine lacks; the rest of the job runs as built (docs/run-local.md)",
    )
    parser.add_argument(
        "--op-cache",
        type=Path,
        metavar="DIR",
        help="DeepSpeed's op cache, kept between runs (default: $TORCH_EXTENSIONS_DIR, else"
        " ~/.cache/trainops/torch_extensions)",
    )
    parser.add_argument(
        "--all-warnings",
        action="store_true",
        help="show every warning, also the FutureWarnings of installed packages (hidden and"
        " counted by default) and each replica's copy",
    )
    parser.add_argument(
        "--volume",
        action="append",
        default=[],
        metavar="NAME=DIR",
        help="use DIR for the pod volume NAME (a data set) instead of an empty directory",
    )
    parser.add_argument("--backoff-limit", type=int, help="override runPolicy.backoffLimit")
    parser.add_argument("--max-restarts", type=int, help="override elasticPolicy.maxRestarts")
    parser.add_argument(
        "--workdir", type=Path, help="keep volumes and pod directories here (default: a temp dir)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print each replica's command and env; run nothing"
    )
    parser.add_argument(
        "--allow-any-program",
        action="store_true",
        help="run a program that is not the trainops trainer (the job's own code, as you), with"
        " a clean environment: none of your credentials (docs/run-local.md)",
    )
    parser.add_argument(
        "--prometheus-targets",
        type=Path,
        metavar="FILE",
        help="write the replicas' metrics endpoints as Prometheus file_sd targets, labelled as"
        " the job's ServiceMonitor targets are on the cluster",
    )


def _volumes(items: list[str]) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for item in items:
        name, sep, directory = item.partition("=")
        if not sep or not name or not directory:
            raise InputError(Problem.about("--volume", f"expected NAME=DIR, got {item!r}"))
        if not Path(directory).is_dir():
            raise InputError(
                Problem.about("--volume", f"{directory} is not a directory (for {name})")
            )
        out[name] = Path(directory)
    return out


def _kill_target(value: str | None, plan: planning.Plan) -> str | None:
    if value is None:
        return None
    names = [launch.name for launch in plan.launches]
    if value.isdigit() and int(value) < len(names):
        return names[int(value)]
    if value in names:
        return value
    raise InputError(
        Problem.about("--kill-replica", f"no replica {value!r} (replicas: {', '.join(names)})")
    )


def _pattern(text: str | None) -> re.Pattern[str] | None:
    if text is None:
        return None
    try:
        return re.compile(text)
    except re.error as err:
        raise InputError(Problem.about("--after-output", f"invalid regex: {err}")) from err


def _out(line: str) -> None:
    # The replicas' output is the job's program's (the pull request's): inert (core/text.py).
    print(one_line(line), flush=True)


def _header(plan: planning.Plan) -> None:
    size = (
        f"{plan.ranks} rank(s) started by the Launcher's mpirun"
        if plan.ranks is not None
        else f"{len(plan.launches)} replica(s) x {plan.procs_per_replica} process(es)"
    )
    _out(
        f"run-local: {plan.job} on {plan.cluster} ({plan.kind}, {plan.shape}): {size},"
        f" world size {plan.world_size}"
    )
    for note in plan.notes:
        _out(f"run-local: {note}")
    _out("run-local: changed for this machine:")
    for change in plan.changes:
        _out(f"  - {change}")
    for warning in plan.warnings:
        _out(f"run-local: warning: {warning}")
    for endpoint in scrape.endpoints(plan):
        _out(f"run-local: metrics: {endpoint}")


def _dry_run(plan: planning.Plan) -> None:
    for launch in plan.launches:
        _out(f"[{launch.name}] restartPolicy {launch.restart_policy}; cwd {launch.cwd}")
        _out(f"[{launch.name}] $ {shlex.join(launch.argv)}")
        for key, value in launch.pod_env:
            _out(f"[{launch.name}]   {key}={value}")


def _summary(outcome: supervise.Outcome) -> int:
    if outcome.succeeded:
        _out(f"run-local: the job Succeeded: {outcome.reason} (restarts: {outcome.restarts})")
        return 0
    _out(f"run-local: the job Failed: {outcome.reason}")
    for killed in outcome.killed:
        _out(
            f"run-local: {killed.replica} (attempt {killed.attempt}) was killed on purpose"
            f" (--kill-replica) and exited {killed.code}"
        )
    first = outcome.first_failure
    if first is not None and not first.killed:
        head = f"run-local: first failure: {first.replica} (attempt {first.attempt}) exited"
        error = first.error
        if error:
            _out(f"{head} {first.code}; its error:")
            for line in error:
                _out(f"  | {line}")
        else:
            _out(f"{head} {first.code} without printing anything")
        others = [f"{f.replica} exited {f.code}" for f in outcome.failures if f is not first]
        if others:
            _out(f"run-local: then: {', '.join(others)}")
    return 1


class Stopped(BaseException):
    """run-local was told to stop by `signum`: raised in the main thread, as KeyboardInterrupt
    is, so every `finally` runs (the replicas stopped as at a job's end, the locks released, the
    temporary directory removed)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """STOP_SIGNALS raise Stopped while the run lasts; one ignored when run-local started (nohup)
    stays ignored, and after the first, the others are ignored so they cannot cut the stop short."""

    def stop(signum: int, frame: FrameType | None) -> None:
        for each in STOP_SIGNALS:
            signal.signal(each, signal.SIG_IGN)
        raise Stopped(signum)

    if threading.current_thread() is not threading.main_thread():
        yield  # Python delivers signals to the main thread only, and sets handlers there only
        return
    previous = {
        each: signal.signal(each, stop)
        for each in STOP_SIGNALS
        if signal.getsignal(each) is not signal.SIG_IGN
    }
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)


def run(args: argparse.Namespace) -> int:
    try:
        with _stopped_by_signals():
            return _run(args)
    except (Stopped, KeyboardInterrupt) as stopped:
        signum = stopped.signum if isinstance(stopped, Stopped) else signal.SIGINT
        name = signal.Signals(signum).name
        _out(f"run-local: stopped by {name}; its replicas were stopped first")
        return 128 + signum


def _run(args: argparse.Namespace) -> int:
    options = Options(
        replicas=args.replicas,
        procs_per_replica=args.procs_per_replica,
        steps=args.steps,
        set_args=tuple(args.set_arg),
        drop_args=tuple(args.drop_arg),
        tiny=args.tiny,
        op_cache=args.op_cache,
        all_warnings=args.all_warnings,
        volumes=_volumes(args.volume),
        backoff_limit=args.backoff_limit,
        max_restarts=args.max_restarts,
        allow_any_program=args.allow_any_program,
    )
    if args.prometheus_targets is not None:
        scrape.check_writable(args.prometheus_targets)
    built = load_built_job(args.root, args.job, args.cluster)
    with tempfile.TemporaryDirectory(prefix="trainops-run-local-") as tmp:
        workdir = args.workdir.resolve() if args.workdir else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if built.kind == "MPIJob":
            plan = make_mpi_plan(built, options, workdir)
        else:
            plan = planning.make_plan(built, options, workdir)
        kill = _kill_target(args.kill_replica, plan)
        _header(plan)
        if args.dry_run:
            _dry_run(plan)
            return 0
        if args.prometheus_targets is not None:
            namespace = str(built.job["metadata"].get("namespace", "default"))
            scrape.write_targets(args.prometheus_targets, scrape.targets(plan, namespace))
            _out(f"run-local: Prometheus targets written to {args.prometheus_targets}")
        kill_at = supervise.Kill(kill, args.after, _pattern(args.after_output)) if kill else None
        return _supervise(plan, options, args.timeout, kill_at)


def _supervise(
    plan: planning.Plan, options: Options, timeout: float, kill: supervise.Kill | None
) -> int:
    """Run the plan with the shared op cache held, the warnings filtered; the summary."""
    shown = WarningFilter()
    with OpCache(options.op_cache or op_cache.default_dir()) as cache:
        if cache.cleared:
            _out(f"run-local: removed the stale build lock(s) of {', '.join(cache.cleared)}")
        keep = (lambda replica, line: True) if options.all_warnings else shown.keep
        watch = supervise.Watch(keep=keep, tick=cache.progress())
        try:
            outcome = supervise.run(plan, _out, timeout, kill, watch)
        finally:
            sys.stdout.flush()
    hidden = shown.summary()
    if hidden:
        _out(f"run-local: {hidden}")
    return _summary(outcome)
