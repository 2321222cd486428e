"""How the built job is adapted to this machine: scaled down to CPU processes, its pod paths
and service names mapped to local directories and 127.0.0.1, its args edited as the user
asked, and its program found here (our trainer from this checkout when it runs our image).
Each change is appended to the plan's list, so the user knows what a local run does not prove.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import shutil
import socket
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from trainops import __version__
from trainops.core.errors import InputError, Problem
from trainops.facts.kubeflow import elastic_range, set_elastic_range
from trainops.runlocal import tiny
from trainops.runlocal.operator_env import container, nproc_per_node, replica_count, replica_specs
from trainops.runlocal.options import Options

TRAINER_IMAGE = "trainops-trainer"
"""The repository name of the image `trainer/Dockerfile` builds (any registry)."""
LOCAL_HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now, so parallel runs do not collide."""
    with socket.socket() as s:
        s.bind((LOCAL_HOST, 0))
        return int(s.getsockname()[1])


def scale(job: dict[str, Any], local: int, procs: int, changes: list[str]) -> dict[str, Any]:
    """A copy of the job at `local` pods of `procs` processes: the operator env's input."""
    scaled = copy.deepcopy(job)
    specs = replica_specs(scaled)
    before = sum(replica_count(s) for s in specs.values())
    if "Master" in specs:
        specs["Master"]["replicas"] = 1
        if local > 1:
            specs.setdefault("Worker", copy.deepcopy(specs["Master"]))["replicas"] = local - 1
        else:
            specs.pop("Worker", None)
    else:
        specs["Worker"]["replicas"] = local
    if local != before:
        changes.append(f"replicas: {before} pods -> {local} local process groups (--replicas)")
    span = elastic_range(job["spec"])
    if span is not None:
        low, high = span
        new_low, new_high = min(low, local), local
        if (new_low, new_high) != (low, high):
            set_elastic_range(scaled["spec"], new_low, new_high)
            changes.append(
                f"elasticPolicy: min/max replicas {low}:{high} -> {new_low}:{new_high}"
                " (PET_NNODES; with max = the local pods the rendezvous closes as soon as all"
                " joined instead of waiting for pods that will never come)"
            )
    old = nproc_per_node(job)
    scaled["spec"]["nprocPerNode"] = str(procs)
    gpus = _gpus_per_pod(job)
    changes.append(
        f"GPUs: {gpus or 'no'} GPU(s) and nprocPerNode {old} per pod -> {procs} CPU process(es)"
        " per replica (--procs-per-replica); CUDA hidden, backend gloo"
    )
    return scaled


def _gpus_per_pod(job: dict[str, Any]) -> int:
    for spec in replica_specs(job).values():
        limits = container(spec["template"]).get("resources", {}).get("limits", {})
        return sum(int(v) for k, v in limits.items() if str(k).endswith("/gpu"))
    return 0


def path_rewriter(mounts: list[tuple[str, Path]]) -> Callable[[str], str]:
    """Replace each pod mount path (a whole path component prefix) by its local directory.

    One pass over the text, longest path first: a local directory is never rewritten again
    (the work directory is under /tmp, which is itself a pod mount)."""
    local = {p.rstrip("/"): str(d) for p, d in mounts if p.rstrip("/")}
    if not local:
        return lambda text: text
    paths = sorted(local, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.~/-])(" + "|".join(map(re.escape, paths)) + r")(?=/|$|[^\w.-])")
    return lambda text: pattern.sub(lambda m: local[m.group(1)], text)


def host_rewriter(pod_names: list[str]) -> Callable[[str], str]:
    """Each pod's service name (a whole host name, not a prefix of another) -> 127.0.0.1."""
    if not pod_names:
        return lambda text: text
    names = sorted(pod_names, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, names)) + r")(?![\w-])")
    return lambda text: pattern.sub(LOCAL_HOST, text)


def apply_arg_edits(args: list[str], options: Options, ours: bool, changes: list[str]) -> None:
    edits = list(options.set_args)
    drops = list(options.drop_args)
    if options.tiny:
        if not ours:
            raise InputError(
                Problem.about(
                    "--tiny",
                    "--tiny swaps our trainer's model and data; this job runs another program:"
                    " use --set-arg/--drop-arg with its own flags",
                )
            )
        sets, optional = tiny.edits(args)
        edits = [*sets, *edits]
        drops += [flag for flag in optional if _has_flag(args, flag) and flag not in drops]
    if options.steps is not None:
        if not ours:
            raise InputError(
                Problem.about(
                    "--steps",
                    "--steps sets our trainer's --steps flag; this job runs another program:"
                    " use --set-arg with its own flag",
                )
            )
        edits.append(f"--steps={options.steps}")
    for flag in drops:
        why = "--drop-arg" if flag in options.drop_args else "--tiny"
        if _remove_flag(args, flag):
            changes.append(f"args: {flag} removed ({why})")
        else:
            raise InputError(Problem.about("--drop-arg", f"the args have no {flag}"))
    for edit in edits:
        flag, sep, _ = edit.partition("=")
        if not flag.startswith("-") or not sep:
            raise InputError(Problem.about("--set-arg", f"expected --flag=value, got {edit!r}"))
        replaced = _remove_flag(args, flag)
        args.append(edit)
        verb = "replaced by" if replaced else "added:"
        changes.append(f"args: {flag} {verb} {edit}")


def _has_flag(args: list[str], flag: str) -> bool:
    return any(arg == flag or arg.startswith(flag + "=") for arg in args)


def _remove_flag(args: list[str], flag: str) -> bool:
    """Drop `flag=value` or `flag value` from `args`; whether it was there."""
    for i, arg in enumerate(args):
        if arg.startswith(flag + "="):
            del args[i]
            return True
        if arg == flag:
            has_value = i + 1 < len(args) and not args[i + 1].startswith("-")
            del args[i : i + 2 if has_value else i + 1]
            return True
    return False


def image_reference(image: str) -> tuple[str, str | None]:
    """(repository, tag) of an image reference; the tag is None for a digest or no tag."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    repository, tag = (
        (name.rsplit(":", 1)[0], last.rsplit(":", 1)[1]) if ":" in last else (name, "")
    )
    return repository, (tag or None) if not digest else None


def image_is_ours(image: str) -> tuple[bool, str | None]:
    """Whether `image` is the trainer image, and its tag."""
    repository, tag = image_reference(image)
    return repository.rsplit("/", 1)[-1] == TRAINER_IMAGE, tag


def trainer_root() -> Path:
    """The directory holding the `trainer` package run-local runs (this checkout's)."""
    spec = importlib.util.find_spec("trainer")
    if spec is None or spec.origin is None:
        raise InputError(Problem.about("trainer", "the trainer package is not importable here"))
    return Path(spec.origin).resolve().parent.parent


def local_command(
    command: list[str], image: str, source: str, notes: list[str], runs_trainer: bool
) -> list[str]:
    """The local argv of a container's `command`: our trainer from this checkout when
    `runs_trainer` (runlocal/program.py), else the program found on this machine's PATH."""
    if not command:
        raise InputError(
            Problem.whole_file(
                source,
                f"the container of image {image} has no command: run-local cannot know the"
                " image's entrypoint (render a `command`)",
            )
        )
    ours, tag = image_is_ours(image)
    program = command[0]
    if runs_trainer:
        root = trainer_root()
        pinned = (
            "" if tag == __version__ else f"; the job pins {tag}, this checkout is {__version__}"
        )
        notes.append(
            f"image {image} is our trainer: running `python -m trainer` from {root}"
            f" (trainops {__version__}{pinned})"
        )
        if program == "torchrun":
            return [sys.executable, "-m", "torch.distributed.run", *command[1:]]
        if program in {"python", "python3"}:
            return [sys.executable, *command[1:]]
    found = shutil.which(program)
    if found is None:
        raise InputError(
            Problem.whole_file(
                source,
                f"cannot run {program!r} locally: it is not on PATH (image {image} is not"
                " the trainops trainer, so run-local runs the command from this machine)",
            )
        )
    if not ours:
        notes.append(f"image {image} is not ours: running {found} from this machine's PATH")
    return [found, *command[1:]]


def renumber_arg(arg: str, renumber: Mapping[str, str]) -> str:
    """`9090` or `--metrics-port=9090` -> the replica's local port."""
    if arg in renumber:
        return renumber[arg]
    flag, sep, value = arg.rpartition("=")
    if sep and value in renumber:
        return f"{flag}={renumber[value]}"
    return arg
