"""PyTorchJob (kubeflow.org/v1) to a job spec: the high-level fields wherever they say the
same thing, then the escape hatch for the rest, computed against what trainops renders for
the target cluster (`hatch.py`). Every field that cannot be carried is a note naming why."""

from __future__ import annotations

import copy
from typing import Any

from trainops.core.yamlio import Document
from trainops.facts.gpus import container_gpus, is_gpu_resource
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL, VOLCANO_SCHEDULER
from trainops.importer.launch import read_program
from trainops.importer.notes import Notes
from trainops.importer.pod import map_env, map_volumes, normalised_template, training_container
from trainops.render.pod import JOB_LABEL, MULTUS_ANNOTATION, nccl_env
from trainops.spec.model import ClusterProfile

KIND = ("kubeflow.org/v1", "PyTorchJob")
ISTIO = "sidecar.istio.io/inject"
# runPolicy.cleanPodPolicy when a PyTorchJob names none (Training Operator v1.9 defaults).
OPERATOR_CLEAN_POD_POLICY = "None"
SPEC_KEYS = {"pytorchReplicaSpecs", "elasticPolicy", "runPolicy", "nprocPerNode"}


def import_pytorchjob(
    obj: dict[str, Any],
    doc: Document,
    beside: dict[str, dict[str, Any]],
    cluster: ClusterProfile,
    notes: Notes,
) -> dict[str, Any] | None:
    """The job spec for `obj` (before the escape hatch: `importer.build` adds it)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    for key in sorted(set(spec) - SPEC_KEYS):
        notes.add(
            ["spec", key], f"spec.{key} is not a PyTorchJob field: the operator ignores it; dropped"
        )
    replicas_specs = spec.get("pytorchReplicaSpecs") or {}
    for rtype in sorted(set(replicas_specs) - {"Master", "Worker"}):
        notes.add(
            ["spec", "pytorchReplicaSpecs", rtype],
            f"replica type {rtype} is not a PyTorchJob type: dropped",
        )
    elastic = spec.get("elasticPolicy")
    master, worker = replicas_specs.get("Master"), replicas_specs.get("Worker")
    primary = "Worker" if elastic or master is None else "Master"
    if (replicas_specs.get(primary) or {}).get("template") is None:
        notes.add(["spec", "pytorchReplicaSpecs"], f"no {primary} template: nothing to import")
        return None
    workers = int((worker or {}).get("replicas", 1)) if worker else 0
    if elastic:
        if master is not None:
            notes.add(
                ["spec", "pytorchReplicaSpecs", "Master"],
                "an elastic job has Workers only (c10d rendezvous): the Master is dropped",
            )
        replicas = workers
    else:
        if master is None:
            notes.add(
                ["spec", "pytorchReplicaSpecs"],
                "Workers without Master or elasticPolicy:"
                " trainops renders one Master and replicas - 1 Workers",
            )
        replicas = workers + (1 if master is not None else 0)
        if master is not None and int(master.get("replicas", 1)) != 1:
            notes.add(
                ["spec", "pytorchReplicaSpecs", "Master", "replicas"],
                "a PyTorchJob has exactly one Master",
            )
    for rtype, rspec in sorted(replicas_specs.items()):
        policy = (rspec or {}).get("restartPolicy", "OnFailure")
        if policy != "OnFailure":
            notes.add(
                ["spec", "pytorchReplicaSpecs", rtype, "restartPolicy"],
                f"restartPolicy {policy}: trainops renders OnFailure (a failed pod is"
                " restarted, up to backoffLimit)",
            )
    where: list[str | int] = ["spec", "pytorchReplicaSpecs", primary, "template", "spec"]
    template = normalised_template(replicas_specs[primary]["template"])
    pod = template.get("spec") or {}
    index = training_container(pod, notes, where)
    main = (pod.get("containers") or [{}])[index]
    at_command: list[str | int] = [*where, "containers", index, "command"]
    job: dict[str, Any] = {
        "apiVersion": "trainops.dev/v1alpha1",
        "kind": "TrainingJob",
        "name": meta.get("name"),
        "namespace": meta.get("namespace") or "default",
        "framework": "pytorch",
        "image": main.get("image"),
    }
    if not meta.get("namespace"):
        notes.add(["metadata"], "no namespace: `default` made explicit")
    if job["namespace"] not in cluster.namespaces:
        notes.refuse(
            ["metadata", "namespace"] if meta.get("namespace") else ["metadata"],
            f"namespace `{job['namespace']}` is not allowed on cluster `{cluster.name}`"
            f" ({', '.join(cluster.namespaces)}): add it to the profile's `namespaces`"
            " or import for another --cluster",
        )
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
    elif not command:
        if args:
            job["args"] = args
    else:
        notes.add(
            at_command,
            f"`{command[0]}` is not a python program: the"
            " command is kept as it is in `podTemplate` (no torchrun is generated)",
        )
    job["replicas"] = replicas
    products = {g.resource for g in cluster.gpus}
    job["gpusPerReplica"] = container_gpus(main, products)
    resources = main.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    wanted = {k: requests.get(k, limits.get(k)) for k in ("cpu", "memory")}
    if any(v is not None for v in wanted.values()):
        job["resources"] = {k: str(v) for k, v in wanted.items() if v is not None}
    gpu = next(
        (
            g
            for g in cluster.gpus
            if g.node_selector.items() <= (pod.get("nodeSelector") or {}).items()
        ),
        None,
    )
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
    nccl = nccl_env(cluster)
    map_volumes(job, pod, main=main, beside=beside, cluster=cluster, notes=notes, where=where)
    map_env(job, main, cluster=cluster, nccl=nccl, notes=notes, where=where)
    for key, field in (
        ("serviceAccountName", "serviceAccountName"),
        ("priorityClassName", "priorityClassName"),
        ("terminationGracePeriodSeconds", "terminationGracePeriodSeconds"),
        ("affinity", "affinity"),
    ):
        if key in pod:
            job[field] = copy.deepcopy(pod[key])
    if pod.get("imagePullSecrets"):
        job["imagePullSecrets"] = [s["name"] for s in pod["imagePullSecrets"] if "name" in s]
    if pod.get("hostNetwork"):
        if cluster.network.allow_host_network:
            job["hostNetwork"] = True
        else:
            notes.add(
                [*where, "hostNetwork"],
                f"cluster `{cluster.name}` does not allow"
                " hostNetwork: the job runs on the pod network",
            )
    security = {
        k: v
        for k, v in (pod.get("securityContext") or {}).items()
        if k in {"runAsUser", "runAsGroup", "fsGroup"}
    }
    if security:
        job["securityContext"] = security
    labels = {
        k: v
        for k, v in ((template.get("metadata") or {}).get("labels") or {}).items()
        if k != JOB_LABEL
    }
    annotations = dict((template.get("metadata") or {}).get("annotations") or {})
    if annotations.get(ISTIO) == "false":
        del annotations[ISTIO]
    rdma = cluster.network.rdma if cluster.network.transport == "rdma" else None
    if rdma and annotations.get(MULTUS_ANNOTATION) == rdma.multus_network:
        del annotations[MULTUS_ANNOTATION]
    if labels:
        job["podLabels"] = labels
    if annotations:
        job["podAnnotations"] = annotations
    _run_policy(job, spec.get("runPolicy") or {}, cluster, notes)
    job_labels = dict(meta.get("labels") or {})
    if (
        cluster.scheduler.kind == "kueue"
        and job_labels.get(KUEUE_QUEUE_LABEL) == cluster.scheduler.queue
    ):
        del job_labels[KUEUE_QUEUE_LABEL]
    if job_labels:
        job["labels"] = job_labels
    if meta.get("annotations"):
        job["annotations"] = dict(meta["annotations"])
    target: dict[str, Any] = {"cluster": cluster.name}
    if gpu is not None and len(cluster.gpus) > 1:
        target["gpuProduct"] = gpu.name
    elif len(cluster.gpus) > 1 and job["gpusPerReplica"]:
        target["gpuProduct"] = cluster.gpus[0].name
        notes.add(
            [*where],
            f"no node selector names one of `{cluster.name}`'s GPU products:"
            f" `{cluster.gpus[0].name}` chosen",
        )
    job["targets"] = [target]
    if any(is_gpu_resource(k, products) for k in limits) and not job["gpusPerReplica"]:
        notes.add([*where, "containers"], "GPU limits without a count")
    return job


def _run_policy(
    job: dict[str, Any], policy: dict[str, Any], cluster: ClusterProfile, notes: Notes
) -> None:
    out: dict[str, Any] = {
        "cleanPodPolicy": policy.get("cleanPodPolicy", OPERATOR_CLEAN_POD_POLICY)
    }
    if "cleanPodPolicy" not in policy:
        notes.add(
            ["spec"],
            "runPolicy.cleanPodPolicy unset: the operator's default `None` made"
            " explicit (finished pods stay; trainops recommends `All`)",
        )
    for key in ("backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished"):
        if key in policy:
            out[key] = policy[key]
    gang = policy.get("schedulingPolicy")
    if gang is not None and not (
        cluster.scheduler.kind == VOLCANO_SCHEDULER
        and gang.get("queue") in (None, cluster.scheduler.queue)
    ):
        notes.add(
            ["spec", "runPolicy", "schedulingPolicy"],
            "schedulingPolicy is rendered from"
            f" cluster `{cluster.name}`'s scheduler ({cluster.scheduler.kind}): dropped",
        )
    if policy.get("suspend"):
        notes.add(
            ["spec", "runPolicy", "suspend"],
            "suspend is never set from Git (Kueue owns it): dropped",
        )
    job["runPolicy"] = out
