"""A Kubeflow Trainer v2 TrainJob, run locally as the PyTorchJob it amounts to.

The Trainer runs a TrainJob on a torch runtime as numNodes pods of one merged template (the
runtime's `node` job, the TrainJob's runtime patches and `trainer`, `trainops.kube.trainjob`)
and gives torchrun its rendezvous through PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK,
PET_MASTER_ADDR and PET_MASTER_PORT. A fixed-size PyTorchJob with one Master and numNodes - 1
Workers of that template gets the same PET_* variables from the v1 operator (plus
MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK, which torchrun overrides for the processes it
starts), so run-local's operator model runs it unchanged; the conversion is printed.
"""

from __future__ import annotations

import copy
from typing import Any

from trainops.core.values import as_dict, as_int, as_list
from trainops.facts.kubeflow import PYTORCH_CONTAINER
from trainops.facts.trainer import NODE_CONTAINER, NODE_JOB
from trainops.kube.trainjob import node_pod


def _node_job_spec(runtime: dict[str, Any] | None) -> dict[str, Any]:
    template = as_dict(as_dict(as_dict(runtime).get("spec")).get("template"))
    for job in as_list(as_dict(template.get("spec")).get("replicatedJobs")):
        if as_dict(job).get("name") == NODE_JOB:
            return as_dict(as_dict(as_dict(job).get("template")).get("spec"))
    return {}


def as_pytorchjob(trainjob: dict[str, Any], runtime: dict[str, Any] | None) -> dict[str, Any]:
    """The PyTorchJob the TrainJob + runtime pair runs as (see the module docstring)."""
    pod = node_pod(trainjob, runtime)
    template = copy.deepcopy(pod.template)
    for container in as_list(as_dict(template.get("spec")).get("containers")):
        if as_dict(container).get("name") == NODE_CONTAINER:
            container["name"] = PYTORCH_CONTAINER
    restart = pod.restart_policy or "OnFailure"
    replicas: dict[str, Any] = {
        "Master": {"replicas": 1, "restartPolicy": restart, "template": template}
    }
    nodes = pod.replicas or 1
    if nodes > 1:
        replicas["Worker"] = {
            "replicas": nodes - 1,
            "restartPolicy": restart,
            "template": copy.deepcopy(template),
        }
    run_policy: dict[str, Any] = {"cleanPodPolicy": "All"}
    backoff = as_int(_node_job_spec(runtime).get("backoffLimit"))
    if backoff is not None:
        run_policy["backoffLimit"] = backoff
    trainer = as_dict(as_dict(trainjob.get("spec")).get("trainer"))
    spec: dict[str, Any] = {"pytorchReplicaSpecs": replicas, "runPolicy": run_policy}
    if "numProcPerNode" in trainer:
        spec["nprocPerNode"] = str(trainer["numProcPerNode"])
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": copy.deepcopy(as_dict(trainjob.get("metadata"))),
        "spec": spec,
    }


def conversion_note(trainjob: dict[str, Any], runtime: dict[str, Any] | None) -> str:
    ref = as_dict(as_dict(trainjob.get("spec")).get("runtimeRef"))
    which = f"{ref.get('kind', 'ClusterTrainingRuntime')} {ref.get('name')}"
    if runtime is None:
        return (
            f"TrainJob (Trainer v2): its runtime {which} is not in the build; running the"
            " TrainJob's own part as a Master + Workers PyTorchJob"
        )
    return (
        f"TrainJob (Trainer v2) with {which}: run as the PyTorchJob it amounts to, one Master"
        " and numNodes - 1 Workers of the merged node pod (the PET_* rendezvous env is the same)"
    )
