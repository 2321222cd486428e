"""PyTorchJob (kubeflow.org/v1) to a job spec: the high-level fields wherever they say the
same thing, then the escape hatch for the rest, computed against what trainops renders for
the target cluster (`hatch.py`). Every field that cannot be carried is a note naming why."""

from __future__ import annotations

from typing import Any

from trainops.core.yamlio import Document
from trainops.facts.interpreter import interpreter_options
from trainops.facts.kubeflow import PYTORCH_CONTAINER, REPLICA_TYPES
from trainops.importer import common
from trainops.importer.launch import is_python, read_program
from trainops.importer.notes import Notes
from trainops.importer.pod import normalised_template, training_container
from trainops.jobspec.model import ClusterProfile

KIND = ("kubeflow.org/v1", "PyTorchJob")
REPLICAS_KEY = "pytorchReplicaSpecs"
SPEC_KEYS = {REPLICAS_KEY, "elasticPolicy", "runPolicy", "nprocPerNode"}


# Over the complexity limits: the import branch reworks this file; split after merging.
def import_pytorchjob(  # noqa: C901, PLR0912, PLR0915
    obj: dict[str, Any],
    doc: Document,
    beside: dict[str, dict[str, Any]],
    cluster: ClusterProfile,
    notes: Notes,
    *,
    secrets: dict[str, dict[str, Any]],
) -> dict[str, Any] | None:
    """The job spec for `obj` (before the escape hatch: `importer.build` adds it)."""
    spec = obj.get("spec") or {}
    common.unknown_keys(spec, SPEC_KEYS, "PyTorchJob", notes, ["spec"])
    pods = common.replicas_of(obj)
    common.unknown_replica_types(
        spec.get(REPLICAS_KEY) or {}, REPLICA_TYPES["PyTorchJob"], "PyTorchJob", REPLICAS_KEY, notes
    )
    elastic = spec.get("elasticPolicy")
    master, worker = pods.get("Master"), pods.get("Worker")
    primary = "Worker" if elastic or master is None else "Master"
    if primary not in pods:
        notes.add(["spec", REPLICAS_KEY], f"no {primary} template: nothing to import")
        return None
    workers = int(worker.replicas or 0) if worker else 0
    if elastic:
        if master is not None:
            notes.add(
                ["spec", REPLICAS_KEY, "Master"],
                "an elastic job has Workers only (c10d rendezvous): the Master is dropped",
            )
        replicas = workers
    else:
        if master is None:
            notes.add(
                ["spec", REPLICAS_KEY],
                "Workers without Master or elasticPolicy:"
                " trainops renders one Master and replicas - 1 Workers",
            )
        replicas = workers + (1 if master is not None else 0)
        if master is not None and master.replicas != 1:
            notes.add(
                ["spec", REPLICAS_KEY, "Master", "replicas"],
                "a PyTorchJob has exactly one Master",
            )
    common.restart_policies(obj, notes)
    where: list[str | int] = [*pods[primary].spec_path]
    template = normalised_template(pods[primary].template)
    pod = template.get("spec") or {}
    index = training_container(pod, notes, where, PYTORCH_CONTAINER)
    main = (pod.get("containers") or [{}])[index]
    at_command: list[str | int] = [*where, "containers", index, "command"]
    job = common.head(obj, "pytorch", main.get("image"), cluster, notes)
    command, args = list(main.get("command") or []), list(main.get("args") or [])
    program = read_program(command, args)
    if program is not None:
        job["command"], job["args"] = program.command, program.args
        if program.launcher_flags:
            notes.add(
                at_command,
                f"{program.launcher} flags"
                f" {' '.join(program.launcher_flags)} dropped: trainops's torchrun reads"
                " the operator's PET_* variables (nnodes, nproc, rendezvous) from the"
                " PyTorchJob",
            )
        if program.interpreter_options:
            notes.add(
                at_command,
                f"python's {' '.join(program.interpreter_options)} dropped: torchrun runs the"
                " program with python -u itself",
            )
    elif not command:
        if args:
            job["args"] = args
    else:
        notes.add(
            at_command,
            f"{_not_a_program(command + args)}: the command is kept as it is"
            " in `podTemplate` (no torchrun is generated)",
        )
    job["replicas"] = replicas
    common.size(job, main, cluster, where)
    nproc = spec.get("nprocPerNode")
    if nproc is not None and str(nproc) != str(max(job["gpusPerReplica"], 1)):
        notes.add(
            ["spec", "nprocPerNode"],
            f"nprocPerNode {nproc}: trainops runs one process"
            f" per GPU ({max(job['gpusPerReplica'], 1)})",
        )
    if elastic:
        job["elastic"] = {
            k: elastic[k] for k in ("minReplicas", "maxReplicas", "maxRestarts") if k in elastic
        }
        for key in sorted(set(elastic) - {"minReplicas", "maxReplicas", "maxRestarts"}):
            if key == "rdzvBackend" and elastic[key] == "c10d":
                continue
            notes.add(
                ["spec", "elasticPolicy", key],
                f"elasticPolicy.{key} is not carried:"
                " trainops renders the c10d rendezvous and no HPA metrics",
            )
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
    common.run_policy(
        job,
        obj,
        spec.get("runPolicy") or {},
        cluster=cluster,
        notes=notes,
        where=["spec", "runPolicy"],
    )
    return common.finish(job, obj, pod, main, cluster=cluster, notes=notes, where=where)


def _not_a_program(argv: list[str]) -> str:
    """Why a container's argv is not read as a program trainops can run under torchrun."""
    options = [o for o in interpreter_options(argv) if o != "-u"]
    if is_python(argv[0]) and options:
        return (
            f"python's {' '.join(options)} cannot pass through torchrun (its environment"
            " variable can: docs/jobs.md)"
        )
    return f"`{argv[0]}` is not a python program"
