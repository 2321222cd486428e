"""The program inside a launcher command: `torchrun [flags] prog args` and
`python -m torch.distributed.run [flags] prog args` become `[python, prog]` and `args`
(trainops generates torchrun around the program from the operator's PET_* variables), and
each dropped launcher flag is named, so import can say why it went."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainops.importer.mpirun import same_mpirun

PYTHONS = ("python", "python3")
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")
# torchrun options that take a value as the next element when written without `=`
# (torch/distributed/run.py get_args_parser; the boolean ones take none).
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


def _launcher(argv: list[str]) -> tuple[str, list[str]] | None:
    if argv and argv[0].rsplit("/", 1)[-1] == "torchrun":
        return "torchrun", argv[1:]
    if len(argv) > 2 and argv[0] in PYTHONS and argv[1] == "-m" and argv[2] in LAUNCHER_MODULES:
        return f"{argv[0]} -m {argv[2]}", argv[3:]
    return None


def read_program(command: list[str], args: list[str]) -> Program | None:
    """The python program the container runs, or None when it is not one (a shell, a binary)."""
    argv = [*command, *args]
    found = _launcher(argv)
    if found is None:
        if argv and argv[0].rsplit("/", 1)[-1] in PYTHONS and len(argv) > 1:
            if argv[1] == "-m" and len(argv) > 2:
                return Program(["python", "-m", argv[2]], argv[3:])
            if not argv[1].startswith("-"):
                return Program(["python", argv[1]], argv[2:])
        return None
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
