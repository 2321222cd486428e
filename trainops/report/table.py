"""The jobs x clusters table `trainops build` prints: one row per job placement, from the
built objects (what the cluster will run), GPUs counted by `trainops.facts.gpus`."""

from __future__ import annotations

from typing import Any

from trainops.facts.gpus import job_gpus
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL
from trainops.rules.trainjob import node_pod
from trainops.spec.model import ClusterProfile

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
)


def _container_env(template: dict[str, Any]) -> dict[str, str]:
    container = template["spec"]["containers"][0]  # the training container comes first
    return {e["name"]: e.get("value", "") for e in container.get("env", [])}


def summarize(
    cluster: ClusterProfile, job: dict[str, Any], runtime: dict[str, Any] | None = None
) -> dict[str, str]:
    """One table row from a built PyTorchJob, or a TrainJob and the runtime it references."""
    spec = job["spec"]
    gpus = job_gpus(job, {g.resource for g in cluster.gpus})
    if job["kind"] == "TrainJob":
        pod = node_pod(job, runtime)
        template: dict[str, Any] = pod.template
        pods = pod.replicas or 1
        shape = f"TrainJob {pod.replica_type}"
    else:
        replicas = spec["pytorchReplicaSpecs"]
        pods = sum(r.get("replicas", 1) for r in replicas.values())
        template = list(replicas.values())[-1]["template"]
        elastic = spec.get("elasticPolicy")
        shape = (
            f"elastic {elastic['minReplicas']}-{elastic['maxReplicas']}"
            if elastic
            else "+".join(sorted(replicas))
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
    }


def format_table(rows: list[dict[str, str]]) -> str:
    widths = {c: max([len(c), *(len(r[c]) for r in rows)]) for c in COLUMNS}
    lines = ["  ".join(c.upper().ljust(widths[c]) for c in COLUMNS)]
    lines += ["  ".join(r[c].ljust(widths[c]) for c in COLUMNS) for r in rows]
    return "\n".join(line.rstrip() for line in lines)
