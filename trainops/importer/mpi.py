"""MPIJob (the MPI Operator's kubeflow.org/v2beta1, the Training Operator's kubeflow.org/v1)
to a `framework: mpi` job spec: the Workers become `replicas`, the Launcher its role, and
the Launcher's `mpirun` argv is read back (`mpirun.py`) into the program (`command`/`args`)
and the author's options (`mpi.mpirunArgs`); what trainops generates itself (`-np`, the `-x`
exports of the Launcher's env, the socket interface options) is removed and named. The
escape hatch carries the rest of each pod (`importer.build`)."""

from __future__ import annotations

from typing import Any

from trainops.core.yamlio import Document
from trainops.facts.gpus import container_gpus
from trainops.facts.kubeflow import (
    MPI_LAUNCHER_CONTAINER,
    MPI_WORKER_CONTAINER,
    MPIJOB_SERVED_BY,
    MPIJOB_V1,
    MPIJOB_V2BETA1,
    REPLICA_TYPES,
)
from trainops.facts.mpi_ssh import image_contract
from trainops.importer import common
from trainops.importer.launch import is_python
from trainops.importer.mpirun import (
    ALLOW_ROOT,
    HOROVOD_OPTIONS,
    MpiRun,
    read_horovodrun,
    read_launch,
    read_mpirun,
    script_command,
    script_file,
)
from trainops.importer.notes import Notes
from trainops.importer.pod import normalised_template
from trainops.jobspec.model import ClusterProfile
from trainops.render.pod import METRICS_PORT_ENV, nccl_env

KINDS = ((MPIJOB_V2BETA1, "MPIJob"), (MPIJOB_V1, "MPIJob"))
REPLICAS_KEY = "mpiReplicaSpecs"
SPEC_KEYS = {
    MPIJOB_V2BETA1: {
        REPLICAS_KEY,
        "runPolicy",
        "slotsPerWorker",
        "mpiImplementation",
        "sshAuthMountPath",
    },
    MPIJOB_V1: {REPLICAS_KEY, "runPolicy", "slotsPerWorker", "cleanPodPolicy"},
}
# render/mpijob.py rendezvous_env: the MPI Operator's v2beta1 Launcher only.
RENDEZVOUS_ENV = ("MASTER_ADDR", "MASTER_PORT")


# Over the complexity limits: the import branch reworks this file; split after merging.
def import_mpijob(  # noqa: C901, PLR0912, PLR0915
    obj: dict[str, Any],
    doc: Document,
    beside: dict[str, dict[str, Any]],
    cluster: ClusterProfile,
    notes: Notes,
    *,
    secrets: dict[str, dict[str, Any]],
) -> dict[str, Any] | None:
    """The job spec for `obj` (before the escape hatch: `importer.build` adds it)."""
    api = str(obj.get("apiVersion"))
    spec = obj.get("spec") or {}
    common.unknown_keys(spec, SPEC_KEYS[api], f"MPIJob {api}", notes, ["spec"])
    specs = spec.get(REPLICAS_KEY) or {}
    common.unknown_replica_types(specs, REPLICA_TYPES["MPIJob"], "MPIJob", REPLICAS_KEY, notes)
    pods = common.replicas_of(obj)
    launcher, worker = pods.get("Launcher"), pods.get("Worker")
    if launcher is None or worker is None:
        notes.add(["spec", REPLICAS_KEY], "no Launcher and Worker templates: nothing to import")
        return None
    if launcher.replicas != 1:
        notes.add(["spec", REPLICAS_KEY, "Launcher", "replicas"], "an MPIJob has one Launcher")
    common.restart_policies(obj, notes, {"Launcher", "Worker"})
    where: list[str | int] = [*worker.spec_path]
    template = normalised_template(worker.template)
    pod = template.get("spec") or {}
    main = _first(pod, MPI_WORKER_CONTAINER, notes, where)
    at_launcher: list[str | int] = [*launcher.spec_path]
    first = _first(launcher.spec, MPI_LAUNCHER_CONTAINER, notes, at_launcher)
    launcher_meta = launcher.metadata
    for field in ("labels", "annotations"):  # the rest reaches the Launcher by the hatch
        keys = dict(launcher_meta.get(field) or {})
        common.scheduler_keys(keys, cluster, notes, [*at_launcher[:-1], "metadata", field])
    job = common.head(obj, "mpi", main.get("image"), cluster, notes)
    job["replicas"] = int(worker.replicas or 0)
    common.size(job, main, cluster, where)
    slots = int(spec.get("slotsPerWorker", 1))
    if slots != max(job["gpusPerReplica"], 1):
        notes.add(
            ["spec", "slotsPerWorker"],
            f"slotsPerWorker {slots}: trainops runs one rank per GPU"
            f" ({max(job['gpusPerReplica'], 1)})",
        )
    mpi: dict[str, Any] = {}
    served = MPIJOB_SERVED_BY[cluster.installed.mpi_jobs]
    if api != served:
        notes.add(
            ["apiVersion"],
            f"MPIJob `{api}` is written for `{served}`: cluster `{cluster.name}` serves"
            f" `mpijobs.kubeflow.org` as `{served}` (`installed.mpiJobs:"
            f" {cluster.installed.mpi_jobs}`); trainops renders the same Launcher and Workers"
            " in either version",
        )
    if served == MPIJOB_V1:
        mpi["apiVersion"] = MPIJOB_V1
    else:
        mpi["implementation"] = spec.get("mpiImplementation", "OpenMPI")
    mpi["launcher"] = _launcher(first, job, cluster)
    common.pod_fields(
        job,
        template,
        main,
        beside=beside,
        secrets=secrets,
        cluster=cluster,
        notes=notes,
        where=where,
    )
    worker_argv = [*(main.get("command") or []), *(main.get("args") or [])]
    if main.get("command"):
        mpi["workerCommand"] = worker_argv
    if api == MPIJOB_V2BETA1 and "sshAuthMountPath" in spec:
        mpi["sshAuthMountPath"] = spec["sshAuthMountPath"]
    if served == MPIJOB_V2BETA1:
        _ssh_user(job, mpi, main=main, pod=pod, notes=notes, where=where)
    exported = _exported(job, cluster, api)
    argv = [*(first.get("command") or []), *(first.get("args") or [])]
    at_argv: list[str | int] = [
        *at_launcher,
        "containers",
        0,
        "args" if "args" in first else "command",
    ]
    run, program = _read_launcher(argv, exported, notes, at_argv)
    if not program:
        notes.add(at_argv, _no_program(argv, job["replicas"] * slots))
        return None
    if is_python(program[0]) and len(program) >= 2:
        job["command"], job["args"] = _split(program)
    else:
        mpi["rankProgram"] = "executable"
        job["command"], job["args"] = program[:1], program[1:]
        notes.add(
            at_argv,
            f"the ranks run `{program[0]}`, not a python program: `mpi.rankProgram:"
            " executable` (mpirun starts it as written; no torch.distributed variables)",
        )
    if run is not None:
        root = (job.get("securityContext") or {}).get("runAsUser") == 0
        implementation = mpi.get("implementation", "OpenMPI")
        options = HOROVOD_OPTIONS[implementation] if run.launcher == "horovodrun" else run.options
        mpi["mpirunArgs"] = [
            o for o in options if not (root and implementation == "OpenMPI" and o == ALLOW_ROOT)
        ]
        _generated(run, job, cluster=cluster, notes=notes, where=at_argv)
    job["mpi"] = mpi
    policy = dict(spec.get("runPolicy") or {})
    if api == MPIJOB_V1 and "cleanPodPolicy" in spec:
        if "cleanPodPolicy" not in policy:
            policy["cleanPodPolicy"] = spec["cleanPodPolicy"]
        notes.add(
            ["spec", "cleanPodPolicy"],
            "spec.cleanPodPolicy (deprecated) is written as runPolicy.cleanPodPolicy",
        )
    common.run_policy(job, obj, policy, cluster=cluster, notes=notes, where=["spec", "runPolicy"])
    return common.finish(job, obj, pod, main, cluster=cluster, notes=notes, where=where)


def _no_program(argv: list[str], ranks: int) -> str:
    """Why nothing says what the ranks run, and what the user can write instead: the
    Launcher's mpirun/horovodrun line (which import reads), or the job spec itself."""
    script = script_file(argv)
    if script is not None:
        what = f"the Launcher runs the script `{script}` from its image, which import cannot read"
    else:
        what = (
            f"the Launcher runs `{argv[0] if argv else '(the image)'}` and no mpirun, mpiexec"
            " or horovodrun with a program in it"
        )
    return (
        f"{what}: nothing says what the ranks run; not imported. Write the line it runs into"
        f" the Launcher's command (`[horovodrun, -np, '{ranks}', python, train.py]` or `[mpirun,"
        " ..., python, train.py]`) and import again, or write the job spec by hand:"
        " `framework: mpi`, `command: [python, train.py]` (the program every rank runs;"
        " trainops generates mpirun, -np and the exports) and `mpi.mpirunArgs` for mpirun's"
        " own options"
    )


def _ssh_user(
    job: dict[str, Any],
    mpi: dict[str, Any],
    *,
    main: dict[str, Any],
    pod: dict[str, Any],
    notes: Notes,
    where: list[str | int],
) -> None:
    """The MPI Operator v2beta1 logs in to the Workers over ssh as the pods' user
    (facts/mpi_ssh.py): a pod that named none ran as its image's user, which trainops's default
    (uid 10001, its own image's) is not. A known image's user, sshd and key path are written;
    for another image, a note says what to set."""
    written = (pod.get("securityContext") or {}).get("runAsUser")
    if written is None:
        written = (main.get("securityContext") or {}).get("runAsUser")
    if written is not None:
        return
    image = str(main.get("image"))
    known = image_contract(image)
    if known is None:
        notes.add(
            [*where, "securityContext"],
            f"no runAsUser: the pods ran as image {image}'s user, and trainops renders"
            " `securityContext.runAsUser` (default 10001, its trainer image's); the MPI Operator"
            " logs in to the Workers over ssh as that user: set it to the image's user, and"
            " `mpi.sshAuthMountPath` to that user's ~/.ssh",
        )
        return
    job.setdefault("securityContext", {}).update(runAsUser=known.uid, runAsGroup=known.uid)
    who = "root" if known.uid == 0 else f"{known.user} (uid {known.uid})"
    if known.uid != 0:
        mpi.setdefault("workerCommand", list(known.worker_command))
        mpi.setdefault("sshAuthMountPath", known.ssh_dir)
    notes.add(
        [*where, "securityContext"],
        f"image {image} runs as {who}, the user the MPI Operator logs in to the Workers as:"
        f" `securityContext.runAsUser: {known.uid}` is written (trainops's default, 10001, has"
        " no user in that image)",
    )


def _first(pod: dict[str, Any], name: str, notes: Notes, where: list[str | int]) -> dict[str, Any]:
    """The first container (the MPI Operator's), renamed to trainops's name."""
    containers = pod.get("containers") or [{}]
    if containers[0].get("name") != name:
        notes.add(
            [*where, "containers", 0],
            f"container `{containers[0].get('name')}` is rendered as `{name}` (the MPI"
            " Operator takes the first container, whatever its name)",
        )
    return dict(containers[0])


def _launcher(
    container: dict[str, Any], job: dict[str, Any], cluster: ClusterProfile
) -> dict[str, Any]:
    """`mpi.launcher`: its GPUs and size (the spec's defaults where it names none)."""
    out: dict[str, Any] = {}
    gpus = container_gpus(container, {g.resource for g in cluster.gpus})
    if gpus:
        out["gpus"] = gpus
    wanted = common.requests_of(container)
    if set(wanted) == {"cpu", "memory"}:
        out["resources"] = wanted
    return out


def _exported(job: dict[str, Any], cluster: ClusterProfile, api: str) -> set[str]:
    """The variables trainops's Launcher exports to the ranks (render/mpijob.py `-x NAME`)."""
    names = {*(job.get("env") or {}), *(job.get("secretEnv") or {}), METRICS_PORT_ENV}
    names |= set(nccl_env(cluster))
    if api == MPIJOB_V2BETA1:
        names |= set(RENDEZVOUS_ENV)
    return names


def _split(program: list[str]) -> tuple[list[str], list[str]]:
    """`[python, (flags,) script | -m module]` and the program's arguments."""
    i = 1
    while i < len(program) - 1 and program[i].startswith("-"):
        if program[i] == "-m":
            i += 1
            break
        i += 1
    return program[: i + 1], program[i + 1 :]


def _read_launcher(
    argv: list[str], exported: set[str], notes: Notes, where: list[str | int]
) -> tuple[MpiRun | None, list[str]]:
    """(the launcher read as the mpirun trainops generates, or None when the Launcher is kept
    as written; the program each rank runs). mpirun/mpiexec as they are; `horovodrun -np N -H
    ...` as the mpirun it runs; either inside `sh -c` when the script is that one command."""
    run = read_launch(argv, exported)
    inner = script_command(argv)
    if run is not None and inner is not None:
        notes.add(where, f"`{argv[0]} -c` around one {run.launcher} command: read as its argv")
    elif inner is not None:
        found = read_mpirun(inner[0], exported) or read_horovodrun(inner[0])
        if found is not None:
            notes.add(
                where,
                f"the Launcher runs a shell script around {found.launcher}: kept as it is in"
                " `replicaPodTemplates.Launcher` (the ranks' program read from it)",
            )
            return None, found.program
    if run is None:
        notes.add(
            where,
            f"the Launcher runs `{argv[0] if argv else '(the image)'}`, not mpirun: its"
            " command is kept as it is in `replicaPodTemplates.Launcher`",
        )
        return None, _python_program(argv)
    if run.launcher == "horovodrun":
        notes.add(
            where,
            "horovodrun read as the mpirun it runs (horovod/runner/mpi_run.py): trainops"
            " generates -np and the exports"
            + (
                f"; -H {run.hosts} removed: the operator's hostfile lists the Workers"
                if run.hosts
                else ""
            ),
        )
    return run, run.program


def _python_program(argv: list[str]) -> list[str]:
    """The python program inside another launcher's argv (`horovodrun ... python x.py`)."""
    starts = [i for i, word in enumerate(argv) if is_python(word)]
    return argv[starts[0] :] if starts else []


def _generated(
    run: MpiRun,
    job: dict[str, Any],
    *,
    cluster: ClusterProfile,
    notes: Notes,
    where: list[str | int],
) -> None:
    """Name every option removed because trainops generates it."""
    ranks = job["replicas"] * max(job["gpusPerReplica"], 1)
    if run.split:
        notes.add(
            where,
            f"{', '.join(f'`{w}`' for w in run.split)}: an option and its value in one argv"
            " element (mpirun reads one word): split",
        )
    if run.processes is not None:
        same = run.processes == str(ranks)
        notes.add(
            where,
            f"-np {run.processes} removed: trainops generates -np {ranks} (Workers x slots)"
            + ("" if same else f", not {run.processes}"),
        )
    if run.exported:
        notes.add(
            where,
            f"-x {' -x '.join(run.exported)} removed: trainops exports every variable of the"
            " Launcher's env (a value given here is the env's, or the cluster's NCCL setting)",
        )
    if run.interface:
        notes.add(
            where,
            f"{' '.join(run.interface)} removed: trainops generates the interface options for"
            f" cluster `{cluster.name}`'s socket interface {cluster.network.socket_interface}",
        )
