"""GPUs: which extended resources are GPUs, and how many a container, a pod and a job get.

One count for everyone: the renderer's table (`trainops build`), the PR diff's GPU change and
the rules all call these, so they cannot report different totals for one job.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from trainops.facts.kubeflow import KUBEFLOW_GROUP, elastic_range
from trainops.facts.trainer import TRAINER_GROUP, TRAINJOB

# Device plugins' resource names: NVIDIA (whole GPUs and MIG slices), AMD, Intel.
# https://github.com/NVIDIA/k8s-device-plugin, https://github.com/ROCm/k8s-device-plugin,
# https://github.com/intel/intel-device-plugins-for-kubernetes
GPU_RESOURCE = re.compile(r"^(nvidia\.com/(gpu|mig-.+)|amd\.com/gpu|gpu\.intel\.com/.+)$")
DEFAULT_GPU_RESOURCE = "nvidia.com/gpu"


def is_gpu_resource(name: str, products: Collection[str] = ()) -> bool:
    """Whether `name` is a GPU: a known device plugin's resource or one a cluster profile
    declares for its products (`products`, e.g. `nvidia.com/h100`)."""
    return name in products or bool(GPU_RESOURCE.match(name))


def _count(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return 0


def container_gpus(container: Mapping[str, Any], products: Collection[str] = ()) -> int:
    """GPUs a container gets. An extended resource given only as a limit is requested at that
    limit (Kubernetes defaults requests from limits), so requests win where both are given."""
    resources = container.get("resources") or {}
    limits = resources.get("limits") or {}
    requests = {**limits, **(resources.get("requests") or {})}
    return sum(_count(v) for k, v in requests.items() if is_gpu_resource(str(k), products))


def pod_gpus(pod_spec: Mapping[str, Any], products: Collection[str] = ()) -> int:
    """GPUs a pod holds: the larger of its containers' sum and its largest init container
    (init containers run one at a time, before the others; the scheduler reserves the max).
    https://kubernetes.io/docs/concepts/workloads/pods/init-containers/#resource-sharing-within-containers
    """
    app = sum(container_gpus(c, products) for c in pod_spec.get("containers") or [])
    init = [container_gpus(c, products) for c in pod_spec.get("initContainers") or []]
    return max([app, *init])


def replica_gpus(
    obj: Mapping[str, Any], products: Collection[str] = ()
) -> list[tuple[str, int, int, Mapping[str, Any]]]:
    """(replica type, replicas (default 1), GPUs of one pod, the pod spec) for every replica
    type of a Kubeflow training job, in the job's order; a Trainer v2 TrainJob is one type,
    `node`: numNodes (default 1) pods of `resourcesPerNode` (its pod spec is the runtime's,
    not here: {}). [] for any other object."""
    group = str(obj.get("apiVersion", "")).split("/")[0]
    if group == TRAINER_GROUP and obj.get("kind") == TRAINJOB:
        trainer = (obj.get("spec") or {}).get("trainer") or {}
        per_node = container_gpus({"resources": trainer.get("resourcesPerNode") or {}}, products)
        return [("node", _count(trainer.get("numNodes", 1)), per_node, {})]
    if group != KUBEFLOW_GROUP:
        return []
    out = []
    for key, replica_specs in (obj.get("spec") or {}).items():
        if not key.endswith("ReplicaSpecs") or not isinstance(replica_specs, dict):
            continue
        for rtype, replica in replica_specs.items():
            pod = ((replica or {}).get("template") or {}).get("spec") or {}
            out.append(
                (
                    str(rtype),
                    _count((replica or {}).get("replicas", 1)),
                    pod_gpus(pod, products),
                    pod,
                )
            )
    return out


def job_gpus(obj: Mapping[str, Any], products: Collection[str] = ()) -> int:
    """GPUs a Kubeflow training job (or TrainJob) asks for at its configured size: for every
    replica type, replicas (default 1) x the GPUs of one of its pods. 0 for any other object."""
    return sum(n * gpus for _, n, gpus, _ in replica_gpus(obj, products))


def min_replicas(obj: Mapping[str, Any], replica_type: str, replicas: int) -> int:
    """Pods of `replica_type` the job can run with: an elastic job's Workers at
    `elasticPolicy.minReplicas` (torchrun's lower bound, defaulted as the operator does:
    `elastic_range`), every other type at `replicas`."""
    span = elastic_range(obj.get("spec") or {})
    if replica_type == "Worker" and span is not None:
        return min(span[0], replicas)
    return replicas


def gang_minimum(obj: Mapping[str, Any]) -> int:
    """Pods a Kubeflow training job runs with at its smallest size (every replica type at
    `min_replicas`: an elastic job's Workers at `minReplicas`, plus its Master if any): the
    gang a batch scheduler must place at once for it to start. Volcano's PodGroup takes
    `runPolicy.schedulingPolicy.minAvailable` as its `minMember` (Training Operator v1.9.4,
    `pkg/controller.v1/common/job.go` ReconcileJobs), so an elastic job's gang is this, not
    every pod: the job then starts as soon as its minimum fits, as torchrun's `--nnodes=min:max`
    allows (KAI Scheduler's pod grouper and the MPI Operator's elastic docs count it so)."""
    return sum(min_replicas(obj, rtype, n) for rtype, n, _, _ in replica_gpus(obj))


def job_min_gpus(obj: Mapping[str, Any], products: Collection[str] = ()) -> int:
    """GPUs a training job needs at its smallest size: an elastic job at `minReplicas`
    Workers; equal to `job_gpus` for a fixed-size job."""
    return sum(
        min_replicas(obj, rtype, n) * gpus for rtype, n, gpus, _ in replica_gpus(obj, products)
    )


# GPU memory by the product label NVIDIA's GPU Feature Discovery puts on nodes
# (`nvidia.com/gpu.product`, the name nvidia-smi reports with spaces as dashes), in MiB as
# nvidia-smi's "Total" shows it: what the memory estimate (`trainops.facts.memory`) measures a
# job against. A product not listed is not judged; add it here.
PRODUCT_LABEL = "nvidia.com/gpu.product"
GPU_MEMORY_MIB = {
    "NVIDIA-A100-PCIE-40GB": 40960,
    "NVIDIA-A100-SXM4-40GB": 40960,
    "NVIDIA-A100-80GB-PCIe": 81920,
    "NVIDIA-A100-SXM4-80GB": 81920,
    "NVIDIA-A10G": 23028,
    "NVIDIA-H100-80GB-HBM3": 81559,
    "NVIDIA-H100-PCIe": 81559,
    "NVIDIA-H100-NVL": 95830,
    "NVIDIA-H200": 143771,
    "NVIDIA-H200-NVL": 143771,
    "NVIDIA-L4": 23034,
    "NVIDIA-L40S": 46068,
    "Tesla-T4": 15360,
    "Tesla-V100-SXM2-16GB": 16160,
    "Tesla-V100-SXM2-32GB": 32510,
}


def product_memory(node_selector: Mapping[str, str]) -> int | None:
    """Bytes of memory of one GPU of the product a node selector picks; None: not known."""
    mib = GPU_MEMORY_MIB.get(str(node_selector.get(PRODUCT_LABEL, "")))
    return None if mib is None else mib * 1024 * 1024
