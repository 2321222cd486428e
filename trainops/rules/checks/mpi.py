"""MPIJob rules: `-np` against the slots the job has, fused argv elements, a Launcher that
holds GPUs it never uses, and the MPI Operator v2beta1's SSH contract (sshd on the Workers, the
keys where the pods' user looks)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.manifest import FieldPath as Path
from trainops.core.values import as_dict, as_int
from trainops.facts.kubeflow import MPIJOB_V2BETA1
from trainops.facts.mpi_ssh import (
    DEFAULT_SSH_AUTH_MOUNT_PATH,
    MPI_OPERATOR_IMAGE,
    SshImage,
    image_contract,
    runs_sshd,
)
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
from trainops.kube.pods import Container, PodTemplate
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


def _uid(pod: PodTemplate, c: Container) -> tuple[int | None, Path]:
    """The uid the container runs as (its own securityContext, else the pod's) and where it
    is set; None: the image's USER."""
    own = as_int(c.security_context.get("runAsUser"))
    if own is not None:
        return own, (*c.path, "securityContext", "runAsUser")
    pod_uid = as_int(as_dict(pod.spec.get("securityContext")).get("runAsUser"))
    return pod_uid, (*pod.spec_path, "securityContext", "runAsUser")


def _ssh_contract(obj: Object, ctx: Context) -> Iterator[Violation]:
    """The MPI Operator v2beta1 reaches the Workers over SSH: they run sshd, and the Launcher
    and Workers run as the user whose ~/.ssh is `sshAuthMountPath` (facts/mpi_ssh.py)."""
    if obj.kind != "MPIJob" or obj.manifest.api_version != MPIJOB_V2BETA1:
        return
    written = obj.spec.get("sshAuthMountPath")
    ssh_dir = str(written or DEFAULT_SSH_AUTH_MOUNT_PATH).rstrip("/")
    said: set[str] = set()
    for role in ("Worker", "Launcher"):
        pod = obj.replica(role)
        containers = pod.containers() if pod is not None else []
        if pod is None or not containers:
            continue
        c = containers[0]  # the operator's: its first container
        known = image_contract(c.image)
        uid, uid_path = _uid(pod, c)
        if uid is None and known is not None and known.uid == 0:
            uid = 0
        if role == "Worker":
            yield from _worker_sshd(c, known, uid)
        problem = _user_problem(uid, ssh_dir, known, c.image or "")
        if problem is None or problem in said:
            continue
        said.add(problem)
        where = ("spec", "sshAuthMountPath") if written and uid == 0 else uid_path
        yield Violation(f"{role} {problem}", where)


def _worker_sshd(c: Container, known: SshImage | None, uid: int | None) -> Iterator[Violation]:
    argv = [word for word, _ in c.argv]
    fix = " ".join((known or MPI_OPERATOR_IMAGE).worker_command)
    if argv and not runs_sshd(argv):
        yield Violation(
            f"the Worker runs `{' '.join(argv)[:80]}`, not sshd: the MPI Operator v2beta1 starts"
            " sshd only for a Worker without command and args, so the Launcher's mpirun cannot"
            f" log in and the job fails; run sshd in the foreground as its command ({fix})",
            c.argv[0][1],
        )
    elif not argv and uid not in (None, 0):
        yield Violation(
            "the Worker has no command, so the MPI Operator runs `/usr/sbin/sshd -De` with the"
            f" image's default config, which uid {uid} cannot run (host keys only root reads,"
            " a pid file under /run): run the image's non-root sshd config as its command"
            f" (the MPI Operator's images: {fix})",
            c.path,
        )


def _user_problem(uid: int | None, ssh_dir: str, known: SshImage | None, image: str) -> str | None:
    """Why the keys at `ssh_dir` are not the ones ssh uses as `uid`, or None."""
    if uid == 0 and ssh_dir != DEFAULT_SSH_AUTH_MOUNT_PATH:
        return (
            f"runs as root, whose ssh reads /root/.ssh, and the keys are mounted at {ssh_dir}"
            " (`sshAuthMountPath`): mpirun cannot log in"
        )
    if uid is None or uid == 0:
        return None
    if known is not None and known.uid != uid:
        return (
            f"runs as uid {uid}, which image {image} has no user for (its user is {known.user},"
            f" uid {known.uid}): OpenSSH refuses to run for a uid without a passwd entry; set"
            f" runAsUser: {known.uid} and sshAuthMountPath: {known.ssh_dir}"
        )
    if ssh_dir == DEFAULT_SSH_AUTH_MOUNT_PATH:
        home = known.ssh_dir if known is not None else "the .ssh of that user's home"
        return (
            f"runs as uid {uid} and the keys are mounted at /root/.ssh (`sshAuthMountPath`'s"
            f" default), which only root's ssh reads: set sshAuthMountPath to {home}"
        )
    if known is not None and ssh_dir != known.ssh_dir:
        return (
            f"runs as {known.user} (uid {uid}) of image {image}, whose ssh reads {known.ssh_dir},"
            f" and the keys are mounted at {ssh_dir}: set sshAuthMountPath: {known.ssh_dir}"
        )
    return None


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
        slug="mpi-ssh-contract",
        code="TO811",
        severity=Severity.ERROR,
        summary="An MPI Operator v2beta1 MPIJob that cannot log in to its Workers: a Worker"
        " that runs no sshd (its command, or a known image's default), or a Launcher/Worker"
        " user whose ~/.ssh is not `sshAuthMountPath` (default /root/.ssh), or a uid the image"
        " has no user for.",
        why="The MPI Operator v0.8 mounts the job's SSH keys at `sshAuthMountPath` and runs the"
        " Workers' own command; the Launcher's mpirun then logs in to each Worker over ssh as"
        " the pod's user. Without sshd on the Workers, or with the keys where that user's"
        " OpenSSH does not look, every run fails at ssh, and a fabric test reports a failed"
        " fabric. The MPI Operator's images run sshd as `mpiuser` (uid 1000, keys in"
        " /home/mpiuser/.ssh); Horovod's as root.",
        fix="Run sshd in the foreground as the Workers' command (the MPI Operator's images:"
        " `/usr/sbin/sshd -De -f /home/mpiuser/.sshd_config`), set `runAsUser` to the image's"
        " user and `sshAuthMountPath` to that user's `~/.ssh`.",
        example="sshAuthMountPath: /home/mpiuser/.ssh   # runAsUser: 1000\n"
        "Worker: {template: {spec: {containers: [{image: mpioperator/openmpi:0.8.0}]}}}"
        "  # no sshd",
        check=_ssh_contract,
        references=(
            "https://github.com/kubeflow/mpi-operator/tree/v0.8.0/build/base",
            "https://github.com/kubeflow/mpi-operator/blob/v0.8.0/examples/v2beta1/pi/pi.yaml",
        ),
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
