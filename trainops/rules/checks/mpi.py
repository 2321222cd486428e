"""MPIJob rules: `-np` against the slots the job has, fused argv elements, and a Launcher
that holds GPUs it never uses."""

from __future__ import annotations

import re
from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.manifest import FieldPath as Path
from trainops.core.values import as_int
from trainops.kube.launch import (
    MPI,
    MPI_FLAGS,
    MPI_TWO_VALUES,
    OTHER,
    Launch,
    is_shell_script,
    launches,
    option_key,
    shell_script,
)
from trainops.kube.objects import Object
from trainops.kube.words import line_words
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

# An option and its value fused into one argv element: `-x NCCL_DEBUG=INFO`, `--nnodes 4`.
_FUSED = re.compile(r"^-{1,2}[A-Za-z][\w.-]*\s+\S")


def _np(obj: Object, ctx: Context) -> Iterator[Violation]:
    if obj.kind != "MPIJob" or not obj.is_kubeflow_job:
        return
    slots = as_int(obj.spec.get("slotsPerWorker"))
    slots = 1 if slots is None else slots
    worker = obj.replica("Worker")
    workers = worker.replicas or 0 if worker is not None else 0
    total = slots * workers
    if obj.spec.get("runLauncherAsWorker") is True:
        total += slots
    launcher = obj.replica("Launcher")
    if launcher is None:
        return
    for c in launcher.containers():
        for launch in launches(c):
            if launch.tool != MPI:
                continue
            np = launch.option("np")
            if np is None:
                continue
            value = as_int(np[0])
            if value is not None and value != total:
                head = launch.words[0][0].rsplit("/", 1)[-1]
                yield Violation(
                    f"{head} -np {value} but the job has {total} slots (slotsPerWorker {slots}"
                    f" x {workers} workers): "
                    + ("slots sit idle" if value < total else "mpirun fails: not enough slots"),
                    np[1],
                )


def _fused(word: str, path: Path, where: str) -> Violation:
    option, _, rest = word.partition(" ")
    return Violation(
        f"{where} {word!r} holds an option and its value: the program gets"
        f" one word and misparses it; split it into {option!r}, {rest.strip()!r}",
        path,
    )


def _has_space(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        for c in pod.containers(init=True):
            for i, (word, path) in enumerate(c.argv):
                if is_shell_script(c, i) or not _FUSED.match(word):
                    continue
                yield _fused(word, path, "argv element")
            in_script = shell_script(c.argv) is not None
            for launch in launches(c):
                if launch.tool != MPI:
                    continue
                if in_script:  # a quoted word of `sh -c`: one word, as an argv element is
                    for word, path in _option_words(launch):
                        if _FUSED.match(word):
                            yield _fused(word, path, "quoted word")
                program = launch.program[0] if launch.program else None
                if program is not None and any(ch.isspace() for ch in program[0].strip()):
                    head = launch.words[0][0].rsplit("/", 1)[-1]
                    yield Violation(
                        f"{head} runs the program {program[0]!r}: one word, so it looks for an"
                        f" executable of that whole name and fails; split the program and its"
                        " arguments into separate words",
                        program[1],
                    )


# Arguments that are code for the program itself: `python -c "a; b"`, `perl -e`, `--eval`.
_CODE_OPTIONS = frozenset({"-c", "-e", "--eval", "--command"})
_SEQUENCE = frozenset({";", "&&", "||"})


def _shell_syntax(obj: Object, ctx: Context) -> Iterator[Violation]:
    """An exec argv element of a training command that holds a shell sequence (`a; b`, `a &&
    b`): a YAML folded scalar made it one word, and without a shell the program receives the
    operator and what follows as text (`--variable_update=horovod echo done; sleep infinity`)."""
    for pod in obj.pods:
        for c in pod.containers(init=True):
            if shell_script(c.argv) is not None:
                continue
            if not any(launch.tool != OTHER for launch in launches(c)):
                continue
            for i, (word, path) in enumerate(c.argv[1:], start=1):
                if c.argv[i - 1][0] in _CODE_OPTIONS or not any(ch.isspace() for ch in word):
                    continue
                words = line_words(word)
                op = next((w for w in words[:-1] if w in _SEQUENCE), None)
                if op is not None:
                    rest = " ".join(words[words.index(op) + 1 :])
                    yield Violation(
                        f"argv element {word.strip()!r} holds `{op}` and a command after it,"
                        f" but no shell runs this argv: the program receives `{op} {rest}` as"
                        " text and it never runs; split the element, or run the line under"
                        " `sh -c`",
                        path,
                    )


def _has_space_or_shell(obj: Object, ctx: Context) -> Iterator[Violation]:
    yield from _has_space(obj, ctx)
    yield from _shell_syntax(obj, ctx)


def _option_words(launch: Launch) -> Iterator[tuple[str, Path]]:
    """The words of an mpirun command line in option position: not the value of the option
    before it (`-mca plm_rsh_args "-p 2222"` passes ssh its own arguments as one word, as
    Open MPI's plm_rsh_args wants), not the program's."""
    words = launch.words[1 : len(launch.words) - len(launch.program)]
    i = 0
    while i < len(words):
        word, path = words[i]
        key = option_key(word)
        yield word, path
        if key in MPI_TWO_VALUES:
            i += 3
        elif word.startswith("-") and "=" not in word and key not in MPI_FLAGS:
            i += 2
        else:
            i += 1


def _launcher_gpus(obj: Object, ctx: Context) -> Iterator[Violation]:
    if obj.kind != "MPIJob" or not obj.is_kubeflow_job:
        return
    if obj.spec.get("runLauncherAsWorker") is True:
        return  # the Launcher is in the hostfile: it runs ranks on its GPUs
    launcher = obj.replica("Launcher")
    if launcher is None:
        return
    gpus = launcher.gpus(ctx.cluster)
    if gpus:
        yield Violation(
            f"the Launcher requests {gpus} GPU(s) but runs no rank (mpirun starts the ranks on"
            " the Workers' hosts; `runLauncherAsWorker` is not true): the GPUs sit idle for the"
            " whole job",
            launcher.spec_path,
        )


RULES = (
    Rule(
        slug="mpi-np-mismatch",
        code="TO801",
        severity=Severity.ERROR,
        summary="mpirun `-np` != `slotsPerWorker` x worker replicas.",
        why="Fewer processes leave GPUs idle; more than the hostfile's slots makes mpirun"
        " refuse to start (or oversubscribe GPUs).",
        fix="Set `-np` to slotsPerWorker x Worker replicas (or omit it: mpirun uses every slot)."
        " The same for `horovodrun -np`/`--num-proc`, in argv or in a `sh -c` script.",
        example='slotsPerWorker: 8\nWorker: {replicas: 4}\ncommand: [mpirun, -np, "16", ...]',
        check=_np,
    ),
    Rule(
        slug="mpi-arg-has-space",
        code="TO802",
        severity=Severity.ERROR,
        summary='An argv element with whitespace inside (e.g. `"-x NCCL_DEBUG=INFO"` as one'
        " element: mpirun receives one word and misparses it); the same in a quoted word of"
        " an `sh -c` script, an mpirun/horovodrun program given as one word"
        ' (`"python train.py"`), and an element of a training command holding a shell'
        " sequence (`--flag=x echo done; sleep infinity`, often a YAML folded scalar) that no"
        " shell runs.",
        why="Kubernetes passes each list element as one argv word, with no shell to split it"
        " or to run what follows a `;` or `&&` in it.",
        fix="Split option and value into two elements: `- -x` and `- NCCL_DEBUG=INFO`; run a"
        " command line with operators under `sh -c`.",
        example='command: [mpirun, "-x NCCL_DEBUG=INFO", python, train.py]',
        check=_has_space_or_shell,
        pods_only=True,
    ),
    Rule(
        slug="mpi-launcher-gpus",
        code="TO810",
        severity=Severity.WARNING,  # waste, not a failure: the job runs
        summary="An MPIJob Launcher requests GPUs although it runs no rank"
        " (`runLauncherAsWorker` is not true).",
        why="The MPI Operator's Launcher only runs mpirun, which starts every rank on the"
        " Workers over ssh (the hostfile lists Workers only unless runLauncherAsWorker); GPUs"
        " it requests are held, idle, for the whole job, and can keep it from being scheduled.",
        fix="Drop the Launcher's GPU request (a little CPU and memory is enough), or set"
        " `runLauncherAsWorker: true` to run ranks on it.",
        example="Launcher:\n  template: {spec: {containers: [{resources: {limits:"
        " {nvidia.com/gpu: 8}}}]}}",
        check=_launcher_gpus,
        references=(
            "https://github.com/kubeflow/mpi-operator/blob/master/CHANGELOG.md",  # v0.5.0: hostfile
        ),
    ),
)
