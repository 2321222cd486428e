"""Hand-built repository models for the gitops tests (no loader, no renderer needed)."""

from __future__ import annotations

from trainops.jobspec.model import (
    ClusterProfile,
    Delivery,
    GpuProduct,
    Network,
    RepoSettings,
    Repository,
    Scheduler,
    Storage,
)


def cluster(name: str, delivery: Delivery, namespaces: tuple[str, ...]) -> ClusterProfile:
    return ClusterProfile(
        name=name,
        file=f"clusters/{name}.yaml",
        kubernetes_version="1.31",
        network=Network(transport="tcp", socket_interface="eth0"),
        gpus=(
            GpuProduct(
                name="a100-80gb",
                resource="nvidia.com/gpu",
                per_node=8,
                node_selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            ),
        ),
        scheduler=Scheduler(kind="kueue", queue="training"),
        storage=Storage(default_class="standard", classes=("standard",)),
        namespaces=namespaces,
        delivery=delivery,
    )


SETTINGS = RepoSettings(
    repo_url="https://git.example.com/ml/trainops.git",
    revision="main",
    argocd_namespace="argocd",
    argocd_project="training",
    flux_namespace="flux-system",
)


def mixed_repo() -> Repository:
    """Two Argo CD clusters (by server URL and by name) and one Flux cluster."""
    clusters = [
        cluster(
            "onprem-a100",
            Delivery(tool="argocd", self_heal=True, prune=True),
            ("ml-research", "ml-prod"),
        ),
        cluster(
            "gke-h100",
            Delivery(tool="argocd", destination_name="gke-h100", self_heal=False, prune=False),
            ("ml-research",),
        ),
        cluster("eks-l4", Delivery(tool="flux", prune=True), ("ml-batch",)),
    ]
    return Repository(settings=SETTINGS, jobs=(), clusters={c.name: c for c in clusters})


def flux_only_repo() -> Repository:
    c = cluster("eks-l4", Delivery(tool="flux", prune=False), ("ml-batch",))
    return Repository(settings=SETTINGS, jobs=(), clusters={c.name: c})
