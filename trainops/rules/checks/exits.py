"""Commands that never finish or hide failure: the job's status is the container's exit code,
and a `sh -c` script decides it. `train; sleep infinity` never completes (its GPUs stay held
until someone deletes it); `train || true`, `train; exit 0` and `train | tee log` (without
pipefail) exit 0 when training failed, so the operator marks the job Succeeded and never
restarts it (Kubeflow's `ExitCode` restart policy and every `backoffLimit` see success).

Only training pods, and only after a command that trains (`shell.Step.trains`): `mkdir -p x
|| true` is housekeeping, and an MPI Worker's `sshd -D` is meant to run until the Launcher ends.
"""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation
from trainops.rules.shell import Script, Step, script

# Commands that block forever (coreutils sleep takes `infinity`; `inf` is the same float).
_FOREVER = ({"sleep", "infinity"}, {"sleep", "inf"})
_TRUE = frozenset({"true", ":", "/bin/true"})
# Commands that report and exit 0: `train || echo "training failed"` still succeeds.
_SAYS = frozenset({"echo", "printf", "logger"})


def _scripts(obj: Object) -> Iterator[Script]:
    for pod in obj.training_pods:
        for c in pod.containers():
            found = script(c)
            if found is not None:
                yield found


def _blocks(step: Step) -> bool:
    words = list(step.words)
    if set(words[:2]) in _FOREVER and len(words) == 2:
        return True
    return words[:3] == ["tail", "-f", "/dev/null"]


def _never_exits(obj: Object, ctx: Context) -> Iterator[Violation]:
    for s in _scripts(obj):
        trained = next((st for st in s.steps if st.trains), None)
        if trained is None:
            continue
        after = s.steps[s.steps.index(trained) + 1 :]
        blocker = next((st for st in after if _blocks(st)), None)
        if blocker is not None:
            yield Violation(
                f"`{' '.join(blocker.words)}` after `{' '.join(trained.words[:3])} ...`: the"
                " container never exits, so the job never completes and its GPUs stay held",
                s.path,
            )


def _succeeds(step: Step) -> bool:
    """A command that exits 0 whatever happened before it."""
    return step.head in _TRUE or step.head in _SAYS or list(step.words) == ["exit", "0"]


def _reraises(steps: tuple[Step, ...]) -> bool:
    """Whether any of `steps` can end the script with a failure again (`exit 1`, `exit $rc`,
    `false`, a test of `$?`)."""
    for step in steps:
        words = list(step.words)
        if step.head == "false" or any("$?" in w or "PIPESTATUS" in w for w in words):
            return True
        if step.head == "exit" and words[1:] != ["0"]:
            return True
    return False


def _fallback(steps: tuple[Step, ...], i: int) -> int | None:
    """Index of the command that runs when training (`steps[i]`) fails: past the `&&` chain
    of what runs on its success, the one after the `||` (`train && echo OK || echo FAILED`)."""
    j = i
    while j < len(steps) - 1 and steps[j].after == "&&":
        j += 1
    return j + 1 if steps[j].after == "||" and j + 1 < len(steps) else None


def _hidden(obj: Object, ctx: Context) -> Iterator[Violation]:
    for s in _scripts(obj):
        steps = s.steps
        for i, step in enumerate(steps):
            if not step.trains:
                continue
            rest = steps[i + 1 :]
            what = " ".join(step.words[:3])
            k = _fallback(steps, i)
            if k is not None and _succeeds(steps[k]) and not _reraises(steps[k + 1 :]):
                chain = "".join(f" && {' '.join(st.words)}" for st in steps[i + 1 : k])
                yield Violation(
                    f"`{what} ...{chain} || {' '.join(steps[k].words)}`: a failed training runs"
                    f" `{' '.join(steps[k].words)}`, which exits 0: the job is marked"
                    " Succeeded and never restarted",
                    s.path,
                )
            elif (
                step.after in {";", ""}
                and not s.errexit
                and rest
                and list(rest[-1].words) in (["exit", "0"], ["true"])
                and not any(r.trains for r in rest)
            ):
                yield Violation(
                    f"`{what} ...; {' '.join(rest[-1].words)}`: the script ends in success"
                    " whatever training returned; the job is marked Succeeded when it failed",
                    s.path,
                )


def _pipe(obj: Object, ctx: Context) -> Iterator[Violation]:
    for s in _scripts(obj):
        if s.pipefail or "PIPESTATUS" in s.text:
            continue
        for i, step in enumerate(s.steps):
            if step.trains and step.after == "|" and i + 1 < len(s.steps):
                yield Violation(
                    f"`{' '.join(step.words[:3])} ... | {' '.join(s.steps[i + 1].words[:2])}`"
                    " without `set -o pipefail`: the pipeline's status is the last command's,"
                    " so a failed training exits 0 and the job is marked Succeeded",
                    s.path,
                )


RULES = (
    Rule(
        slug="command-never-exits",
        code="TO410",
        severity=Severity.ERROR,
        summary="A training pod's script blocks forever after training (`sleep infinity`,"
        " `tail -f /dev/null`).",
        why="A Kubeflow job, Volcano Job, JobSet or batch Job completes when its containers"
        " exit. One that sleeps after training stays Running: its GPUs stay held until someone"
        " deletes it, and a gang or a queue behind it waits.",
        fix="Let the container exit with training's status. To inspect a finished job, read"
        " its logs or checkpoint; debug in a separate pod.",
        example='command: [bash, -c, "torchrun train.py; sleep infinity"]',
        check=_never_exits,
        pods_only=True,
        references=("https://kubernetes.io/docs/concepts/workloads/controllers/job/",),
    ),
    Rule(
        slug="failure-ignored",
        code="TO411",
        severity=Severity.ERROR,
        summary="A training pod's script turns training's failure into success: `train ||"
        " true`, `train || exit 0`, or `train; exit 0` without `set -e`.",
        why="The job's outcome is the container's exit code. Exit 0 after a crash marks the"
        " job Succeeded: it is never restarted (`restartPolicy: OnFailure`/`ExitCode`,"
        " `backoffLimit`), and whatever waits for it (a pipeline, an evaluation) goes on with"
        " a half-trained checkpoint.",
        fix="Drop `|| true` / `exit 0`; to run cleanup and keep the status, use"
        " `train; rc=$?; cleanup; exit $rc`.",
        example='command: [sh, -c, "python train.py || true"]',
        check=_hidden,
        pods_only=True,
        references=(
            "https://www.kubeflow.org/docs/components/trainer/legacy-v1/user-guides/pytorch/",
            "https://pubs.opengroup.org/onlinepubs/9799919799/utilities/V3_chap02.html#tag_19_09_03",
        ),
    ),
    Rule(
        slug="pipe-hides-failure",
        code="TO412",
        severity=Severity.ERROR,
        summary="A training command piped into another (`train | tee log`) without `set -o"
        " pipefail`: the pipeline exits with the last command's status.",
        why="POSIX shells give a pipeline the exit status of its last command, so `tee`'s 0"
        " hides training's crash: the job is marked Succeeded and never restarted.",
        fix="`set -o pipefail` first (bash, or dash >= 0.5.11), or `bash -o pipefail -c`; or"
        " `exit ${PIPESTATUS[0]}` after the pipeline.",
        example='command: [bash, -c, "torchrun train.py 2>&1 | tee /logs/train.log"]',
        check=_pipe,
        pods_only=True,
        references=(
            "https://pubs.opengroup.org/onlinepubs/9799919799/utilities/V3_chap02.html#tag_19_09_02",
            "https://www.gnu.org/software/bash/manual/html_node/Pipelines.html",
        ),
    ),
)
