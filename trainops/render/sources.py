"""The source map: from a field of a rendered object back to the spec line that produced it.

Render builds every object from a job spec and a cluster profile. For a field path of a
rendered object this module names the key of the job spec or the profile that made the field:
the key holding its value (`image`, `env.NCCL_DEBUG`, a profile's `gpus[0].nodeSelector`) or,
for a field trainops chose itself, the key that made it choose (the profile's
`network.transport` for NCCL_IB_DISABLE, `sharedMemory` for the /dev/shm volume). Candidates
come most specific first and the first key written in its file wins, so a field whose key was
left to its default falls back to the key above it, and at last to the file's `name`.

Validation maps every finding on a rendered object through here (`validate/locate.py`), so a
reviewer sees it on the line the author wrote, not in the generated files.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trainops.core.manifest import FieldPath
from trainops.core.values import as_dict
from trainops.core.yamlio import Document
from trainops.facts.kubeflow import KUBEFLOW_REPLICA_KEYS
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL, VOLCANO_QUEUE_ANNOTATION
from trainops.facts.trainer import NODE_CONTAINER
from trainops.kube.trainjob import TRAINER_FIELDS
from trainops.render.container_sources import (
    CLUSTER,
    JOB,
    Ctx,
    Key,
    at,
    container_of,
    training_container,
    volume,
)
from trainops.render.pod import MULTUS_ANNOTATION

# Replica types that are extra roles with their own size (spec key of the role).
ROLE_KEYS: dict[str, FieldPath] = {
    "PS": ("tensorflow", "parameterServers"),
    "Evaluator": ("tensorflow", "evaluator"),
    "Launcher": ("mpi", "launcher"),
}
# Merge keys of the lists the escape hatch merges item by item (render/overrides.py).
_MERGE_KEYS = ("name", "mountPath", "containerPort")


@dataclass(frozen=True)
class Specs:
    """The spec documents one rendered object came from, and the cluster it was built for."""

    job: Document | None
    """The job spec (None: an object of the cluster's own, such as its runtimes)."""
    cluster: Document | None
    """The profile of the cluster whose overlay built the object."""
    cluster_name: str | None = None

    def locate(self, kind: str, obj: dict[str, Any], path: FieldPath) -> tuple[str, int] | None:
        """(spec file, line) of the key that produced `path` of `obj`; None without specs."""
        for which, key in (
            *_candidates(Ctx((self.job, self.cluster, self.cluster_name), kind, obj), path),
            *_LAST,
        ):
            doc = self.job if which == JOB else self.cluster
            if doc is not None and doc.part(key, None) is not None:
                return doc.file, doc.line_of(key)
        return None


_LAST: tuple[Key, ...] = ((JOB, ("name",)), (CLUSTER, ("name",)))


def replica_type(kind: str, obj: dict[str, Any], path: FieldPath) -> str | None:
    """The replica type a field belongs to (`Master`, `Worker`; a TrainJob's replicated job,
    `node` for its trainer), None for a field of the object as a whole."""
    if kind in KUBEFLOW_REPLICA_KEYS and len(path) > 2 and path[0] == "spec":
        return str(path[2]) if path[1] == KUBEFLOW_REPLICA_KEYS[kind] else None
    if tuple(path[:2]) == ("spec", "trainer"):
        return "node"
    for i, part in enumerate(path[:-1]):
        if part == "replicatedJobs" and isinstance(path[i + 1], int):
            name = as_dict(at(obj, path[: i + 2])).get("name")
            return str(name) if name is not None else None
    return None


def container_name(obj: dict[str, Any], path: FieldPath) -> str | None:
    """The container a field belongs to (a TrainJob's `spec.trainer` is its node container),
    None for a field outside any container."""
    if tuple(path[:2]) == ("spec", "trainer"):
        return NODE_CONTAINER
    found = [
        i
        for i, part in enumerate(path[:-1])
        if part in ("containers", "initContainers") and isinstance(path[i + 1], int)
    ]
    if not found:
        return None
    name = as_dict(at(obj, path[: found[-1] + 2])).get("name")
    return str(name) if name is not None else None


def _pod_start(kind: str, path: FieldPath) -> int | None:
    """Index in `path` just after the pod template (`...template`), None outside any."""
    if kind in KUBEFLOW_REPLICA_KEYS:
        return 4 if len(path) > 4 and path[3] == "template" else None
    starts = [i + 1 for i, part in enumerate(path[:-1]) if part == "template"]
    return starts[-1] if starts else None


def _candidates(ctx: Ctx, path: FieldPath) -> Iterator[Key]:
    rtype = replica_type(ctx.kind, ctx.obj, path) or ""
    start = _pod_start(ctx.kind, path)
    if start is not None and path[start] in ("spec", "metadata"):
        template = at(ctx.obj, path[:start])
        yield from _template(ctx, rtype, as_dict(template), path[start:])
    else:
        yield from _object(ctx, rtype, path)


def _object(ctx: Ctx, rtype: str, path: FieldPath) -> Iterator[Key]:
    """A field outside the pod templates."""
    head, rest = (path[0], path[1:]) if path else ("", ())
    if ctx.kind == "PersistentVolumeClaim":
        yield from _claim(ctx, path)
    elif tuple(path[:2]) == ("spec", "trainer") and len(path) > 2:
        yield from _trainer(ctx, path[2:], as_dict(at(ctx.obj, ("spec", "trainer"))))
    elif head == "metadata":
        yield from _metadata(ctx, rest, labels="labels", annotations="annotations")
    elif head == "spec":
        yield from _job_spec(ctx, rtype, rest)
    if ctx.kind == "ConfigMap":
        # The DeepSpeed config trainops generates from every `deepspeed` key.
        yield (JOB, ("deepspeed",))
    if ctx.kind in ("Service", "ServiceMonitor", "PodMonitor"):
        yield (JOB, ("metricsPort",))
    if ctx.kind in ("ClusterTrainingRuntime", "TrainingRuntime"):
        yield (CLUSTER, ("operator",))
    if ctx.kind in ("PrometheusRule", "ConfigMap", "GrafanaDashboard"):
        yield (CLUSTER, ("monitoring",))
    if ctx.kind == "PodGroup":
        yield (CLUSTER, ("scheduler",))


def _job_spec(ctx: Ctx, rtype: str, rest: FieldPath) -> Iterator[Key]:
    """`spec.<...>` of a training job, outside its pod templates."""
    first = rest[0] if rest else ""
    if rtype and len(rest) > 2 and rest[2] == "replicas":
        if rtype in ROLE_KEYS:
            yield (JOB, (*ROLE_KEYS[rtype], "replicas"))
            yield (JOB, ROLE_KEYS[rtype])
        yield ctx.target_key("replicas")
        yield (JOB, ("replicas",))
    elif rtype:
        yield (JOB, ("elastic",))
        yield (JOB, ("framework",))
    elif first == "runPolicy" and len(rest) > 1 and rest[1] == "schedulingPolicy":
        yield (CLUSTER, ("scheduler",))
    elif first == "runPolicy":
        yield (JOB, ("runPolicy", *rest[1:2]))
        yield (JOB, ("runPolicy",))
    elif first == "elasticPolicy":
        yield (JOB, ("elastic", *rest[1:2]))
        yield (JOB, ("elastic",))
    elif first in ("nprocPerNode", "slotsPerWorker"):
        yield (JOB, ("gpusPerReplica",))
    elif first == "successPolicy":
        yield (JOB, ("tensorflow", "successPolicy"))
    elif first in ("mpiImplementation", "sshAuthMountPath", "launcherCreationPolicy"):
        yield (JOB, ("mpi", "implementation" if first == "mpiImplementation" else first))
        yield (JOB, ("mpi",))


def _metadata(ctx: Ctx, rest: FieldPath, *, labels: str, annotations: str) -> Iterator[Key]:
    """Labels and annotations: the job's own (`labels`, or `podLabels` on a pod), else the
    scheduler's queue or the RDMA network that made trainops add one."""
    if len(rest) < 2:
        return
    key = str(rest[1])
    if rest[0] == "labels":
        yield (JOB, (labels, key))
    elif rest[0] == "annotations":
        yield (JOB, (annotations, key))
    if key in (KUEUE_QUEUE_LABEL, VOLCANO_QUEUE_ANNOTATION):
        yield (CLUSTER, ("scheduler", "queue"))
    elif key == MULTUS_ANNOTATION:
        yield (CLUSTER, ("network", "rdma", "multusNetwork"))


def _template(ctx: Ctx, rtype: str, template: dict[str, Any], rel: FieldPath) -> Iterator[Key]:
    """A field of a pod template (`rel` starts at its `metadata` or `spec`): the escape hatch
    first (`replicaPodTemplates.<type>`, then `podTemplate`), then what trainops renders."""
    for hatch in (("replicaPodTemplates", rtype), ("podTemplate",)):
        found = _hatch_path(template, at(ctx.job, hatch), rel)
        if found is not None:
            yield (JOB, (*hatch, *found))
    if rel[0] == "metadata":
        yield from _metadata(ctx, rel[1:], labels="podLabels", annotations="podAnnotations")
        return
    spec = as_dict(template.get("spec"))
    if rtype in ROLE_KEYS:
        role = ROLE_KEYS[rtype]
        yield from _pod(ctx, spec, rel[1:], role)
        yield (JOB, role)
    else:
        yield from _pod(ctx, spec, rel[1:], ())


def _hatch_path(rendered: Any, hatch: Any, rel: FieldPath) -> FieldPath | None:
    """`rel` inside an escape-hatch template, list items matched by their merge key (the
    rendered container `pytorch` is the hatch's item named `pytorch`); None when the hatch
    does not write that field."""
    out: list[str | int] = []
    for part in rel:
        if isinstance(part, int):
            item = as_dict(at(rendered, (part,)))
            match = [k for k in _MERGE_KEYS if k in item]
            if not isinstance(hatch, list) or not match:
                return None
            index = next(
                (i for i, h in enumerate(hatch) if as_dict(h).get(match[0]) == item[match[0]]),
                None,
            )
            if index is None:
                return None
            out.append(index)
            rendered, hatch = item, hatch[index]
        else:
            if not isinstance(hatch, dict) or part not in hatch:
                return None
            out.append(part)
            rendered, hatch = as_dict(rendered).get(part), hatch[part]
    return tuple(out)


def _pod(ctx: Ctx, spec: dict[str, Any], rel: FieldPath, role: FieldPath) -> Iterator[Key]:
    """A field of a pod spec."""
    head = rel[0] if rel else ""
    if head in ("containers", "initContainers") and len(rel) > 1:
        container = as_dict(at(spec, rel[:2]))
        yield from container_of(ctx, str(head), container, rel[2:], role)
    elif head == "volumes" and len(rel) > 1:
        yield from volume(ctx, str(as_dict(at(spec, rel[:2])).get("name", "")), "extraVolumes")
    elif head in ("nodeSelector", "tolerations"):
        yield (CLUSTER, ("gpus", ctx.gpu, head, *rel[1:2]))
        yield (CLUSTER, ("gpus", ctx.gpu, head))
        yield ctx.target_key("gpuProduct")
        yield (CLUSTER, ("gpus", ctx.gpu))
    elif head == "securityContext":
        yield (JOB, ("securityContext", *rel[1:2]))
        yield (JOB, ("securityContext",))
        yield (CLUSTER, ("podSecurity",))
    elif head in ("hostNetwork", "dnsPolicy"):
        yield (JOB, ("hostNetwork",))
        yield (CLUSTER, ("network", "allowHostNetwork"))
    elif head == "schedulerName":
        yield (JOB, ("schedulerName",))
        yield (CLUSTER, ("scheduler", "name"))
    elif head == "priorityClassName":
        yield (JOB, ("priorityClassName",))
        yield (CLUSTER, ("scheduler", "priorityClass"))
    elif head in ("automountServiceAccountToken", "serviceAccountName"):
        yield (JOB, ("serviceAccountName",))
    elif head:
        yield (JOB, rel[:2])
        yield (JOB, rel[:1])


def _trainer(ctx: Ctx, rest: FieldPath, trainer: dict[str, Any]) -> Iterator[Key]:
    """A TrainJob's `spec.trainer`: the node container's fields under other names."""
    head = str(rest[0])
    if head == "numNodes":
        yield ctx.target_key("replicas")
        yield (JOB, ("replicas",))
        return
    if head == "numProcPerNode":
        yield (JOB, ("gpusPerReplica",))
        return
    field = {v: k for k, v in TRAINER_FIELDS.items()}.get(head, head)
    yield from training_container(ctx, trainer, (field, *rest[1:]), (), data_path=(head, *rest[1:]))


def _claim(ctx: Ctx, path: FieldPath) -> Iterator[Key]:
    """A PersistentVolumeClaim trainops creates for a job volume (`<job>-<volume>`, or the
    volume's `claimName`)."""
    claim = as_dict(ctx.obj.get("metadata")).get("name")
    job = ctx.job.get("name")
    name = next(
        (
            v
            for v, spec in as_dict(ctx.job.get("volumes")).items()
            if as_dict(spec).get("claimName", f"{job}-{v}") == claim
        ),
        None,
    )
    if name is None:
        return
    field = path[1] if len(path) > 1 and path[0] == "spec" else ""
    if field == "storageClassName":
        yield (JOB, ("volumes", name, "storageClass"))
        yield (CLUSTER, ("storage", "defaultClass"))
    elif field == "resources":
        yield (JOB, ("volumes", name, "size"))
    elif field == "accessModes":
        yield (JOB, ("volumes", name, "accessMode"))
    yield (JOB, ("volumes", name))
