"""A job as a Kubeflow Trainer v2 TrainJob: small, referencing a runtime (`runtimes.py`).

The TrainJob says what is the job's own: the image, torchrun around the program, args, env,
numNodes and processes per node, resources per node; and in one runtime patch (manager
`trainops.dev/render`) its pod's labels, volumes and mounts, security context and grace
period. The cluster's NCCL env, GPU selectors, tolerations and gang scheduling live in the
runtime. The job's pod fields and escape hatch (`podTemplate`, docs/escape-hatch.md) are
merged into the node pod as on every v1 kind, then written where the Trainer reads them: the
training container's image, command, args, env and resources in `trainer`, the rest in the
runtime patch (what a v2.3 patch cannot carry is refused at load: spec/trainer_v2.py).
Kueue: the queue label only, never `suspend` (Kueue sets it on creation and flips it on
admission). Volcano: nothing here; the queue is the runtime's (v2.3 reads it there).

`trainjob(job)` is the cluster-agnostic base, `trainjob(job, cluster, target)` what runs on
that cluster; the overlay is their difference, as for the v1 kinds (`objects.py`).
"""

from __future__ import annotations

import copy
from typing import Any

from trainops.facts.kubeflow import PYTORCH_CONTAINER
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL
from trainops.facts.trainer import (
    CLUSTER_TRAINING_RUNTIME,
    NODE_CONTAINER,
    NODE_JOB,
    PATCH_POD_SPEC_FIELDS,
    TRAINER_API,
    TRAINER_CONTAINER_FIELDS,
    TRAINER_GROUP,
    TRAINING_RUNTIME,
    TRAINJOB,
)
from trainops.jobspec.model import ClusterProfile, Target, TrainingJob
from trainops.render import overrides, runtimes
from trainops.render.pod import (
    _env,
    _pod_security,
    _resources,
    _volumes,
    pod_template,
    program_args,
    scratch,
    torchrun_command,
    training_replica,
)

# The manager of the one runtime patch we write; others (Kueue, webhooks) own theirs.
PATCH_MANAGER = "trainops.dev/render"


def _runtime_ref(job: TrainingJob, cluster: ClusterProfile | None, target: Target | None) -> Any:
    if runtimes.needs_own_runtime(job):
        return {"apiGroup": TRAINER_GROUP, "kind": TRAINING_RUNTIME, "name": job.name}
    gpu = runtimes.job_gpu(job, cluster, target)
    # The base (no cluster) names no product: each overlay patches in its cluster's.
    name = runtimes.RUNTIME_PREFIX if job.gpus_per_replica and gpu is None else None
    return {
        "apiGroup": TRAINER_GROUP,
        "kind": CLUSTER_TRAINING_RUNTIME,
        "name": name or runtimes.runtime_name(gpu),
    }


def _runtime_pod(
    job: TrainingJob, cluster: ClusterProfile | None, target: Target | None
) -> dict[str, Any]:
    """The node pod spec of the runtime the TrainJob references, as rendered for it."""
    own = job if runtimes.needs_own_runtime(job) else None
    spec = runtimes.runtime_spec(cluster, runtimes.job_gpu(job, cluster, target), own)
    node = spec["template"]["spec"]["replicatedJobs"][0]
    pod: dict[str, Any] = node["template"]["spec"]["template"]["spec"]
    return pod


def _node_pod(
    job: TrainingJob,
    runtime: dict[str, Any],
    trainer: dict[str, Any],
) -> dict[str, Any]:
    """The node pod the TrainJob asks for, in the v1 shape the job's pod fields and escape
    hatch are written against (training container `pytorch`), with them merged in
    (`render/overrides.py`, the same merge as every v1 kind). Its container starts from the
    runtime's security context, its spec from the runtime's tolerations and node selector."""
    volumes, mounts = _volumes(job)
    scratch_volumes, scratch_mounts = scratch(job)
    container: dict[str, Any] = {"name": PYTORCH_CONTAINER}
    container.update(
        {key: trainer[field] for key, field in TRAINER_CONTAINER_FIELDS.items() if field in trainer}
    )
    container["securityContext"] = copy.deepcopy(runtime["containers"][0]["securityContext"])
    container["volumeMounts"] = mounts + scratch_mounts
    spec: dict[str, Any] = {
        "containers": [container],
        "securityContext": _pod_security(job),
        "terminationGracePeriodSeconds": job.termination_grace_seconds,
        "volumes": volumes + scratch_volumes,
    }
    for key in ("nodeSelector", "tolerations"):
        if key in runtime:
            spec[key] = copy.deepcopy(runtime[key])
    pod = {"metadata": pod_template(job)["metadata"], "spec": spec}
    return overrides.apply(pod, job.pod, NODE_JOB)


def _runtime_patch(pod: dict[str, Any], runtime: dict[str, Any]) -> dict[str, Any]:
    """The merged node pod's fields in the one runtime patch we write (only those v2.3's
    patches allow: the loader refuses the rest, spec/trainer_v2.py). The patch is merged
    into the runtime by strategic merge: a list without a merge key (tolerations) replaces
    the runtime's, so it carries the runtime's too; a map (nodeSelector) only what differs."""
    container = pod["spec"]["containers"][0]
    patched: dict[str, Any] = {"name": NODE_CONTAINER, "volumeMounts": container["volumeMounts"]}
    if container["securityContext"] != runtime["containers"][0]["securityContext"]:
        patched["securityContext"] = container["securityContext"]
    pod_spec: dict[str, Any] = {"containers": [patched]}
    for key, value in pod["spec"].items():
        if key in PATCH_POD_SPEC_FIELDS and key not in ("containers", "initContainers"):
            pod_spec[key] = value
    selector = {
        k: v for k, v in pod_spec.pop("nodeSelector", {}).items()
        if runtime.get("nodeSelector", {}).get(k) != v
    }  # fmt: skip
    if selector:
        pod_spec["nodeSelector"] = selector
    if pod_spec.get("tolerations") == runtime.get("tolerations"):
        pod_spec.pop("tolerations", None)
    node = {
        "name": NODE_JOB,
        "template": {"spec": {"template": {"metadata": pod["metadata"], "spec": pod_spec}}},
    }
    return {
        "manager": PATCH_MANAGER,
        "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [node]}}},
    }


def trainjob(
    job: TrainingJob,
    labels: dict[str, str],
    annotations: dict[str, str],
    cluster: ClusterProfile | None = None,
    target: Target | None = None,
) -> dict[str, Any]:
    gpu = runtimes.job_gpu(job, cluster, target)
    # The runtime's container carries the cluster's NCCL env: the TrainJob's env is the job's.
    node = training_replica(job, PYTORCH_CONTAINER, None)
    asked: dict[str, Any] = {
        "image": job.image,
        "command": torchrun_command(job) if job.command else None,
        "args": program_args(job),
        "env": _env(job, target, None),
        "resourcesPerNode": _resources(node, gpu, cluster),
    }
    runtime = _runtime_pod(job, cluster, target)
    pod = _node_pod(job, runtime, {k: v for k, v in asked.items() if v is not None})
    merged = pod["spec"]["containers"][0]
    trainer: dict[str, Any] = {
        field: merged.get(key) for key, field in TRAINER_CONTAINER_FIELDS.items()
    }
    trainer["numNodes"] = job.pods_on(target)
    trainer["numProcPerNode"] = max(job.gpus_per_replica, 1)
    spec: dict[str, Any] = {
        "runtimeRef": _runtime_ref(job, cluster, target),
        "trainer": trainer,
        "runtimePatches": [_runtime_patch(pod, runtime)],
    }
    if job.run_policy.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = job.run_policy.active_deadline_seconds
    meta: dict[str, Any] = {
        "name": job.name,
        "namespace": job.namespace,
        "labels": dict(labels),
        "annotations": dict(annotations),
    }
    # Volcano's queue is the runtime's (runtimes.py): v2.3 ignores it on TrainJob metadata.
    if cluster is not None and cluster.scheduler.queue and cluster.scheduler.kind == "kueue":
        meta["labels"][KUEUE_QUEUE_LABEL] = cluster.scheduler.queue
    return {"apiVersion": TRAINER_API, "kind": TRAINJOB, "metadata": meta, "spec": spec}


def trainjob_objects(
    job: TrainingJob,
    labels: dict[str, str],
    annotations: dict[str, str],
    cluster: ClusterProfile | None = None,
    target: Target | None = None,
) -> list[dict[str, Any]]:
    """The TrainJob and, when it needs one, its own TrainingRuntime."""
    out = [trainjob(job, labels, annotations, cluster, target)]
    if runtimes.needs_own_runtime(job):
        out.append(runtimes.job_runtime(job, labels, cluster, target))
    return out
