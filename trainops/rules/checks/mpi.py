"""MPIJob rules: `-np` against the slots the job has, and fused argv elements."""

from __future__ import annotations

import re
from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.rules.context import Context
from trainops.rules.launch import MPI, is_shell_script, launches
from trainops.rules.model import Rule, Violation
from trainops.rules.objects import Object
from trainops.rules.values import as_int

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
                yield Violation(
                    f"mpirun -np {value} but the job has {total} slots (slotsPerWorker {slots}"
                    f" x {workers} workers): "
                    + ("slots sit idle" if value < total else "mpirun fails: not enough slots"),
                    np[1],
                )


def _has_space(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        for c in pod.containers(init=True):
            for i, (word, path) in enumerate(c.argv):
                if is_shell_script(c, i) or not _FUSED.match(word):
                    continue
                option, _, rest = word.partition(" ")
                yield Violation(
                    f"argv element {word!r} holds an option and its value: the program gets"
                    f" one word and misparses it; split it into {option!r}, {rest.strip()!r}",
                    path,
                )


RULES = (
    Rule(
        slug="mpi-np-mismatch",
        code="TO801",
        severity=Severity.ERROR,
        summary="mpirun `-np` != `slotsPerWorker` x worker replicas.",
        why="Fewer processes leave GPUs idle; more than the hostfile's slots makes mpirun"
        " refuse to start (or oversubscribe GPUs).",
        fix="Set `-np` to slotsPerWorker x Worker replicas (or omit it: mpirun uses every slot).",
        example='slotsPerWorker: 8\nWorker: {replicas: 4}\ncommand: [mpirun, -np, "16", ...]',
        check=_np,
    ),
    Rule(
        slug="mpi-arg-has-space",
        code="TO802",
        severity=Severity.ERROR,
        summary='An argv element with whitespace inside (e.g. `"-x NCCL_DEBUG=INFO"` as one'
        " element: mpirun receives one word and misparses it).",
        why="Kubernetes passes each list element as one argv word, with no shell to split it.",
        fix="Split option and value into two elements: `- -x` and `- NCCL_DEBUG=INFO`.",
        example='command: [mpirun, "-x NCCL_DEBUG=INFO", python, train.py]',
        check=_has_space,
        pods_only=True,
    ),
)
