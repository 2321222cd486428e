"""The environment the Kubeflow Training Operator (v1) injects into a PyTorchJob's pods.

Pure functions of the job object, written from the operator's own code
(`pkg/controller.v1/pytorch/envvar.go`, `master.go`, `elastic.go` and the API defaulter
`pkg/apis/kubeflow.org/v1/pytorch_defaults.go`, release 1.7-1.9); docs/run-local.md has the
table, with what we could not confirm. The values are the cluster's (service host names, the
`pytorchjob-port`): `trainops.runlocal.plan` maps them onto this machine afterwards, so a test
can compare these with what the operator would set, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainops.facts.kubeflow import (
    DEFAULT_RDZV_BACKEND,
    DEFAULT_REPLICAS,
    PYTORCH_CONTAINER,
    PYTORCH_DEFAULT_NPROC_PER_NODE,
    PYTORCH_DEFAULT_PORT,
    PYTORCH_PORT_NAME,
    REPLICA_TYPES,
    default_restart_policy,
    elastic_range,
)
from trainops.kube.pods import training_container_index

KIND = "PyTorchJob"


@dataclass(frozen=True)
class Replica:
    """One pod of the job: its replica type and index (`worker-1` is Worker index 1)."""

    type: str
    index: int

    @property
    def name(self) -> str:
        """`master-0`, `worker-1`: the operator's pod-name suffix, our output prefix."""
        return f"{self.type.lower()}-{self.index}"

    def pod_name(self, job_name: str) -> str:
        """The pod's (and its headless service's) name: `<job>-<type>-<index>`."""
        return f"{job_name}-{self.name}".replace("/", "-")


def replica_specs(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    specs: dict[str, dict[str, Any]] = job["spec"]["pytorchReplicaSpecs"]
    return specs


def replica_count(spec: dict[str, Any]) -> int:
    """`replicas`, defaulted as the operator's setDefaultReplicas does."""
    return int(spec.get("replicas", DEFAULT_REPLICAS))


def replicas(job: dict[str, Any]) -> list[Replica]:
    """Every pod of the job, Master first (rank 0), in index order."""
    specs = replica_specs(job)
    return [
        Replica(rtype, i)
        for rtype in REPLICA_TYPES[KIND]
        if rtype in specs
        for i in range(replica_count(specs[rtype]))
    ]


def container(template: dict[str, Any]) -> dict[str, Any]:
    """The container the operator configures: the one named `pytorch` (else the first)."""
    containers: list[dict[str, Any]] = template["spec"]["containers"]
    return containers[training_container_index(containers, PYTORCH_CONTAINER)]


def pytorch_port(job: dict[str, Any], rtype: str) -> int:
    """The `pytorchjob-port` of `rtype`'s container, or the default the defaulter adds."""
    spec = replica_specs(job).get(rtype)
    if spec is None:
        return PYTORCH_DEFAULT_PORT
    for port in container(spec["template"]).get("ports", []):
        if port.get("name") == PYTORCH_PORT_NAME:
            return int(port["containerPort"])
    return PYTORCH_DEFAULT_PORT


def nproc_per_node(job: dict[str, Any]) -> str:
    return str(job["spec"].get("nprocPerNode", PYTORCH_DEFAULT_NPROC_PER_NODE))


def _nproc_int(job: dict[str, Any]) -> int:
    """getNprocPerNodeInt: the integer, or 1 when it is not one ("auto")."""
    try:
        return int(nproc_per_node(job))
    except ValueError:
        return 1


def total_replicas(job: dict[str, Any]) -> int:
    return sum(replica_count(s) for s in replica_specs(job).values())


def rank(job: dict[str, Any], replica: Replica) -> int:
    """Node rank: Master 0, Worker i -> i + 1 when there is a Master (else i)."""
    has_master = "Master" in replica_specs(job)
    return replica.index + 1 if replica.type == "Worker" and has_master else replica.index


def operator_env(job: dict[str, Any], replica: Replica) -> list[tuple[str, str]]:
    """(name, value) pairs appended to the container's env, in the operator's order."""
    spec = job["spec"]
    name = job["metadata"]["name"]
    specs = replica_specs(job)
    env: list[tuple[str, str]] = [("PYTHONUNBUFFERED", "1")]
    total = total_replicas(job)
    if "Master" in specs:
        port = str(pytorch_port(job, "Master"))
        addr = Replica("Master", 0).pod_name(name)
        node_rank = str(rank(job, replica))
        env += [
            ("MASTER_PORT", port),
            ("PET_MASTER_PORT", port),
            ("MASTER_ADDR", addr),
            ("PET_MASTER_ADDR", addr),
            # A count of processes, not pods: replicas x nprocPerNode (1 when "auto").
            ("WORLD_SIZE", str(total * _nproc_int(job))),
            ("RANK", node_rank),
            ("PET_NODE_RANK", node_rank),
        ]
    env.append(("PET_NPROC_PER_NODE", nproc_per_node(job)))
    elastic = spec.get("elasticPolicy")
    if elastic is None:
        env.append(("PET_NNODES", str(total)))
        return env
    host = elastic.get("rdzvHost") or Replica("Worker", 0).pod_name(name)
    port_ = elastic.get("rdzvPort") or pytorch_port(job, "Worker")
    env.append(("PET_RDZV_ENDPOINT", f"{host}:{port_}"))
    env.append(("PET_RDZV_BACKEND", str(elastic.get("rdzvBackend") or DEFAULT_RDZV_BACKEND)))
    low, high = elastic_range(spec) or (total, total)
    env.append(("PET_NNODES", f"{low}:{high}"))
    if "maxRestarts" in elastic:
        env.append(("PET_MAX_RESTARTS", str(elastic["maxRestarts"])))
    if "nProcPerNode" in elastic:  # deprecated in favour of spec.nprocPerNode
        env.append(("PET_NPROC_PER_NODE", str(elastic["nProcPerNode"])))
    if "rdzvId" in elastic:
        env.append(("PET_RDZV_ID", str(elastic["rdzvId"])))
    if elastic.get("rdzvConf"):
        conf = ",".join(f"{c['key']}={c['value']}" for c in elastic["rdzvConf"])
        env.append(("PET_RDZV_CONF", conf))
    if elastic.get("standalone"):
        env.append(("PET_STANDALONE", ""))
    return env


def restart_policy(job: dict[str, Any], rtype: str) -> str:
    default = default_restart_policy(str(job.get("apiVersion", "")), KIND, rtype)
    return str(replica_specs(job)[rtype].get("restartPolicy", default))
