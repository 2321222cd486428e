"""The jobs x clusters table `trainops build` prints: one row per job placement, from the
built objects (what the cluster will run), GPUs counted by `trainops.facts.gpus`."""

from __future__ import annotations

from typing import Any

from trainops.core.manifest import Manifest
from trainops.core.values import as_dict
from trainops.facts import pod_security as pss
from trainops.facts.gpus import job_gpus
from trainops.facts.kubeflow import REPLICA_TYPES
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL
from trainops.jobspec.model import ClusterProfile
from trainops.kube.objects import Object
from trainops.kube.trainjob import find_runtime

# The training job kinds `trainops render` writes, one row each.
KINDS = frozenset(REPLICA_TYPES)

COLUMNS = (
    "cluster",
    "job",
    "namespace",
    "shape",
    "pods",
    "gpus",
    "gpu product",
    "scheduler",
    "nccl",
    "pod security",
)


def _reason(breach: pss.Breach) -> str:
    kind, _, value = (breach.exception or "").partition(":")
    if kind == "capability":
        return f"adds {value}"
    if kind == "hostPath":
        return f"hostPath {value}"
    return breach.control


def pod_security(templates: list[dict[str, Any]]) -> str:
    """The Pod Security level the pods meet (the namespace's `enforce` label must allow it),
    naming what keeps them from `restricted`: `restricted`, `privileged (IPC_LOCK)`."""
    found = [
        breach
        for template in templates
        for breach in pss.breaches(template.get("metadata") or {}, template.get("spec") or {})
    ]
    level = pss.level_of(found)
    if not found:
        return level
    why = sorted({_reason(b) for b in found})
    return f"{level} ({', '.join(why)})"


def summarize(
    cluster: ClusterProfile, job: dict[str, Any], runtime: dict[str, Any] | None = None
) -> dict[str, str]:
    """One table row from a built PyTorchJob, TFJob or MPIJob, or a TrainJob and the runtime it
    references, read through `trainops.kube`. The GPU product and NCCL mode are the Workers'
    (the pods that train; an MPI Launcher has neither)."""
    obj = Object(Manifest(job), Object(Manifest(runtime)) if runtime is not None else None)
    training = obj.replica("Worker") or obj.pods[0]
    span = obj.elastic_range
    if obj.is_trainjob:
        shape = f"TrainJob {training.replica_type}"
    elif span is not None:
        shape = f"elastic {span[0]}-{span[1]}"
    else:
        order = REPLICA_TYPES[obj.kind]
        shape = "+".join(sorted((str(p.replica_type) for p in obj.pods), key=order.index))
    labels = as_dict(obj.manifest.metadata.get("labels"))
    scheduler = training.scheduler_name or ("kueue" if KUEUE_QUEUE_LABEL in labels else "default")
    container = obj.training_container(training)
    env = {k: v.value or "" for k, v in container.env.items()} if container else {}
    nccl = {"0": "rdma", "1": "tcp"}.get(env.get("NCCL_IB_DISABLE", ""), "-")
    selector = as_dict(training.spec.get("nodeSelector"))
    return {
        "cluster": cluster.name,
        "job": obj.name,
        "namespace": obj.namespace or "",
        "shape": shape,
        "pods": str(obj.pod_count()),
        "gpus": str(job_gpus(job, {g.resource for g in cluster.gpus})),
        "gpu product": ",".join(str(v) for v in selector.values()) or "-",
        "scheduler": scheduler,
        "nccl": nccl,
        "pod security": pod_security([p.template for p in obj.pods]),
    }


def format_table(rows: list[dict[str, str]]) -> str:
    widths = {c: max([len(c), *(len(r[c]) for r in rows)]) for c in COLUMNS}
    lines = ["  ".join(c.upper().ljust(widths[c]) for c in COLUMNS)]
    lines += ["  ".join(r[c].ljust(widths[c]) for c in COLUMNS) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def rows(cluster: ClusterProfile, built: list[Manifest]) -> list[dict[str, str]]:
    """A row per training job in one cluster's build; a TrainJob is read with the runtime it
    references, found in the same build as the Trainer finds it."""
    objects = [m.data for m in built]
    out = []
    for obj in objects:
        if obj.get("kind") in KINDS:
            out.append(summarize(cluster, obj))
        elif obj.get("kind") == "TrainJob":
            out.append(summarize(cluster, obj, find_runtime(obj, objects)))
    return out
