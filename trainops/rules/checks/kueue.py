"""Kueue admission: a job whose pods request a resource its ClusterQueue does not cover is never
admitted (issue 33 item 7).

Kueue v0.19.2 assigns a flavor to every resource a pod set requests
(`pkg/scheduler/flavorassigner/flavorassigner.go` assignFlavors -> findFlavorForPodSets): a
resource in no `resourceGroups[].coveredResources` of the ClusterQueue is `resource X
unavailable in ClusterQueue` (`:1071`), and the workload stays pending for ever; a zero
request is left out (flavorassigner_test.go "zero resource request not in clusterQueue should
succeed"). The ClusterQueue is found through the job's LocalQueue (its `kueue.x-k8s.io/
queue-name` label, in the job's namespace; `spec.clusterQueue`); without both in the manifest
set nothing is judged.
"""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_list
from trainops.facts.quantity import parse_quantity
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL
from trainops.kube.objects import Object
from trainops.kube.pods import Container
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation


def _requested(container: Container) -> dict[str, tuple[str, ...]]:
    """The resources a container requests (a limit alone is its request), with where."""
    resources = as_dict(container.data.get("resources"))
    out: dict[str, tuple[str, ...]] = {}
    for part in ("limits", "requests"):
        for name, value in as_dict(resources.get(part)).items():
            if (parse_quantity(value) or 0) > 0:
                out[str(name)] = (part, str(name))
            else:
                out.pop(str(name), None)
    return out


def covered_resources(obj: Object, ctx: Context) -> tuple[str, set[str]] | None:
    """(ClusterQueue name, its covered resources) of a job sent to Kueue, if in the set."""
    labels = as_dict(obj.manifest.metadata.get("labels"))
    queue = labels.get(KUEUE_QUEUE_LABEL)
    if not queue:
        return None
    local = ctx.find("LocalQueue", str(queue), obj.namespace)
    if local is None:
        return None
    name = str(local.spec.get("clusterQueue", ""))
    cluster_queue = ctx.find("ClusterQueue", name, None)
    if cluster_queue is None:
        return None
    groups = as_list(cluster_queue.spec.get("resourceGroups"))
    covered = {str(r) for g in groups for r in as_list(as_dict(g).get("coveredResources"))}
    return name, covered


def _uncovered(obj: Object, ctx: Context) -> Iterator[Violation]:
    if not obj.is_training_job:
        return
    found = covered_resources(obj, ctx)
    if found is None:
        return
    name, covered = found
    seen: set[str] = set()
    for pod in obj.pods:
        for container in pod.containers():
            for resource, where in sorted(_requested(container).items()):
                if resource in covered or resource in seen:
                    continue
                seen.add(resource)
                yield Violation(
                    f"{pod.replica_type or 'the pod'} requests `{resource}`, which ClusterQueue"
                    f" `{name}` does not cover ({', '.join(sorted(covered)) or 'nothing'}):"
                    f" Kueue never admits the job (`resource {resource} unavailable in"
                    " ClusterQueue`)",
                    (*container.path, "resources", *where),
                )


RULES = (
    Rule(
        slug="kueue-resource-uncovered",
        code="TO432",
        severity=Severity.ERROR,
        summary="A job sent to a Kueue LocalQueue whose ClusterQueue covers no quota for a"
        " resource its pods request (an RDMA device, a GPU type, ephemeral storage).",
        why="Kueue must assign a flavor to every requested resource; one in no resource group"
        " of the ClusterQueue leaves the workload inadmissible (`resource ... unavailable in"
        " ClusterQueue`): the job is suspended for ever and says so only in its Workload.",
        fix="Add the resource to a resource group's `coveredResources` with a quota in each of"
        " its flavors (or, for a resource Kueue should not count, exclude it in Kueue's"
        " Configuration `resources.excludeResourcePrefixes`).",
        example="coveredResources: [cpu, memory, nvidia.com/gpu]  # pods also request"
        " rdma/rdma_shared_device_a",
        check=_uncovered,
        references=(
            "https://kueue.sigs.k8s.io/docs/concepts/cluster_queue/#resource-groups",
            "https://github.com/kubernetes-sigs/kueue/blob/v0.19.2/pkg/scheduler/flavorassigner/"
            "flavorassigner.go",
        ),
    ),
)
