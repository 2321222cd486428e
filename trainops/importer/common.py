"""What every job kind's import shares: the spec's head (name, namespace, image), the training
pod's fields (size, volumes, env, pod settings, labels), `runPolicy`, the job's labels and the
cluster target. Each kind's module (`pytorch.py`, `tensorflow.py`, `mpi.py`) maps its own
replica specs and calls these for the rest."""

from __future__ import annotations

import copy
import re
from typing import Any

from trainops.core.manifest import Manifest
from trainops.facts.gpus import container_gpus, is_gpu_resource
from trainops.facts.kubeflow import default_clean_pod_policy
from trainops.facts.schedulers import QUEUE_KEYS, VOLCANO_SCHEDULER
from trainops.importer.notes import Notes
from trainops.importer.pod import map_env, map_volumes
from trainops.jobspec.metadata import owner
from trainops.jobspec.model import ClusterProfile
from trainops.jobspec.schemas import CLUSTER, schema
from trainops.kube.objects import Object
from trainops.kube.pods import PodTemplate
from trainops.render.pod import JOB_LABEL, MULTUS_ANNOTATION, nccl_env

ISTIO = "sidecar.istio.io/inject"
# What trainops renders for every replica of every kind (render/tfjob.py, render/mpijob.py).
RENDERED_RESTART_POLICY = "OnFailure"


def _namespace_fence() -> re.Pattern[str]:
    """The system namespaces no profile may list, as the profile schema says (its one place)."""
    item = schema(CLUSTER)["properties"]["namespaces"]["items"]
    return re.compile(item["not"]["pattern"])


def head(
    obj: dict[str, Any], framework: str, image: Any, cluster: ClusterProfile, notes: Notes
) -> dict[str, Any]:
    """apiVersion .. image; the namespace must be one the cluster allows (else refused, with
    the `--namespace` that would import it)."""
    meta = obj.get("metadata") or {}
    job: dict[str, Any] = {
        "apiVersion": "trainops.dev/v1alpha1",
        "kind": "TrainingJob",
        "name": meta.get("name"),
        "namespace": meta.get("namespace") or "default",
        "framework": framework,
        "image": image,
    }
    if not meta.get("namespace"):
        notes.add(["metadata"], "no namespace: `default` made explicit")
    namespace = job["namespace"]
    if namespace not in cluster.namespaces:
        allowed = ", ".join(f"`{n}`" for n in cluster.namespaces)
        advice = f"import with `--namespace {cluster.namespaces[0]}`"
        if _namespace_fence().match(namespace):
            why = " (a system namespace: no profile may list it)"
        else:
            why = ""
            advice += f", add `{namespace}` to the profile's `namespaces`,"
        notes.refuse(
            ["metadata", "namespace"] if meta.get("namespace") else ["metadata"],
            f"namespace `{namespace}` is not allowed on cluster `{cluster.name}`{why}"
            f" (allowed: {allowed}): {advice} or import for another --cluster",
        )
    return job


def scheduler_keys(
    keys: dict[str, Any], cluster: ClusterProfile, notes: Notes, where: list[str | int]
) -> dict[str, Any]:
    """`keys` (labels or annotations) without the ones the cluster profile sets (the queue,
    Volcano's group, Multus, ...): each dropped with a note naming what replaces it, so an
    import adopts a manifest written for one scheduler on a cluster set up for any."""
    kept: dict[str, Any] = {}
    queue = cluster.scheduler.queue
    for key, value in keys.items():
        who = owner(str(key))
        if who is None:
            kept[key] = value
            continue
        if str(key) in QUEUE_KEYS:
            if cluster.scheduler.kind in ("kueue", VOLCANO_SCHEDULER) and value == queue:
                what = f"the profile renders the same queue `{queue}`"
            elif cluster.scheduler.kind in ("kueue", VOLCANO_SCHEDULER):
                what = (
                    f"queue `{value}` differs from cluster `{cluster.name}`'s queue `{queue}`"
                    f" ({cluster.scheduler.kind}), which the job is rendered into"
                )
            else:
                what = f"cluster `{cluster.name}` has no queue (scheduler `default`)"
            notes.add([*where, key], f"`{key}: {value}` dropped: {what}")
        else:
            notes.add([*where, key], f"`{key}` dropped: set by {who}")
    return kept


def unknown_keys(
    spec: dict[str, Any], known: set[str], kind: str, notes: Notes, where: list[str | int]
) -> None:
    for key in sorted(set(spec) - known):
        notes.add(
            [*where, key],
            f"spec.{key} is not carried: trainops renders no such {kind} field; dropped",
        )


def unknown_replica_types(
    specs: dict[str, Any], types: tuple[str, ...], kind: str, key: str, notes: Notes
) -> None:
    """Name every replica type trainops does not render for `kind` (it is dropped)."""
    for rtype in sorted(set(specs) - set(types)):
        notes.add(
            ["spec", key, rtype],
            f"replica type {rtype} is not one trainops renders for a {kind}"
            f" ({', '.join(types)}): dropped",
        )


def replicas_of(obj: dict[str, Any]) -> dict[str, PodTemplate]:
    """The replica specs of a Kubeflow job as the operator reads them (`trainops.kube`, the
    view every reader shares): by replica type as written, each with its template, its pod
    count and its restart policy (written, else the operator's default). A replica type with
    no template is absent."""
    return {str(pod.replica_type): pod for pod in Object(Manifest(obj)).pods if pod.template}


def restart_policies(obj: dict[str, Any], notes: Notes, carried: set[str] | None = None) -> None:
    """trainops renders OnFailure everywhere: name every replica that said otherwise, or whose
    operator default (unset) is another."""
    for rtype, pod in sorted(replicas_of(obj).items()):
        if carried is not None and rtype not in carried:
            continue
        policy = pod.restart_policy
        if policy == RENDERED_RESTART_POLICY:
            continue
        if not pod.restart_policy_explicit:
            notes.add(
                list(pod.restart_policy_path[:-1]),
                f"{rtype}: no restartPolicy (the operator's default is {policy}): trainops"
                f" renders {RENDERED_RESTART_POLICY} (a failed pod is restarted, up to"
                " backoffLimit)",
            )
        else:
            notes.add(
                list(pod.restart_policy_path),
                f"restartPolicy {policy}: trainops renders {RENDERED_RESTART_POLICY} (a failed"
                " pod is restarted, up to backoffLimit)",
            )


def size(
    job: dict[str, Any], main: dict[str, Any], cluster: ClusterProfile, where: list[str | int]
) -> None:
    """gpusPerReplica and the cpu/memory requests of the training container."""
    products = {g.resource for g in cluster.gpus}
    job["gpusPerReplica"] = container_gpus(main, products)
    wanted = requests_of(main)
    if wanted:
        job["resources"] = wanted


def requests_of(container: dict[str, Any]) -> dict[str, str]:
    """cpu and memory requested (a limit alone is the request, as Kubernetes defaults it)."""
    resources = container.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    wanted = {k: requests.get(k, limits.get(k)) for k in ("cpu", "memory")}
    return {k: str(v) for k, v in wanted.items() if v is not None}


def pod_fields(
    job: dict[str, Any],
    template: dict[str, Any],
    main: dict[str, Any],
    *,
    beside: dict[str, dict[str, Any]],
    secrets: dict[str, dict[str, Any]],
    cluster: ClusterProfile,
    notes: Notes,
    where: list[str | int],
) -> None:
    """Volumes, env and the first-class pod fields of the training pods' template."""
    pod = template.get("spec") or {}
    map_volumes(job, pod, main=main, beside=beside, cluster=cluster, notes=notes, where=where)
    index = next((i for i, c in enumerate(pod.get("containers") or []) if c is main), 0)
    at: list[str | int] = [*where, "containers", index]
    nccl = nccl_env(cluster)
    map_env(job, main, secrets=secrets, cluster=cluster, nccl=nccl, notes=notes, where=at)
    for key in (
        "serviceAccountName",
        "priorityClassName",
        "terminationGracePeriodSeconds",
        "affinity",
    ):
        if key in pod:
            job[key] = copy.deepcopy(pod[key])
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
    meta = template.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != JOB_LABEL}
    annotations = dict(meta.get("annotations") or {})
    if annotations.get(ISTIO) == "false":
        del annotations[ISTIO]
    rdma = cluster.network.rdma if cluster.network.is_rdma else None
    if rdma and annotations.get(MULTUS_ANNOTATION) == rdma.multus_network:
        del annotations[MULTUS_ANNOTATION]
    labels = scheduler_keys(labels, cluster, notes, [*where[:-1], "metadata", "labels"])
    annotations = scheduler_keys(
        annotations, cluster, notes, [*where[:-1], "metadata", "annotations"]
    )
    if labels:
        job["podLabels"] = labels
    if annotations:
        job["podAnnotations"] = annotations


def run_policy(
    job: dict[str, Any],
    obj: dict[str, Any],
    policy: dict[str, Any],
    *,
    cluster: ClusterProfile,
    notes: Notes,
    where: list[str | int],
) -> None:
    """`runPolicy`: the operator's clean-up default made explicit; the gang from the cluster."""
    default = default_clean_pod_policy(str(obj.get("apiVersion")))
    out: dict[str, Any] = {"cleanPodPolicy": policy.get("cleanPodPolicy", default)}
    if "cleanPodPolicy" not in policy:
        notes.add(
            ["spec"],
            f"runPolicy.cleanPodPolicy unset: the operator's default `{default}` made"
            " explicit (trainops recommends `All`)",
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
            [*where, "schedulingPolicy"],
            "schedulingPolicy is rendered from"
            f" cluster `{cluster.name}`'s scheduler ({cluster.scheduler.kind}): dropped",
        )
    if policy.get("suspend"):
        notes.add([*where, "suspend"], "suspend is never set from Git (Kueue owns it): dropped")
    for key in sorted(
        set(policy)
        - {
            "cleanPodPolicy",
            "backoffLimit",
            "activeDeadlineSeconds",
            "ttlSecondsAfterFinished",
            "schedulingPolicy",
            "suspend",
        }
    ):
        notes.add([*where, key], f"runPolicy.{key} is not carried: trainops does not render it")
    job["runPolicy"] = out


def finish(
    job: dict[str, Any],
    obj: dict[str, Any],
    pod: dict[str, Any],
    main: dict[str, Any],
    *,
    cluster: ClusterProfile,
    notes: Notes,
    where: list[str | int],
) -> dict[str, Any]:
    """The job's own labels and annotations, and its one target (the GPU product named by the
    training pods' node selector)."""
    meta = obj.get("metadata") or {}
    job_labels = scheduler_keys(
        dict(meta.get("labels") or {}), cluster, notes, ["metadata", "labels"]
    )
    if job_labels:
        job["labels"] = job_labels
    annotations = scheduler_keys(
        dict(meta.get("annotations") or {}), cluster, notes, ["metadata", "annotations"]
    )
    if annotations:
        job["annotations"] = annotations
    gpu = next(
        (
            g
            for g in cluster.gpus
            if g.node_selector.items() <= (pod.get("nodeSelector") or {}).items()
        ),
        None,
    )
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
    products = {g.resource for g in cluster.gpus}
    limits = (main.get("resources") or {}).get("limits") or {}
    if any(is_gpu_resource(k, products) for k in limits) and not job["gpusPerReplica"]:
        notes.add([*where, "containers"], "GPU limits without a count")
    return job
