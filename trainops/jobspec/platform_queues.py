"""The profile's queue against the queue objects `clusters/<name>/manifests/` deliver (issue 33
item 7), at load, with the profile's line:

- Kueue (v0.19.2 `pkg/scheduler/flavorassigner/flavorassigner.go` findFlavorForPodSets, :1071):
  the ClusterQueue behind the profile's LocalQueue must cover every resource each pod requests,
  or Kueue leaves every job inadmissible (`resource ... unavailable in ClusterQueue`). What
  every pod of the cluster requests is known from the profile: its GPU products' resource and,
  on an RDMA cluster, the RDMA device (`network.rdma.deviceResource`); the rest (cpu, memory,
  what a job adds) is the `kueue-resource-uncovered` rule's, on the built objects.
- `capacity.queues.<q>.gpus` says what the queue holds (the capacity report and the
  `queue-quota-exceeded` rule judge with it): it must equal the GPUs of the queue objects
  delivered, the ClusterQueue's `nominalQuota` of GPU resources summed over its flavors
  (Kueue), or the Volcano Queue's `spec.capability` (volcano-sh/volcano v1.15.1
  `pkg/apis/scheduling` QueueSpec). A queue the platform provides is not judged.
"""

from __future__ import annotations

from typing import Any

from trainops.core.errors import Problem
from trainops.core.yamlio import Document
from trainops.facts.gpus import is_gpu_resource
from trainops.facts.quantity import parse_quantity
from trainops.jobspec import model
from trainops.jobspec.problems import Collector


def _objects(platform: tuple[model.PlatformObject, ...], kind: str) -> list[model.PlatformObject]:
    return [o for o in platform if o.data.get("kind") == kind]


def _find(
    platform: tuple[model.PlatformObject, ...], kind: str, name: str, namespace: str | None = None
) -> model.PlatformObject | None:
    for obj in _objects(platform, kind):
        meta = obj.data.get("metadata") or {}
        if meta.get("name") == name and (namespace is None or meta.get("namespace") == namespace):
            return obj
    return None


def _cluster_queues(
    cluster: model.ClusterProfile, platform: tuple[model.PlatformObject, ...], queue: str
) -> list[model.PlatformObject]:
    """The ClusterQueues the LocalQueue `queue` of each training namespace points at."""
    found: list[model.PlatformObject] = []
    for namespace in cluster.namespaces:
        local = _find(platform, "LocalQueue", queue, namespace)
        name = ((local.data.get("spec") or {}).get("clusterQueue") if local else None) or ""
        target = _find(platform, "ClusterQueue", str(name))
        if target is not None and target not in found:
            found.append(target)
    return found


def _groups(cluster_queue: model.PlatformObject) -> list[dict[str, Any]]:
    return [g for g in (cluster_queue.data.get("spec") or {}).get("resourceGroups") or [] if g]


def _kueue_gpus(cluster_queue: model.PlatformObject, products: set[str]) -> int:
    total = 0.0
    for group in _groups(cluster_queue):
        for flavor in group.get("flavors") or []:
            for resource in (flavor or {}).get("resources") or []:
                if is_gpu_resource(str(resource.get("name")), products):
                    total += parse_quantity(resource.get("nominalQuota")) or 0
    return int(total)


def _volcano_gpus(queue: model.PlatformObject, products: set[str]) -> int:
    capability = (queue.data.get("spec") or {}).get("capability") or {}
    gpus = [parse_quantity(v) or 0 for k, v in capability.items() if is_gpu_resource(k, products)]
    return int(sum(gpus))


def _uncovered(cluster: model.ClusterProfile, out: Collector, queues: list[Any]) -> None:
    every_pod: list[tuple[str, list[str | int]]] = [
        (g.resource, ["gpus", i, "resource"]) for i, g in enumerate(cluster.gpus)
    ]
    if cluster.network.rdma is not None:
        rdma = cluster.network.rdma.device_resource
        every_pod.append((rdma, ["network", "rdma", "deviceResource"]))
    for cluster_queue in queues:
        covered = {str(r) for g in _groups(cluster_queue) for r in g.get("coveredResources") or []}
        name = cluster_queue.data["metadata"]["name"]
        for resource, path in every_pod:
            if resource not in covered:
                out.add(
                    path,
                    f"every pod on this cluster requests `{resource}`, and ClusterQueue `{name}`"
                    f" ({cluster_queue.file}), behind LocalQueue `{cluster.scheduler.queue}`,"
                    " does not cover it: Kueue never admits a job (`resource"
                    f" {resource} unavailable in ClusterQueue`); add it to a resource group's"
                    " `coveredResources` with a quota in each flavor",
                )


def check_queues(
    cluster: model.ClusterProfile, doc: Document, platform: tuple[model.PlatformObject, ...]
) -> list[Problem]:
    """Problems with the profile's queue: resources its ClusterQueue does not cover, declared
    GPU quotas that disagree with the delivered queue objects."""
    out = Collector(doc)
    products = {g.resource for g in cluster.gpus}
    kind = cluster.scheduler.kind
    if kind == "kueue" and cluster.scheduler.queue:
        _uncovered(cluster, out, _cluster_queues(cluster, platform, cluster.scheduler.queue))
    for queue, declared in sorted(cluster.capacity.queue_gpus.items()):
        if kind == "kueue":
            queues = _cluster_queues(cluster, platform, queue)
            delivered = [(o, _kueue_gpus(o, products)) for o in queues]
        elif kind == "volcano":
            found = _find(platform, "Queue", queue)
            delivered = [(found, _volcano_gpus(found, products))] if found else []
        else:
            delivered = []
        for obj, gpus in delivered:
            if gpus != declared:
                what = "nominalQuota" if kind == "kueue" else "capability"
                out.add(
                    ["capacity", "queues", queue, "gpus"],
                    f"`capacity.queues.{queue}.gpus` is {declared}, but {obj.data['kind']}"
                    f" `{obj.data['metadata']['name']}` ({obj.file}) has a GPU {what} of {gpus}:"
                    " the capacity report and queue-quota-exceeded judge with the wrong number;"
                    " make them equal",
                )
    return out.problems
