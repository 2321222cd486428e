"""One NetworkPolicy per job: only the job's own pods reach its pods, except Prometheus on
the metrics port.

torch's c10d rendezvous store (the master port, and torchrun's rendezvous endpoint) has no
authentication and unpickles what clients send: any pod that can reach it can run code in
every rank. NCCL also opens ephemeral ports between the ranks, so the job's own pods are
admitted on every port; everyone else only on the metrics port, and only from the
monitoring namespace (no such rule for ranks that serve no trainer metrics,
`mpi.rankProgram: executable`). Egress is left open (datasets, model hubs, DNS). A hostNetwork pod
is outside NetworkPolicy altogether (docs/security.md).
"""

from __future__ import annotations

from typing import Any

from trainops.jobspec.model import ClusterProfile, TrainingJob
from trainops.jobspec.schemas import CLUSTER, default
from trainops.render.pod import JOB_LABEL

NETWORKING_API = "networking.k8s.io/v1"
# Set by the API server on every namespace (Kubernetes >= 1.22): selects one by name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def network_policy(
    job: TrainingJob, metadata: dict[str, Any], cluster: ClusterProfile | None = None
) -> dict[str, Any]:
    """The job's NetworkPolicy; the base admits the schema's default monitoring namespace,
    a cluster's overlay its own."""
    monitoring = (
        cluster.monitoring_namespace
        if cluster is not None
        else default(CLUSTER, "monitoringNamespace")
    )
    own_pods = {"podSelector": {"matchLabels": {JOB_LABEL: job.name}}}
    ingress: list[dict[str, Any]] = [{"from": [own_pods]}]
    if job.serves_trainer_metrics():
        ingress.append(
            {
                "from": [
                    {"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: monitoring}}}
                ],
                "ports": [{"port": job.metrics_port, "protocol": "TCP"}],
            }
        )
    return {
        "apiVersion": NETWORKING_API,
        "kind": "NetworkPolicy",
        "metadata": metadata,
        "spec": {
            "podSelector": {"matchLabels": {JOB_LABEL: job.name}},
            "policyTypes": ["Ingress"],
            "ingress": ingress,
        },
    }
