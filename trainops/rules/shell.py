"""A container's `sh -c` script as the shell runs it: its commands in order, the operator
between each and the next (`&&`, `||`, `;`, `|`, `&`), and the shell options that change
what a failure does (`set -e`, `set -o pipefail`, `sh -ec`).

The failure rules (`checks/exits.py`) read this; `launch.py` reads the same script for what
each command launches and drops the operators, which it does not need.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from trainops.core.manifest import FieldPath as Path
from trainops.kube.launch import OTHER, TRAINERS, classify, shell_script
from trainops.kube.pods import Container
from trainops.kube.words import (
    assignments,
    commands,
    expand_shell,
    kubelet_env,
    line_words,
    script_lines,
)

# Programs that train when a script runs them, beside what `launch.classify` recognises
# (torchrun, python, deepspeed, mpirun, horovodrun): the known trainers (`launch.TRAINERS`),
# Slurm's srun, and a script file the image carries (`./train.sh`, `bash run_pretrain.sh`).
TRAINING_PROGRAMS = TRAINERS | {"srun"}
_SCRIPT_FILE = re.compile(r".*\.(sh|py)$")


@dataclass(frozen=True)
class Step:
    """One simple command of a script."""

    words: tuple[str, ...]
    after: str
    """The operator that follows it: `&&`, `||`, `;`, `|`, `&`, or `` at a line's end."""

    @property
    def head(self) -> str:
        return posixpath.basename(self.words[0]) if self.words else ""

    @property
    def trains(self) -> bool:
        """Whether the command runs a training program (and so its exit status matters)."""
        if not self.words:
            return False
        if classify([(w, ()) for w in self.words]).tool != OTHER:
            return True
        if self.head in TRAINING_PROGRAMS or _SCRIPT_FILE.match(self.words[0]):
            return True
        return (
            self.head in {"sh", "bash"}
            and len(self.words) > 1
            and bool(_SCRIPT_FILE.match(self.words[1]))
        )


@dataclass(frozen=True)
class Script:
    """The script of `sh -c "..."` in a container."""

    steps: tuple[Step, ...]
    path: Path
    """The argv element that holds the script (a finding's line)."""
    errexit: bool
    """`set -e` (or `-o errexit`, or `sh -ec`) before the end: a failing command ends it."""
    pipefail: bool
    """`set -o pipefail` (or `bash -o pipefail -c`): a pipeline fails when any part does."""
    text: str


def _steps(text: str, env: dict[str, str]) -> list[Step]:
    """The script's commands as the shell runs them, `$VAR` expanded where the shell knows it
    (`trainops.kube.words`: the one reader of command lines)."""
    steps: list[Step] = []
    shell = dict(env)
    for line in script_lines(text):
        for words, after in commands(line_words(expand_shell(line, shell))):
            steps.append(Step(tuple(words), after))
            shell.update(assignments(words))
    return steps


def _sets(steps: list[Step], argv: list[str], long: str, short: str) -> bool:
    """Whether the shell has option `long` (`pipefail`) from its flags or a `set` command."""
    flags = [w for w in argv[1:] if w.startswith("-")]
    if any(short and short in f.lstrip("-") and not f.startswith("--") for f in flags):
        return True
    if long in argv[1 : argv.index("-c") if "-c" in argv else len(argv)]:
        return True
    for step in steps:
        if step.head == "set":
            words = list(step.words[1:])
            if long in words or any(short and w.startswith("-") and short in w for w in words):
                return True
    return False


def script(container: Container) -> Script | None:
    """The container's shell script, or None when its argv is not `sh -c "..."`."""
    found = shell_script(container.argv)
    if found is None:
        return None
    text, path = found
    env = kubelet_env([(name, var.value) for name, var in container.env.items()])
    steps = _steps(str(text), env)
    argv = [w for w, _ in container.argv]
    return Script(
        tuple(steps),
        path,
        errexit=_sets(steps, argv, "errexit", "e"),
        pipefail=_sets(steps, argv, "pipefail", ""),
        text=str(text),
    )
