"""Capacity: a job whose pods can never all be placed at once on the cluster's declared GPUs,
and a job larger than its queue's quota. Judged only against what the cluster profile
declares (`capacity:`); an undeclared product or queue is not judged."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.facts import capacity as facts
from trainops.facts.gpus import gang_minimum, job_gpus
from trainops.facts.kubeflow import KUBEFLOW_REPLICA_KEYS
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation


def _gang(obj: Object, ctx: Context) -> Iterator[Violation]:
    if ctx.cluster is None or not obj.is_kubeflow_job:
        return
    products = {p.name: p for p in ctx.cluster.capacity_products()}
    groups = facts.pod_groups(obj.data, tuple(products.values()))
    at_once = facts.pods_at_once(groups, facts.gang_min_available(obj.data), gang_minimum(obj.data))
    key = KUBEFLOW_REPLICA_KEYS.get(obj.kind, "")
    for name, product in sorted(products.items()):
        mine = [g for g in groups if g.product == name]
        if not mine:
            continue
        pods: Counter[int] = Counter()
        for g in mine:
            pods[g.gpus_per_pod] += at_once[g.replica_type]
        reason = facts.unplaceable(pods, product.per_node, product.nodes) or facts.port_bound(
            mine, at_once, product.nodes
        )
        if reason is None:
            continue
        shape = ", ".join(
            f"{at_once[g.replica_type]} {g.replica_type} x {g.gpus_per_pod}" for g in mine
        )
        largest = max(mine, key=lambda g: g.gpus_per_pod)
        yield Violation(
            f"can never be scheduled on `{ctx.cluster.name}`: {shape} GPUs of `{name}` must"
            f" run at once and {reason}",
            ("spec", key, largest.replica_type, "replicas"),
        )


def _quota(obj: Object, ctx: Context) -> Iterator[Violation]:
    if ctx.cluster is None or not (obj.is_kubeflow_job or obj.is_trainjob):
        return
    queue = facts.queue_of(obj.data, obj.runtime.data if obj.runtime is not None else None)
    quota = ctx.cluster.capacity.queue_gpus.get(queue or "")
    if queue is None or quota is None:
        return
    gpus = job_gpus(obj.data, {p.resource for p in ctx.cluster.gpus})
    if gpus > quota:
        yield Violation(
            f"asks for {gpus} GPUs and queue `{queue}` on `{ctx.cluster.name}` has a quota of"
            f" {quota}: it is admitted only by borrowing beyond the quota, or never",
            ("metadata",),
        )


RULES = (
    Rule(
        slug="gang-unschedulable",
        code="TO430",
        severity=Severity.ERROR,
        summary="A job whose pods can never all run at once on the GPUs the cluster profile"
        " declares (`capacity.nodes`): a pod larger than a node, more GPUs than the product"
        " has, pods that do not pack onto its nodes, or more pods binding one host port than"
        " there are nodes (`hostPort`, or any containerPort under `hostNetwork`); elastic jobs"
        " judged at `minReplicas` (or at a Volcano `minAvailable` above it: the gang waits for"
        " that many).",
        why="A gang-scheduled job (Volcano waits for `minAvailable` pods, Kueue admits a"
        " workload whole) stays Pending forever, holding its queue position; without a gang"
        " scheduler the placed pods hold GPUs and wait for peers that never come.",
        fix="Ask for fewer or smaller pods, target a product with enough nodes, or declare the"
        " cluster's real capacity. Without `capacity.nodes` for a product only a pod larger"
        " than a node is reported: the rest cannot be judged.",
        example="# capacity: {nodes: {a100-80gb: 4}}   (32 GPUs)\n"
        "Worker: {replicas: 8, template: {spec: {containers: [{resources: {limits:"
        " {nvidia.com/gpu: 8}}}]}}}",
        check=_gang,
        needs_cluster=True,
        references=(
            "https://volcano.sh/en/docs/podgroup/",
            "https://kueue.sigs.k8s.io/docs/concepts/workload/",
        ),
    ),
    Rule(
        slug="queue-quota-exceeded",
        code="TO431",
        severity=Severity.WARNING,
        summary="A job that alone asks for more GPUs than its queue's nominal quota"
        " (`capacity.queues`).",
        why="Kueue admits a workload only within its ClusterQueue's nominal quota plus what"
        " it can borrow from its cohort; Volcano's queue capability caps the same way. A job"
        " larger than the quota waits for borrowable GPUs, or forever.",
        fix="Shrink the job, send it to a larger queue, or raise the queue's quota (and"
        " declare it in the cluster profile).",
        example="# capacity: {queues: {team-training: {gpus: 16}}}\n"
        "metadata: {labels: {kueue.x-k8s.io/queue-name: team-training}}  # 32 GPUs",
        check=_quota,
        needs_cluster=True,
        references=(
            "https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/",
            "https://volcano.sh/en/docs/queue/",
        ),
    ),
)
