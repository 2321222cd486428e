"""TFJob (kubeflow.org/v1) to a `framework: tensorflow` job spec: Chief and Workers become
`replicas` (with `tensorflow.chief`), parameter servers and the Evaluator their roles, the
success policy its field; the program runs as written (the operator writes TF_CONFIG). The
escape hatch carries the rest of each role's pod (`importer.build`); every field that cannot
be carried is a note naming why."""

from __future__ import annotations

from typing import Any

from trainops.core.yamlio import Document
from trainops.facts.gpus import container_gpus
from trainops.facts.kubeflow import REPLICA_TYPES, TENSORFLOW_CONTAINER
from trainops.importer import common
from trainops.importer.launch import PYTHONS
from trainops.importer.notes import Notes
from trainops.importer.pod import normalised_template, training_container
from trainops.jobspec.model import ClusterProfile
from trainops.kube.pods import PodTemplate, training_container_index

KIND = ("kubeflow.org/v1", "TFJob")
REPLICAS_KEY = "tfReplicaSpecs"
SPEC_KEYS = {REPLICAS_KEY, "runPolicy", "successPolicy"}
TYPES = REPLICA_TYPES["TFJob"]
# TFJob successPolicy -> the spec's (render/tfjob.py SUCCESS_POLICIES, reversed).
SUCCESS_POLICIES = {"": "ChiefOrWorker0", "AllWorkers": "AllWorkers"}


def import_tfjob(
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
    common.unknown_keys(spec, SPEC_KEYS, "TFJob", notes, ["spec"])
    specs = spec.get(REPLICAS_KEY) or {}
    common.unknown_replica_types(specs, TYPES, "TFJob", REPLICAS_KEY, notes)
    pods = common.replicas_of(obj)
    chief, worker = pods.get("Chief"), pods.get("Worker")
    primary = "Chief" if chief is not None else "Worker"
    if primary not in pods:
        notes.add(["spec", REPLICAS_KEY], f"no {primary} template: nothing to import")
        return None
    if chief is not None and chief.replicas != 1:
        notes.add(["spec", REPLICAS_KEY, "Chief", "replicas"], "a TFJob has one Chief")
    workers = int(worker.replicas or 0) if worker is not None else 0
    common.restart_policies(obj, notes, set(TYPES))
    where: list[str | int] = [*pods[primary].spec_path]
    template = normalised_template(pods[primary].template)
    pod = template.get("spec") or {}
    index = training_container(pod, notes, where, TENSORFLOW_CONTAINER)
    main = (pod.get("containers") or [{}])[index]
    job = common.head(obj, "tensorflow", main.get("image"), cluster, notes)
    command, args = list(main.get("command") or []), list(main.get("args") or [])
    if len(command) > 1 and command[0] in PYTHONS:
        job["command"] = command
    elif command:
        notes.add(
            [*where, "containers", index, "command"],
            f"`{command[0]}` is not a python program: the command is kept as it is in"
            " `podTemplate`",
        )
    if args:
        job["args"] = args
    job["replicas"] = (1 if chief is not None else 0) + workers
    common.size(job, main, cluster, where)
    tf: dict[str, Any] = {"chief": chief is not None}
    for rtype, field in (("PS", "parameterServers"), ("Evaluator", "evaluator")):
        if rtype in pods:
            role = _role(pods[rtype], job, cluster, notes, ["spec", REPLICAS_KEY, rtype])
            if role is not None and field == "evaluator" and role.pop("replicas") != 1:
                notes.add(
                    ["spec", REPLICAS_KEY, rtype, "replicas"],
                    "TensorFlow runs one Evaluator: one is rendered",
                )
            if role is not None:
                tf[field] = role
    policy = spec.get("successPolicy") or ""
    if policy in SUCCESS_POLICIES:
        tf["successPolicy"] = SUCCESS_POLICIES[policy]
    else:
        notes.add(
            ["spec", "successPolicy"],
            f"successPolicy {policy!r} is not a TFJob policy: the default (Chief) is rendered",
        )
    job["tensorflow"] = tf
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


def _role(
    pod: PodTemplate,
    job: dict[str, Any],
    cluster: ClusterProfile,
    notes: Notes,
    where: list[str | int],
) -> dict[str, Any] | None:
    """A PS or Evaluator role: its pods, GPUs and size (the rest of its pod: the hatch)."""
    containers = [c.data for c in pod.containers()]
    if not containers:
        notes.add(where, "no container: the role is dropped")
        return None
    main = containers[training_container_index(containers, TENSORFLOW_CONTAINER)]
    role: dict[str, Any] = {"replicas": int(pod.replicas or 0)}
    gpus = container_gpus(main, {g.resource for g in cluster.gpus})
    if gpus:
        role["gpus"] = gpus
    wanted = common.requests_of(main)
    if set(wanted) == {"cpu", "memory"}:
        if wanted != job.get("resources"):
            role["resources"] = wanted
    elif job.get("resources"):
        notes.add(
            [*where, "template"],
            "the role's container does not request both cpu and memory: it gets the job's"
            f" ({', '.join(f'{k} {v}' for k, v in sorted(job['resources'].items()))})",
        )
    return role
