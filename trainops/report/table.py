"""The jobs x clusters table `trainops build` prints: one row per job placement, from the
built objects (what the cluster will run), GPUs counted by `trainops.facts.gpus`."""

from __future__ import annotations

from typing import Any

from trainops.facts import pod_security as pss
from trainops.facts.gpus import job_gpus
from trainops.facts.kubeflow import KUBEFLOW_REPLICA_KEYS, REPLICA_TYPES
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL
from trainops.kube.trainjob import node_pod
from trainops.spec.model import ClusterProfile

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


def _container_env(template: dict[str, Any]) -> dict[str, str]:
    container = template["spec"]["containers"][0]  # the training container comes first
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


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
    references. The GPU product and NCCL mode are the Workers' (the pods that train; an MPI
    Launcher has neither)."""
    spec = job["spec"]
    gpus = job_gpus(job, {g.resource for g in cluster.gpus})
    if job["kind"] == "TrainJob":
        pod = node_pod(job, runtime)
        template: dict[str, Any] = pod.template
        templates = [template]
        pods = pod.replicas or 1
        shape = f"TrainJob {pod.replica_type}"
    else:
        replicas = spec[KUBEFLOW_REPLICA_KEYS[job["kind"]]]
        pods = sum(r.get("replicas", 1) for r in replicas.values())
        training = replicas.get("Worker") or next(iter(replicas.values()))
        template = training["template"]
        templates = [r["template"] for r in replicas.values()]
        elastic = spec.get("elasticPolicy")
        order = REPLICA_TYPES[job["kind"]]
        shape = (
            f"elastic {elastic['minReplicas']}-{elastic['maxReplicas']}"
            if elastic
            else "+".join(sorted(replicas, key=order.index))
        )
    scheduler = template["spec"].get("schedulerName") or (
        "kueue" if KUEUE_QUEUE_LABEL in job["metadata"].get("labels", {}) else "default"
    )
    env = _container_env(template)
    nccl = {"0": "rdma", "1": "tcp"}.get(env.get("NCCL_IB_DISABLE", ""), "-")
    product = ",".join(template["spec"].get("nodeSelector", {}).values()) or "-"
    return {
        "cluster": cluster.name,
        "job": job["metadata"]["name"],
        "namespace": job["metadata"].get("namespace", ""),
        "shape": shape,
        "pods": str(pods),
        "gpus": str(gpus),
        "gpu product": product,
        "scheduler": scheduler,
        "nccl": nccl,
        "pod security": pod_security(templates),
    }


def format_table(rows: list[dict[str, str]]) -> str:
    widths = {c: max([len(c), *(len(r[c]) for r in rows)]) for c in COLUMNS}
    lines = ["  ".join(c.upper().ljust(widths[c]) for c in COLUMNS)]
    lines += ["  ".join(r[c].ljust(widths[c]) for c in COLUMNS) for r in rows]
    return "\n".join(line.rstrip() for line in lines)
