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

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from trainops.core.manifest import FieldPath
from trainops.core.values import as_dict, as_list
from trainops.core.yamlio import Document
from trainops.facts.kubeflow import KUBEFLOW_REPLICA_KEYS
from trainops.facts.names import DATA_SYNC_CONTAINER, DEEPSPEED_VOLUME, SHM_VOLUME
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL, VOLCANO_QUEUE_ANNOTATION
from trainops.facts.scratch import SCRATCH_ENV, SCRATCH_VOLUMES
from trainops.kube.trainjob import TRAINER_FIELDS
from trainops.render.pod import METRICS_PORT_ENV, MULTUS_ANNOTATION

JOB, CLUSTER = "job", "cluster"
Key = tuple[str, FieldPath]
"""(JOB or CLUSTER, a key path inside that file)."""

# The NCCL variables trainops sets from the cluster profile (render/pod.py:nccl_env).
NCCL_KEYS: dict[str, FieldPath] = {
    "NCCL_IB_DISABLE": ("network", "transport"),
    "NCCL_IB_HCA": ("network", "rdma", "hca"),
    "NCCL_IB_GID_INDEX": ("network", "rdma", "gidIndex"),
    "NCCL_NET_GDR_LEVEL": ("network", "rdma", "gdrLevel"),
    "NCCL_SOCKET_IFNAME": ("network", "socketInterface"),
}
# Replica types that are extra roles with their own size (spec key of the role).
ROLE_KEYS: dict[str, FieldPath] = {
    "PS": ("tensorflow", "parameterServers"),
    "Evaluator": ("tensorflow", "evaluator"),
    "Launcher": ("mpi", "launcher"),
}
_SCRATCH = frozenset(name for name, _ in SCRATCH_VOLUMES)
_SCRATCH_ENV = frozenset(name for name, _ in SCRATCH_ENV)
_READ_ONLY_ROOT = ("securityContext", "readOnlyRootFilesystem")
# A variable's name, alone or as NAME=value (an mpirun `-x` export).
_ENV_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:=|$)")
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
        for which, key in (*_candidates(_Ctx(self, kind, obj), path), *_LAST):
            doc = self.job if which == JOB else self.cluster
            if doc is not None and doc.part(key, None) is not None:
                return doc.file, doc.line_of(key)
        return None


_LAST: tuple[Key, ...] = ((JOB, ("name",)), (CLUSTER, ("name",)))


class _Ctx:
    """What the candidates read: the object, the job's target on this cluster, its GPU."""

    def __init__(self, specs: Specs, kind: str, obj: dict[str, Any]) -> None:
        self.kind, self.obj = kind, obj
        self.job = as_dict(specs.job.data) if specs.job is not None else {}
        profile = as_dict(specs.cluster.data) if specs.cluster is not None else {}
        targets = as_list(self.job.get("targets"))
        self.target = next(
            (i for i, t in enumerate(targets) if as_dict(t).get("cluster") == specs.cluster_name),
            None,
        )
        target = as_dict(targets[self.target]) if self.target is not None else {}
        product = target.get("gpuProduct")
        gpus = as_list(profile.get("gpus"))
        names = [as_dict(g).get("name") for g in gpus]
        self.gpu = names.index(product) if product in names else 0

    def target_key(self, *rest: str | int) -> Key:
        return (JOB, ("targets", self.target if self.target is not None else -1, *rest))


def _at(data: Any, path: FieldPath) -> Any:
    """The value at `path` inside `data`, None where the path is not there."""
    for part in path:
        if isinstance(part, int) and isinstance(data, list) and 0 <= part < len(data):
            data = data[part]
        elif isinstance(part, str) and isinstance(data, dict):
            data = data.get(part)
        else:
            return None
    return data


def replica_type(kind: str, obj: dict[str, Any], path: FieldPath) -> str | None:
    """The replica type a field belongs to (`Master`, `Worker`; a TrainJob's replicated job,
    `node` for its trainer), None for a field of the object as a whole."""
    if kind in KUBEFLOW_REPLICA_KEYS and len(path) > 2 and path[0] == "spec":
        return str(path[2]) if path[1] == KUBEFLOW_REPLICA_KEYS[kind] else None
    if tuple(path[:2]) == ("spec", "trainer"):
        return "node"
    for i, part in enumerate(path[:-1]):
        if part == "replicatedJobs" and isinstance(path[i + 1], int):
            name = as_dict(_at(obj, path[: i + 2])).get("name")
            return str(name) if name is not None else None
    return None


def _pod_start(kind: str, path: FieldPath) -> int | None:
    """Index in `path` just after the pod template (`...template`), None outside any."""
    if kind in KUBEFLOW_REPLICA_KEYS:
        return 4 if len(path) > 4 and path[3] == "template" else None
    starts = [i + 1 for i, part in enumerate(path[:-1]) if part == "template"]
    return starts[-1] if starts else None


def _candidates(ctx: _Ctx, path: FieldPath) -> Iterator[Key]:
    rtype = replica_type(ctx.kind, ctx.obj, path) or ""
    start = _pod_start(ctx.kind, path)
    if start is not None and path[start] in ("spec", "metadata"):
        template = _at(ctx.obj, path[:start])
        yield from _template(ctx, rtype, as_dict(template), path[start:])
    else:
        yield from _object(ctx, rtype, path)


def _object(ctx: _Ctx, rtype: str, path: FieldPath) -> Iterator[Key]:
    """A field outside the pod templates."""
    head, rest = (path[0], path[1:]) if path else ("", ())
    if ctx.kind == "PersistentVolumeClaim":
        yield from _claim(ctx, path)
    elif tuple(path[:2]) == ("spec", "trainer") and len(path) > 2:
        yield from _trainer(ctx, path[2:], as_dict(_at(ctx.obj, ("spec", "trainer"))))
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


def _job_spec(ctx: _Ctx, rtype: str, rest: FieldPath) -> Iterator[Key]:
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


def _metadata(ctx: _Ctx, rest: FieldPath, *, labels: str, annotations: str) -> Iterator[Key]:
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


def _template(ctx: _Ctx, rtype: str, template: dict[str, Any], rel: FieldPath) -> Iterator[Key]:
    """A field of a pod template (`rel` starts at its `metadata` or `spec`): the escape hatch
    first (`replicaPodTemplates.<type>`, then `podTemplate`), then what trainops renders."""
    for hatch in (("replicaPodTemplates", rtype), ("podTemplate",)):
        found = _hatch_path(template, _at(ctx.job, hatch), rel)
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
            item = as_dict(_at(rendered, (part,)))
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


def _pod(ctx: _Ctx, spec: dict[str, Any], rel: FieldPath, role: FieldPath) -> Iterator[Key]:
    """A field of a pod spec."""
    head = rel[0] if rel else ""
    if head in ("containers", "initContainers") and len(rel) > 1:
        container = as_dict(_at(spec, rel[:2]))
        yield from _container_of(ctx, str(head), container, rel[2:], role)
    elif head == "volumes" and len(rel) > 1:
        yield from _volume(ctx, str(as_dict(_at(spec, rel[:2])).get("name", "")), "extraVolumes")
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


def _container_of(
    ctx: _Ctx, where: str, container: dict[str, Any], rest: FieldPath, role: FieldPath
) -> Iterator[Key]:
    """A container's field: a sidecar's, the data-sync init container's, or the training
    container's."""
    name = container.get("name")
    sidecars = as_list(ctx.job.get("sidecars"))
    index = next((i for i, s in enumerate(sidecars) if as_dict(s).get("name") == name), None)
    if index is not None:
        yield (JOB, ("sidecars", index, *rest))
        yield (JOB, ("sidecars", index))
    elif where == "initContainers" and name == DATA_SYNC_CONTAINER:
        yield from _data_sync(ctx, container, rest)
    else:
        yield from _container(ctx, container, rest, role)


def _data_sync(ctx: _Ctx, container: dict[str, Any], rest: FieldPath) -> Iterator[Key]:
    head = rest[0] if rest else ""
    if head in ("image", "command"):
        yield (JOB, ("dataSync", head, *rest[1:2]))
    elif head == "env" and len(rest) > 1:
        env = str(as_dict(_at(container, rest[:2])).get("name", ""))
        yield (JOB, ("dataSync", "env", env))
        yield (JOB, ("dataSync", "secretEnv", env))
    elif head == "volumeMounts":
        yield (JOB, ("dataSync", "volume"))
    yield (JOB, ("dataSync",))


def _trainer(ctx: _Ctx, rest: FieldPath, trainer: dict[str, Any]) -> Iterator[Key]:
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
    yield from _container(ctx, trainer, (field, *rest[1:]), (), data_path=(head, *rest[1:]))


def _container(
    ctx: _Ctx,
    container: dict[str, Any],
    rest: FieldPath,
    role: FieldPath,
    data_path: FieldPath | None = None,
) -> Iterator[Key]:
    """A field of the training container (`data_path`: where it is in `container`, when the
    TrainJob names it otherwise)."""
    head = rest[0] if rest else ""
    at = data_path if data_path is not None else rest
    if head in ("image", "imagePullPolicy"):
        yield (JOB, ("image",))
    elif head in ("command", "args"):
        yield from _argv(ctx, str(head), rest[1:2], _at(container, at[:2]))
    elif head == "env":
        name = str(as_dict(_at(container, at[:2])).get("name", "")) if len(rest) > 1 else ""
        yield from _env(ctx, name)
    elif head == "resources":
        yield from _resources(rest[1:], role)
    elif head == "ports":
        yield (JOB, ("metricsPort",))
    elif head == "securityContext":
        yield from _security(rest[1:])
    elif head == "volumeMounts" and len(rest) > 1:
        mount = str(as_dict(_at(container, at[:2])).get("name", ""))
        yield from _volume(ctx, mount, "extraVolumeMounts")
    yield from (() if head != "name" else ((JOB, ("framework",)),))


def _argv(ctx: _Ctx, head: str, index: FieldPath, value: Any) -> Iterator[Key]:
    """An argument: the spec's item of the same text (in `args`, `command`, the MPI options;
    an mpirun `-x NAME` export is the variable's), else the item at the same index
    (`torchrun` stands where the spec's `python` does), else the DeepSpeed flag trainops
    appends, else the MPI settings."""
    if isinstance(value, str) and index:
        exported = _ENV_NAME.match(value)
        if exported and exported[1] in _env_names(ctx):
            yield from _env(ctx, exported[1])
        for spec_list in (("args",), ("command",), ("mpi", "mpirunArgs"), ("mpi", "workerCommand")):
            items = as_list(_at(ctx.job, spec_list))
            if value in items:
                yield (JOB, (*spec_list, items.index(value)))
    if index:
        yield (JOB, (head, *index))
    if head == "args":
        yield (JOB, ("deepspeed", "configFlag"))
        yield (JOB, ("deepspeed",))
    yield (JOB, (head,))
    yield (JOB, ("mpi",))


def _env_names(ctx: _Ctx) -> set[str]:
    """The variables the job (and its target here) sets itself."""
    names = {*as_dict(ctx.job.get("env")), *as_dict(ctx.job.get("secretEnv"))}
    if ctx.target is not None:
        target = as_dict(as_list(ctx.job.get("targets"))[ctx.target])
        names |= set(as_dict(target.get("env")))
    return names


def _env(ctx: _Ctx, name: str) -> Iterator[Key]:
    """A variable: the target's, the job's, a secret's; else the cluster setting or the
    spec key that made trainops set it."""
    if name:
        yield ctx.target_key("env", name)
        yield (JOB, ("env", name))
        yield (JOB, ("secretEnv", name))
    if name in NCCL_KEYS:
        yield (CLUSTER, NCCL_KEYS[name])
        yield (CLUSTER, ("network",))
    elif name == METRICS_PORT_ENV:
        yield (JOB, ("metricsPort",))
    elif name in _SCRATCH_ENV:
        yield (JOB, _READ_ONLY_ROOT)
    yield (JOB, ("env",))
    yield ctx.target_key("env")


def _resources(rest: FieldPath, role: FieldPath) -> Iterator[Key]:
    """`resources.<limits|requests>.<name>`: the job's (or a role's) size, or the cluster's
    RDMA device."""
    resource = str(rest[1]) if len(rest) > 1 else ""
    if "gpu" in resource:
        if role:
            yield (JOB, (*role, "gpus"))
        yield (JOB, ("gpusPerReplica",))
    elif resource in ("cpu", "memory"):
        if role:
            yield (JOB, (*role, "resources", resource))
        yield (JOB, ("resources", resource))
    elif resource:
        yield (CLUSTER, ("network", "rdma", "deviceResource"))
    if role:
        yield (JOB, (*role, "resources"))
    yield (JOB, ("resources",))
    yield (JOB, ("gpusPerReplica",))


def _security(rest: FieldPath) -> Iterator[Key]:
    head = rest[0] if rest else ""
    if head == "capabilities":
        yield (CLUSTER, ("network", "rdma"))
        yield (CLUSTER, ("podSecurity", "allowCapabilities"))
    elif head:
        yield (JOB, ("securityContext", head))
    yield (JOB, ("securityContext",))
    yield (CLUSTER, ("podSecurity", "level"))


def _volume(ctx: _Ctx, name: str, extra: str) -> Iterator[Key]:
    """A volume (or its mount) by name: the job's, /dev/shm, the DeepSpeed config, the
    scratch directories, the escape hatch's extra volumes."""
    if name in as_dict(ctx.job.get("volumes")):
        yield (JOB, ("volumes", name))
    elif name == SHM_VOLUME:
        yield (JOB, ("sharedMemory",))
    elif name == DEEPSPEED_VOLUME:
        yield (JOB, ("deepspeed",))
    elif name in _SCRATCH:
        yield (JOB, _READ_ONLY_ROOT)
    items = as_list(ctx.job.get(extra))
    index = next((i for i, v in enumerate(items) if as_dict(v).get("name") == name), None)
    if index is not None:
        yield (JOB, (extra, index))
    yield (JOB, ("volumes",))


def _claim(ctx: _Ctx, path: FieldPath) -> Iterator[Key]:
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
