"""A cluster profile for rule tests: RDMA on net1, A100s, Argo CD with self-heal."""

from __future__ import annotations

import pytest

from trainops.facts.pod_fence import PodFence
from trainops.jobspec.model import (
    Capacity,
    ClusterProfile,
    Delivery,
    GpuProduct,
    Network,
    PodSecurityLevel,
    Rdma,
    Scheduler,
    Storage,
)


def make_cluster(**changes: object) -> ClusterProfile:
    base: dict[str, object] = {
        "name": "gpu-east",
        "file": "clusters/gpu-east.yaml",
        "kubernetes_version": "1.30",
        "network": Network(
            transport="rdma",
            socket_interface="net1",
            rdma=Rdma(
                hca="mlx5",
                gid_index=3,
                gdr_level="PHB",
                device_resource="rdma/rdma_shared_device_a",
                multus_network="rdma-net",
            ),
        ),
        "gpus": (
            GpuProduct(
                name="a100-80gb",
                resource="nvidia.com/gpu",
                per_node=8,
                node_selector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"},
            ),
        ),
        "scheduler": Scheduler(kind="volcano", queue="training"),
        "storage": Storage(default_class="nfs", classes=("nfs",)),
        "namespaces": ("ml-train",),
        "delivery": Delivery(tool="argocd", self_heal=True),
        # 32 A100s on 4 nodes; queue `training` with a quota of 24 (gang-unschedulable, ...).
        "capacity": Capacity(nodes={"a100-80gb": 4}, queue_gpus={"training": 24}),
        # An RDMA cluster whose nodes do not raise the memlock limit labels its namespaces
        # privileged for IPC_LOCK (admission has no per-capability exception); the node's
        # /dev/shm as a hostPath (the EFA/RDMA recipe) is what the privilege is for too.
        "pod_security": PodSecurityLevel(
            level="privileged", allow_capabilities=("IPC_LOCK",), allow_host_paths=("/dev/shm",)
        ),
        # What `jobAccess` would give jobs here (pod-fence): Volcano's scheduler and kube-
        # scheduler's, and the default account's token, which most fixtures (written for
        # other rules) leave mounted; the token fence is exercised by the pod-fence fixtures
        # with their own cluster and by tests/security/test_pod_fence.py on real profiles.
        "job_access": PodFence(
            schedulers=frozenset({"volcano", "default-scheduler"}),
            token_accounts=frozenset({"default"}),
            priority_classes=frozenset({"training-high"}),
        ),
    }
    base.update(changes)
    return ClusterProfile(**base)  # type: ignore[arg-type]


@pytest.fixture
def cluster() -> ClusterProfile:
    return make_cluster()
