"""The fleet's GPUs: per cluster and GPU product (and queue), what the profile declares and what
the jobs in Git ask for, and where each job lands. One model for `trainops capacity`, the PR
comment's capacity section and the HTML report.

Demand is read from the objects a cluster gets (`render.expected_objects`, which the kustomize
invariant test holds equal to `kustomize build`, or the built objects `trainops diff` has), so
500 jobs x 4 clusters take seconds, not the minutes of kustomize. GPUs are counted by
`trainops.facts.gpus` and placed on products by `trainops.facts.capacity`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trainops.facts import capacity as facts
from trainops.facts.gpus import job_gpus, job_min_gpus
from trainops.facts.trainer import RUNTIME_KINDS, TRAINER_GROUP, TRAINJOB
from trainops.jobspec.model import ClusterProfile, Repository
from trainops.kube.trainjob import find_runtime
from trainops.render import expected_objects

NO_PRODUCT = "(no product)"
"""Where GPU pods go whose node selector picks none of the cluster's products."""


@dataclass
class ProductUse:
    """One GPU product of one cluster."""

    cluster: str
    product: str
    per_node: int
    nodes: int | None
    """Declared nodes; None: not declared (headroom cannot be judged)."""
    requested: int = 0
    """GPUs of all jobs' pods on it at their configured size."""
    requested_min: int = 0
    """The same with elastic jobs at minReplicas."""
    jobs: list[str] = field(default_factory=list)

    @property
    def declared(self) -> int | None:
        return None if self.nodes is None else self.nodes * self.per_node

    @property
    def headroom(self) -> int | None:
        return None if self.declared is None else self.declared - self.requested


@dataclass
class QueueUse:
    cluster: str
    queue: str
    quota: int | None
    """Declared nominal GPU quota; None: not declared."""
    requested: int = 0
    jobs: list[str] = field(default_factory=list)

    @property
    def headroom(self) -> int | None:
        return None if self.quota is None else self.quota - self.requested


@dataclass(frozen=True)
class Placement:
    """One job on one cluster."""

    job: str
    namespace: str
    cluster: str
    products: str
    pods: int
    gpus: int
    min_gpus: int


@dataclass
class Fleet:
    products: list[ProductUse] = field(default_factory=list)
    queues: list[QueueUse] = field(default_factory=list)
    placements: list[Placement] = field(default_factory=list)

    def product(self, cluster: str, product: str) -> ProductUse | None:
        return next(
            (p for p in self.products if (p.cluster, p.product) == (cluster, product)), None
        )


def cluster_use(
    cluster: ClusterProfile, objects: Iterable[Mapping[str, Any]]
) -> tuple[list[ProductUse], list[QueueUse], list[Placement]]:
    """Products, queues and placements of one cluster from the objects it gets."""
    products = cluster.capacity_products()
    resources = {p.resource for p in products}
    uses = {p.name: ProductUse(cluster.name, p.name, p.per_node, p.nodes) for p in products}
    queues: dict[str, QueueUse] = {
        q: QueueUse(cluster.name, q, gpus) for q, gpus in cluster.capacity.queue_gpus.items()
    }
    if cluster.scheduler.queue and cluster.scheduler.queue not in queues:
        queues[cluster.scheduler.queue] = QueueUse(cluster.name, cluster.scheduler.queue, None)
    placements = []
    objects = list(objects)
    runtimes = [dict(o) for o in objects if o.get("kind") in RUNTIME_KINDS]
    for obj in objects:
        gpus = job_gpus(obj, resources)
        groups = facts.pod_groups(obj, products)
        if not groups and gpus == 0:
            continue
        name = str((obj.get("metadata") or {}).get("name", ""))
        names: list[str] = []
        for g in groups:
            key = g.product or NO_PRODUCT
            if key not in uses:
                uses[key] = ProductUse(cluster.name, key, 0, None)
            use = uses[key]
            use.requested += g.pods * g.gpus_per_pod
            use.requested_min += g.min_pods * g.gpus_per_pod
            if name not in use.jobs:
                use.jobs.append(name)
            if key not in names:
                names.append(key)
        trainjob = str(obj.get("apiVersion", "")).startswith(f"{TRAINER_GROUP}/") and (
            obj.get("kind") == TRAINJOB
        )
        queue = facts.queue_of(obj, find_runtime(dict(obj), runtimes) if trainjob else None)
        if queue is not None:
            q = queues.setdefault(queue, QueueUse(cluster.name, queue, None))
            q.requested += gpus
            q.jobs.append(name)
        pods = sum(g.pods for g in groups)
        placements.append(
            Placement(
                name,
                str((obj.get("metadata") or {}).get("namespace", "")),
                cluster.name,
                ", ".join(names) or "-",
                pods,
                gpus,
                job_min_gpus(obj, resources),
            )
        )
    return (
        [uses[k] for k in sorted(uses)],
        [queues[k] for k in sorted(queues)],
        sorted(placements, key=lambda p: p.job),
    )


def fleet_of(
    clusters: Mapping[str, ClusterProfile], objects: Mapping[str, Iterable[Mapping[str, Any]]]
) -> Fleet:
    """The fleet from each cluster's objects (clusters by name; one missing has none)."""
    fleet = Fleet()
    for name in sorted(clusters):
        products, queues, placements = cluster_use(clusters[name], objects.get(name, ()))
        fleet.products += products
        fleet.queues += queues
        fleet.placements += placements
    return fleet


def repository_fleet(repo: Repository, cluster: str | None = None) -> Fleet:
    """The fleet of a loaded repository, every cluster or one, from the rendered model."""
    names = [cluster] if cluster else sorted(repo.clusters)
    clusters = {n: repo.clusters[n] for n in names}
    return fleet_of(clusters, {n: expected_objects(repo, c) for n, c in clusters.items()})


@dataclass(frozen=True)
class ProductChange:
    """One product's numbers before and after a change (None: absent on that side)."""

    cluster: str
    product: str
    before: ProductUse | None
    after: ProductUse | None

    @property
    def changed(self) -> bool:
        def key(u: ProductUse | None) -> tuple[int | None, int, int] | None:
            return None if u is None else (u.declared, u.requested, u.requested_min)

        return key(self.before) != key(self.after)


def compare(before: Fleet, after: Fleet) -> list[ProductChange]:
    """Every (cluster, product) of either side, by cluster and product."""
    keys = {(p.cluster, p.product) for p in [*before.products, *after.products]}
    return [ProductChange(c, p, before.product(c, p), after.product(c, p)) for c, p in sorted(keys)]
