"""GPU capacity against demand: which GPU product a pod lands on, and whether a gang of pods
can ever be placed at once on the nodes a cluster declares.

Counting GPUs is `trainops.facts.gpus` (one count for everyone); this module only places
those counts on nodes. Pure functions on built objects and plain numbers, so the rule, the
`capacity` command, the PR comment and the HTML report judge a job the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trainops.facts.gpus import min_replicas, replica_gpus
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL, VOLCANO_QUEUE_ANNOTATION


@dataclass(frozen=True)
class Product:
    """One GPU product of a cluster, as capacity sees it."""

    name: str
    resource: str
    per_node: int
    node_selector: Mapping[str, str]
    nodes: int | None
    """Declared nodes; None: not declared (nothing can be judged against it)."""

    @property
    def gpus(self) -> int | None:
        return None if self.nodes is None else self.nodes * self.per_node


@dataclass(frozen=True)
class PodGroup:
    """The pods of one replica type: how many, how many GPUs each, on which product."""

    replica_type: str
    pods: int
    """At the configured size (the pods the operator creates)."""
    min_pods: int
    """At the smallest size the job runs with (elastic Workers at minReplicas)."""
    gpus_per_pod: int
    product: str | None
    """The product the pod's node selector picks; None when it picks none of them."""
    host_ports: frozenset[tuple[str, int]] = frozenset()
    """(protocol, port) each pod binds on its node (`host_ports`): one such pod per node."""


def host_ports(pod_spec: Mapping[str, Any]) -> frozenset[tuple[str, int]]:
    """The (protocol, port)s a pod binds on its node: each `hostPort`, and under
    `hostNetwork: true` each `containerPort` (the API server sets hostPort to it, core/v1
    defaults.go `SetDefaults_Pod`). kube-scheduler's NodePorts filter places no two pods
    binding the same one on a node."""
    network = pod_spec.get("hostNetwork") is True
    found: set[tuple[str, int]] = set()
    for c in pod_spec.get("containers") or []:
        for raw in (c or {}).get("ports") or []:
            port = raw if isinstance(raw, dict) else {}
            number = port.get("hostPort") or (port.get("containerPort") if network else None)
            if isinstance(number, int) and not isinstance(number, bool) and number > 0:
                found.add((str(port.get("protocol") or "TCP"), number))
    return frozenset(found)


def product_of(pod_spec: Mapping[str, Any], products: Sequence[Product]) -> Product | None:
    """The product whose node labels the pod's `nodeSelector` asks for (all of them); a pod
    with no selector lands on the only product of a single-product cluster, else on none."""
    selector = pod_spec.get("nodeSelector") or {}
    for product in products:
        if product.node_selector and all(
            str(selector.get(k)) == v for k, v in product.node_selector.items()
        ):
            return product
    if not selector and len(products) == 1:
        return products[0]
    return None


def pod_groups(obj: Mapping[str, Any], products: Sequence[Product]) -> list[PodGroup]:
    """The GPU-holding pod groups of a training job (pods without GPUs take no GPU node)."""
    resources = {p.resource for p in products}
    groups = []
    for rtype, pods, gpus, spec in replica_gpus(obj, resources):
        if gpus <= 0 or pods <= 0:
            continue
        product = product_of(spec, products)
        groups.append(
            PodGroup(
                rtype,
                pods,
                min_replicas(obj, rtype, pods),
                gpus,
                product.name if product else None,
                host_ports(spec),
            )
        )
    return groups


def port_bound(
    groups: Sequence[PodGroup], at_once: Mapping[str, int], nodes: int | None
) -> str | None:
    """Why the pods that must run at once can never all be placed, by the host ports they
    bind (one pod per node per port), or None; `nodes` None (not declared): not judged."""
    if nodes is None:
        return None
    for port in sorted({p for g in groups for p in g.host_ports}, key=lambda p: (p[1], p[0])):
        count = sum(at_once[g.replica_type] for g in groups if port in g.host_ports)
        if count > nodes:
            return (
                f"{count} pods bind host port {port[1]}/{port[0]} (under hostNetwork every"
                f" containerPort is a host port) and {nodes} nodes hold one each"
            )
    return None


def queue_of(obj: Mapping[str, Any], runtime: Mapping[str, Any] | None = None) -> str | None:
    """The queue a job is sent to: Kueue's queue label, else Volcano's `schedulingPolicy`,
    else, for a TrainJob (whose `runtime` is given), the Volcano queue annotation its PodGroup
    takes: the runtime's template annotation with each runtime patch's over it (Trainer v2.3
    `pkg/runtime/core/trainingruntime.go` newRuntimeInfo, `plugins/volcano` Build)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    if KUEUE_QUEUE_LABEL in labels:
        return str(labels[KUEUE_QUEUE_LABEL])
    spec = obj.get("spec") or {}
    policy = (spec.get("runPolicy") or {}).get("schedulingPolicy") or {}
    queue = policy.get("queue")
    if runtime is not None and not queue:
        annotations = dict(_template_annotations(runtime.get("spec") or {}))
        for patch in spec.get("runtimePatches") or []:
            patch_spec = (patch or {}).get("trainingRuntimeSpec") or {}
            annotations.update(_template_annotations(patch_spec))
        queue = annotations.get(VOLCANO_QUEUE_ANNOTATION)
    return str(queue) if queue else None


def _template_annotations(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((spec.get("template") or {}).get("metadata") or {}).get("annotations") or {}


def gang_min_available(obj: Mapping[str, Any]) -> int | None:
    """Volcano's `minAvailable`: the pods its PodGroup places at once (None: not set)."""
    policy = ((obj.get("spec") or {}).get("runPolicy") or {}).get("schedulingPolicy") or {}
    value = policy.get("minAvailable")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def pods_at_once(
    groups: Sequence[PodGroup], min_available: int | None, minimum: int
) -> dict[str, int]:
    """GPU pods per replica type that must run at the same time. The job starts at its
    elastic minimum (`min_pods`; `minimum`: that over all its pods, `gpus.gang_minimum`); a
    Volcano gang asking for more (`minAvailable` = the PodGroup's `minMember`, Training
    Operator v1.9.4 `pkg/controller.v1/common/job.go`) holds them all back until that many
    fit, so the pods above the minimum are added to the elastic groups, in the job's order."""
    at_once = {g.replica_type: g.min_pods for g in groups}
    extra = 0 if min_available is None else min_available - minimum
    for group in groups:
        grow = max(0, min(extra, group.pods - group.min_pods))
        at_once[group.replica_type] += grow
        extra -= grow
    return at_once


def unplaceable(pods: Mapping[int, int], per_node: int, nodes: int | None) -> str | None:
    """Why pods can never all run at once on `nodes` nodes of `per_node` GPUs, or None when
    they might; `pods`: GPUs per pod -> how many such pods (counts, never one entry per pod:
    a manifest may ask for 2,147,483,647 replicas). Only sure reasons (each is a lower bound
    on what the pods need): a pod larger than a node; more GPUs than all nodes have; or, for
    each pod size s, more pods of at least s GPUs than fit (per_node // s per node).
    `nodes` None (not declared): only a pod larger than a node is sure."""
    sizes = sorted((size for size, count in pods.items() if count > 0), reverse=True)
    if not sizes:
        return None
    largest = sizes[0]
    if largest > per_node:
        return f"a pod asks for {largest} GPUs and a node has {per_node}: a pod runs on one node"
    if nodes is None:
        return None
    total, capacity = sum(size * pods[size] for size in sizes), nodes * per_node
    if total > capacity:
        return f"{total} GPUs at once, {capacity} in the cluster ({nodes} nodes x {per_node})"
    count = 0
    for size in sizes:
        count += pods[size]  # pods of at least `size` GPUs
        fit = nodes * (per_node // size) if size else count
        if count > fit:
            return (
                f"{count} pods of {size}+ GPUs, and {nodes} nodes of {per_node} GPUs hold"
                f" {fit} of them ({per_node // size} per node): GPUs left over on each node"
                " cannot be combined"
            )
    return None
