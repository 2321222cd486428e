"""An MPIJob run here: the Launcher's `mpirun`, as built, against local "worker hosts".

The MPI Operator (v2beta1) writes a hostfile of the Workers (`<job>-worker-<i>.<job>.<ns>.svc
slots=N`), mounts it at /etc/mpi/hostfile in the Launcher and names it in the Launcher's env
(`OMPI_MCA_orte_default_hostfile` for Open MPI), then the Launcher's mpirun starts N ranks on
every Worker over SSH. Locally the hostfile lists this machine with the local Workers' slots
(one line: Open MPI refuses a host listed twice with `slots=`), named in the same variable,
and mpirun starts every rank here: the argv, env and program are the
built Launcher's, with what cannot hold on one machine changed and reported (`-np` at the
local size, the cluster's network interface options dropped, Worker 0's host name and the
rendezvous and metrics ports made local, `--oversubscribe` on a small machine). The job's
outcome is the Launcher's, as the operator decides it.
https://github.com/kubeflow/mpi-operator/blob/master/pkg/controller/mpi_job_controller.go
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from trainops.core.errors import InputError, Problem
from trainops.facts.kubeflow import MPI_HOSTFILE_ENV, default_restart_policy, mpi_worker_host
from trainops.kube.launch import MPI, classify, option_key
from trainops.kube.launch import Launch as Command
from trainops.runlocal import kube
from trainops.runlocal.adapt import (
    LOCAL_HOST,
    apply_arg_edits,
    free_port,
    trainer_root,
)
from trainops.runlocal.operator_env import Replica
from trainops.runlocal.options import Options
from trainops.runlocal.plan import (
    DEFAULT_GRACE_SECONDS,
    DEFAULT_LOCAL_REPLICAS,
    MAX_GRACE_SECONDS,
    Launch,
    Plan,
    backoff_limit,
)
from trainops.runlocal.program import admit as admit_program
from trainops.runlocal.program import clean_env
from trainops.runlocal.source import BuiltJob

INSTALL_HINT = (
    "install an MPI implementation to run it here (Debian/Ubuntu: apt-get install openmpi-bin"
    " libopenmpi-dev; or `make setup` as root)"
)
PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
# MCA parameters naming the cluster's network interface: meaningless on this machine.
INTERFACE_PARAMS = frozenset({"btl_tcp_if_include", "oob_tcp_if_include"})
# Open MPI refuses to start as root without these (CI containers run as root).
AS_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def _local_mpirun(source: str, implementation: str) -> tuple[str, str]:
    """(path, version line) of this machine's mpirun, which must speak the job's MPI."""
    found = shutil.which("mpirun")
    if found is None:
        raise InputError(
            Problem.whole_file(source, f"the MPIJob's Launcher runs mpirun: {INSTALL_HINT}")
        )
    version = subprocess.run(
        [found, "--version"], capture_output=True, text=True, check=False, timeout=30
    ).stdout.splitlines()
    line = version[0] if version else "unknown mpirun"
    if implementation == "OpenMPI" and "Open MPI" not in line:
        raise InputError(
            Problem.whole_file(source, f"the job runs Open MPI, this machine's is {line!r}")
        )
    if implementation != "OpenMPI":
        raise InputError(
            Problem.whole_file(
                source,
                f"the job runs {implementation} MPI (mpiImplementation); run-local runs Open MPI"
                f" jobs only (this machine: {line})",
            )
        )
    return found, line


def _read_argv(argv: list[str]) -> Command:
    """The Launcher's argv as mpirun reads it (`trainops.kube.launch`, the reader the rules and
    import share): its options in order and the program every rank runs, which must be python."""
    launch = classify([(w, ()) for w in argv])
    if launch.tool != MPI or not launch.program:
        raise InputError(
            Problem.about("mpirun", f"the Launcher's argv {argv} runs no mpirun with a program")
        )
    if not PYTHON.match(Path(launch.program[0][0]).name):
        raise InputError(
            Problem.about("mpirun", f"no python program found in the Launcher's argv {argv}")
        )
    return launch


def _mpirun_options(launch: Command, ranks: int, changes: list[str]) -> list[str]:
    """The Launcher's mpirun options for this machine."""
    out: list[str] = []
    for word, values, _ in launch.mpi_options:
        key = option_key(word)
        if key in {"np", "n"} and values:
            if values[0] != str(ranks):
                changes.append(f"mpirun {word} {values[0]} -> {ranks} (the local ranks)")
            out += [word, str(ranks)]
        elif key == "mca" and values[:1] and values[0] in INTERFACE_PARAMS:
            changes.append(
                f"mpirun {word} {' '.join(values)} dropped: the cluster's interface is not on"
                " this machine"
            )
        elif key == "iface" and values:
            changes.append(f"mpirun {word} {values[0]} dropped (the cluster's interface)")
        else:
            out += [word, *values]
    return ["--oversubscribe", *out]


# Over the complexity limits: the horovod branch edits this file; split after merging.
def make_mpi_plan(built: BuiltJob, options: Options, workdir: Path) -> Plan:  # noqa: PLR0915
    """The Launcher as one local process running mpirun over local worker hosts."""
    job = built.job
    spec = job["spec"]
    implementation = str(spec.get("mpiImplementation", "OpenMPI"))
    mpirun, version = _local_mpirun(built.source, implementation)
    specs: dict[str, Any] = spec["mpiReplicaSpecs"]
    template = specs["Launcher"]["template"]
    c = template["spec"]["containers"][0]
    workers_built = int(specs.get("Worker", {}).get("replicas", 1))
    workers = options.replicas or min(workers_built, DEFAULT_LOCAL_REPLICAS)
    slots = options.procs_per_replica
    ranks = workers * slots
    changes = [
        f"Workers: {workers_built} pods of slotsPerWorker {spec.get('slotsPerWorker', 1)} ->"
        f" {workers} local worker host(s) of {slots} slot(s) (--replicas, --procs-per-replica):"
        f" {ranks} rank(s) on this machine; CUDA hidden, backend gloo",
    ]
    notes = [f"mpirun: {mpirun} ({version})"]
    warnings: list[str] = []
    hostfile = workdir / "etc-mpi" / "hostfile"
    hostfile.parent.mkdir(parents=True, exist_ok=True)
    # One line: Open MPI refuses a host listed twice with `slots=` (its hostfile parser).
    hostfile.write_text(f"localhost slots={ranks}\n")
    changes.append(
        f"hostfile: the {workers} Workers' host names -> {hostfile} (`localhost slots={ranks}`),"
        f" named by {MPI_HOSTFILE_ENV[implementation]} as the MPI Operator does"
    )
    namespace = str(job["metadata"].get("namespace", "default"))
    worker0 = mpi_worker_host(built.name, namespace, 0)
    fields = {"metadata.name": f"{built.name}-launcher", "metadata.namespace": namespace}
    resolved = kube.resolve_env(c, built.config_maps, built.secrets, fields)
    warnings += resolved.unresolved
    pod_env = dict(resolved.values)
    port = str(free_port())
    if pod_env.get("MASTER_ADDR") == worker0:
        pod_env["MASTER_ADDR"] = LOCAL_HOST
        pod_env["MASTER_PORT"] = port
        changes.append(f"MASTER_ADDR {worker0} -> {LOCAL_HOST}; MASTER_PORT -> free port {port}")
    elif "MASTER_PORT" not in pod_env:
        pod_env["MASTER_PORT"] = port
        changes.append(f"MASTER_PORT -> free port {port} (torch's default 29500 may be taken)")
    if "TRAINOPS_METRICS_PORT" in pod_env:
        pod_env["TRAINOPS_METRICS_PORT"] = str(free_port())
        changes.append("TRAINOPS_METRICS_PORT -> a free port (one metrics server: local rank 0)")
    pod_env[MPI_HOSTFILE_ENV[implementation]] = str(hostfile)
    argv = [*c.get("command", []), *c.get("args", [])]
    read = _read_argv(argv)
    start = len(argv) - len(read.program)
    program, program_args = argv[start : start + 1], argv[start + 1 :]
    image = str(c.get("image", ""))
    # The ranks' program, as runlocal/program.py judges a container's argv.
    ours = admit_program(
        image, [*program, *program_args], built.source, options.allow_any_program, notes
    )
    if ours:
        notes.append(
            f"image {image} is our trainer: the ranks run `python -m trainer` from {trainer_root()}"
        )
        program = [sys.executable]
    else:
        notes.append(f"image {image} is not ours: the ranks run {program[0]!r} from this PATH")
    trainer_args = program_args[2:] if ours else program_args
    apply_arg_edits(trainer_args, options, ours, changes)
    if ours:
        program_args = program_args[:2] + trainer_args
    local_argv = [
        mpirun,
        *_mpirun_options(read, ranks, changes),
        *program,
        *program_args,
    ]
    inherited = os.environ if ours else clean_env()  # another program: none of ours
    proc_env = {k: v for k, v in inherited.items() if not k.startswith(("OMPI_", "PMI"))}
    proc_env.update(pod_env)
    proc_env["CUDA_VISIBLE_DEVICES"] = ""
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        proc_env.update(AS_ROOT)
        changes.append("OMPI_ALLOW_RUN_AS_ROOT=1: this machine runs run-local as root")
    if ours:
        proc_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(trainer_root()), os.environ.get("PYTHONPATH", "")) if p
        )
    for init in template["spec"].get("initContainers", []):
        warnings.append(f"init container {init.get('name')} of the Launcher is not run")
    grace = float(template["spec"].get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))
    restart = str(
        specs["Launcher"].get("restartPolicy")
        or default_restart_policy(str(job["apiVersion"]), "MPIJob", "Launcher")
    )
    launcher_dir = workdir / "pods" / "launcher-0"
    launcher_dir.mkdir(parents=True, exist_ok=True)
    launch = Launch(
        replica=Replica("Launcher", 0),
        argv=local_argv,
        env=proc_env,
        pod_env=sorted(pod_env.items()),
        cwd=launcher_dir,
        restart_policy=restart,
        grace_seconds=min(grace, MAX_GRACE_SECONDS),
    )
    return Plan(
        job=built.name,
        cluster=built.cluster,
        shape=f"Launcher+{workers} Worker(s)",
        launches=[launch],
        changes=changes,
        warnings=warnings,
        notes=notes,
        success="launcher",
        backoff_limit=backoff_limit(job, options, changes),
        clean_pod_policy=str(spec.get("runPolicy", {}).get("cleanPodPolicy", "None")),
        workdir=workdir,
        kind="MPIJob",
        ranks=ranks,
    )
