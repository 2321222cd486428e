"""Every platform object a cluster profile names exists somewhere we can say: delivered from
`clusters/<name>/manifests/`, or declared installed by the platform (`providedByPlatform`).

A name that is neither is a job sent to a queue nobody creates: Volcano's admission refuses
a PodGroup whose queue it cannot find (volcano-sh/volcano `pkg/webhooks/admission/podgroups/
validate/validate_podgroup.go`, `checkQueueState`), Kueue leaves the workload inadmissible,
Multus cannot attach a network missing from the pod's namespace, and the API server refuses a
pod naming an unknown priority class. The profile is refused at load (exit 2) with the line
of the name and the two ways to fix it. What each name must resolve to:

- `scheduler.queue` on Volcano: a cluster-scoped `Queue` of that name;
- `scheduler.queue` on Kueue: a `LocalQueue` of that name in every training namespace (jobs
  name the LocalQueue of their own namespace);
- `scheduler.priorityClass`: a `PriorityClass`;
- `network.rdma.multusNetwork`: a `NetworkAttachmentDefinition` in every training namespace
  (Multus reads a name without a namespace as the pod's own), or, for `namespace/name`, in
  that namespace.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from trainops.core.errors import Addition, Problem
from trainops.core.yamlio import Document
from trainops.facts.platform import KUEUE_GROUP, MULTUS_GROUP
from trainops.facts.schedulers import VOLCANO_SCHEDULING_GROUP
from trainops.jobspec import model
from trainops.jobspec.problems import Collector

# (group, kind, namespace, name), namespace "" for cluster-scoped objects.
Key = tuple[str, str, str, str]


@dataclass(frozen=True)
class Reference:
    """One platform object a profile field names."""

    path: list[str | int]
    """Where the profile names it."""
    provided_key: str
    """The `providedByPlatform` list that may declare it."""
    name: str
    """The name as written."""
    kind: str
    """What it must be, for the message."""
    needed: tuple[Key, ...]
    """The objects that must be delivered when it is not declared provided."""


def _network_keys(cluster: model.ClusterProfile, network: str) -> tuple[Key, ...]:
    namespace, _, name = network.rpartition("/")
    namespaces = (namespace,) if namespace else cluster.namespaces
    return tuple((MULTUS_GROUP, "NetworkAttachmentDefinition", ns, name) for ns in namespaces)


def references(cluster: model.ClusterProfile) -> Iterator[Reference]:
    """The platform objects `cluster` names, with what each must resolve to."""
    scheduler = cluster.scheduler
    if scheduler.queue and scheduler.kind == "volcano":
        needed: tuple[Key, ...] = ((VOLCANO_SCHEDULING_GROUP, "Queue", "", scheduler.queue),)
        yield Reference(["scheduler", "queue"], "queues", scheduler.queue, "Volcano Queue", needed)
    if scheduler.queue and scheduler.kind == "kueue":
        needed = tuple(
            (KUEUE_GROUP, "LocalQueue", ns, scheduler.queue) for ns in cluster.namespaces
        )
        kind = "Kueue LocalQueue (in every training namespace)"
        yield Reference(["scheduler", "queue"], "queues", scheduler.queue, kind, needed)
    if scheduler.priority_class:
        needed = (("scheduling.k8s.io", "PriorityClass", "", scheduler.priority_class),)
        path: list[str | int] = ["scheduler", "priorityClass"]
        yield Reference(path, "priorityClasses", scheduler.priority_class, "PriorityClass", needed)
    rdma = cluster.network.rdma
    if rdma is not None and rdma.multus_network:
        kind = "NetworkAttachmentDefinition (in every training namespace)"
        yield Reference(
            ["network", "rdma", "multusNetwork"],
            "networks",
            rdma.multus_network,
            kind,
            _network_keys(cluster, rdma.multus_network),
        )


def _provided(cluster: model.ClusterProfile, key: str) -> tuple[str, ...]:
    declared = cluster.provided_by_platform
    lists = {
        "queues": declared.queues,
        "networks": declared.networks,
        "priorityClasses": declared.priority_classes,
    }
    return lists[key]


def _key(item: model.PlatformObject) -> Key:
    meta = item.data["metadata"]
    group = item.data["apiVersion"].rpartition("/")[0]
    return (group, item.data["kind"], meta.get("namespace", ""), meta["name"])


def check_references(
    cluster: model.ClusterProfile, doc: Document, platform: tuple[model.PlatformObject, ...]
) -> list[Problem]:
    """Problems (with the profile's file and line) for every name neither delivered nor
    declared provided, and for a declared one that the manifests deliver after all."""
    out = Collector(doc)
    delivered = {_key(item) for item in platform}
    manifests = f"clusters/{cluster.name}/manifests/"
    for ref in references(cluster):
        missing = [key for key in ref.needed if key not in delivered]
        declared = ref.name in _provided(cluster, ref.provided_key)
        if declared and not missing:
            out.add(
                ["providedByPlatform", ref.provided_key],
                f"`{ref.name}` is delivered by {manifests} and also declared provided by the"
                " platform: remove it from one of them",
            )
        elif missing and not declared:
            where = ", ".join(f"`{ns}`" for _, _, ns, _ in missing if ns)
            out.add(
                ref.path,
                f"{ref.kind} `{ref.name}` is neither delivered by {manifests}"
                + (f" (missing in namespace {where})" if where else "")
                + " nor declared provided by the platform: add it to"
                f" {manifests}, or list it in `providedByPlatform.{ref.provided_key}` if the"
                " platform installs it",
                (Addition(cluster.name, ("providedByPlatform", ref.provided_key), (ref.name,)),),
            )
    return out.problems
