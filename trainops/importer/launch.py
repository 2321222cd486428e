"""The program inside a launcher command: `torchrun [flags] prog args` and
`python -m torch.distributed.run [flags] prog args` become `[python, prog]` and `args`
(trainops generates torchrun around the program from the operator's PET_* variables), and
each dropped launcher flag is named, so import can say why it went."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainops.facts.interpreter import interpreter_options
from trainops.importer.mpirun import same_mpirun

PYTHONS = ("python", "python3")
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")
# torchrun options that take a value as the next element when written without `=`
# (torch/distributed/run.py get_args_parser; the boolean ones take none).
NO_PYTHON = frozenset({"--no-python", "--no_python"})
FLAGS_WITHOUT_VALUE = frozenset(
    {
        "--standalone",
        "--no-python",
        "--no_python",
        "--run-path",
        "--run_path",
        "--module",
        "-m",
        "--use-env",
        "--use_env",
    }
)


@dataclass(frozen=True)
class Program:
    """A container's argv read as a program."""

    command: list[str]
    """`[python, prog]` or `[python, -m, module]`; [] when no python program was found."""
    args: list[str]
    """The program's arguments."""
    launcher_flags: list[str] = field(default_factory=list)
    """Launcher options dropped (trainops's torchrun takes them from the operator)."""
    launcher: str | None = None
    """The launcher found (`torchrun`, `python -m torch.distributed.run`), if any."""
    interpreter_options: list[str] = field(default_factory=list)
    """Python's options dropped (`-u`: torchrun runs `python -u` itself)."""


def is_python(word: str) -> bool:
    """Whether a command's first word starts the python interpreter (`/usr/bin/python3`)."""
    return word.rsplit("/", 1)[-1] in PYTHONS


def _launcher(argv: list[str]) -> tuple[str, list[str]] | None:
    if argv and argv[0].rsplit("/", 1)[-1] == "torchrun":
        return "torchrun", argv[1:]
    at = 1
    while at < len(argv) and argv[at] == "-u":  # `python -u -m torch.distributed.run`
        at += 1
    if (
        len(argv) > at + 1
        and is_python(argv[0])
        and argv[at] == "-m"
        and argv[at + 1] in LAUNCHER_MODULES
    ):
        return f"{argv[0]} -m {argv[at + 1]}", argv[at + 2 :]
    return None


def python_program(argv: list[str]) -> Program | None:
    """`python [-u] prog args` or `python [-u] -m module args` as a program; None for another
    program, or for interpreter options torchrun cannot pass (trainops/facts/interpreter.py).
    `-u` is dropped: torchrun runs every program with `python -u`."""
    if not argv or not is_python(argv[0]):
        return None
    options = interpreter_options(argv)
    if any(option != "-u" for option in options):
        return None
    rest = argv[1 + len(options) :]
    if len(rest) > 1 and rest[0] == "-m":
        return Program(["python", "-m", rest[1]], rest[2:], interpreter_options=options)
    if rest and not rest[0].startswith("-"):
        return Program(["python", rest[0]], rest[1:], interpreter_options=options)
    return None


def read_program(command: list[str], args: list[str]) -> Program | None:
    """The python program the container runs, or None when it is not one (a shell, a binary)."""
    argv = [*command, *args]
    found = _launcher(argv)
    if found is None:
        return python_program(argv)
    launcher, rest = found
    flags: list[str] = []
    module = False
    i = 0
    while i < len(rest) and rest[i].startswith("-"):
        flag = rest[i]
        if flag in {"-m", "--module"}:
            module = True
        elif "=" not in flag and flag not in FLAGS_WITHOUT_VALUE and i + 1 < len(rest):
            flags += [flag, rest[i + 1]]
            i += 2
            continue
        flags.append(flag)
        i += 1
    if i >= len(rest):
        return None
    if NO_PYTHON & set(flags):
        # `torchrun --no-python python3 train.py`: the program is what that python runs.
        inner = python_program(rest[i:])
        if inner is None:
            return None
        return Program(inner.command, inner.args, flags, launcher, inner.interpreter_options)
    command = ["python", "-m", rest[i]] if module else ["python", rest[i]]
    flags = [f for f in flags if f not in {"-m", "--module"}]
    return Program(command, rest[i + 1 :], flags, launcher)


def same_launch(original: dict[str, Any], rendered: dict[str, Any]) -> bool:
    """A container runs what trainops's renders: the same argv split otherwise between
    `command` and `args`, the same python program and arguments around the generated torchrun,
    or the same program and author's options around the generated mpirun (whose `-x` exports
    are the rendered container's env)."""
    theirs = [*(original.get("command") or []), *(original.get("args") or [])]
    ours = [*(rendered.get("command") or []), *(rendered.get("args") or [])]
    if theirs == ours:
        return True
    exported = {str(e.get("name")) for e in rendered.get("env") or []}
    if same_mpirun(theirs, ours, exported):
        return True
    a = read_program(list(original.get("command") or []), list(original.get("args") or []))
    b = read_program(list(rendered.get("command") or []), list(rendered.get("args") or []))
    return bool(a and b and (a.command[1:], a.args) == (b.command[1:], b.args))
