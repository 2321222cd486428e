"""The source map of a container's fields: which spec key made a container's image, argv, env,
size, mounts and security (`trainops.render.sources` walks the object to the container)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from trainops.core.manifest import FieldPath
from trainops.core.values import as_dict, as_list
from trainops.core.yamlio import Document
from trainops.facts.names import DATA_SYNC_CONTAINER, DEEPSPEED_VOLUME, SHM_VOLUME
from trainops.facts.scratch import SCRATCH_ENV, SCRATCH_VOLUMES
from trainops.render.pod import METRICS_PORT_ENV

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
_SCRATCH = frozenset(name for name, _ in SCRATCH_VOLUMES)
_SCRATCH_ENV = frozenset(name for name, _ in SCRATCH_ENV)
_READ_ONLY_ROOT = ("securityContext", "readOnlyRootFilesystem")
# A variable's name, alone or as NAME=value (an mpirun `-x` export).
_ENV_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:=|$)")


class Ctx:
    """What the candidates read: the object, the job's target on this cluster, its GPU."""

    def __init__(
        self,
        docs: tuple[Document | None, Document | None, str | None],
        kind: str,
        obj: dict[str, Any],
    ) -> None:
        """`docs`: the job spec, the cluster profile and the cluster's name."""
        job, cluster, cluster_name = docs
        self.kind, self.obj = kind, obj
        self.job = as_dict(job.data) if job is not None else {}
        profile = as_dict(cluster.data) if cluster is not None else {}
        targets = as_list(self.job.get("targets"))
        self.target = next(
            (i for i, t in enumerate(targets) if as_dict(t).get("cluster") == cluster_name),
            None,
        )
        target = as_dict(targets[self.target]) if self.target is not None else {}
        product = target.get("gpuProduct")
        gpus = as_list(profile.get("gpus"))
        names = [as_dict(g).get("name") for g in gpus]
        self.gpu = names.index(product) if product in names else 0

    def target_key(self, *rest: str | int) -> Key:
        return (JOB, ("targets", self.target if self.target is not None else -1, *rest))


def at(data: Any, path: FieldPath) -> Any:
    """The value at `path` inside `data`, None where the path is not there."""
    for part in path:
        if isinstance(part, int) and isinstance(data, list) and 0 <= part < len(data):
            data = data[part]
        elif isinstance(part, str) and isinstance(data, dict):
            data = data.get(part)
        else:
            return None
    return data


def container_of(
    ctx: Ctx, where: str, container: dict[str, Any], rest: FieldPath, role: FieldPath
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
        yield from training_container(ctx, container, rest, role)


def _data_sync(ctx: Ctx, container: dict[str, Any], rest: FieldPath) -> Iterator[Key]:
    head = rest[0] if rest else ""
    if head in ("image", "command"):
        yield (JOB, ("dataSync", head, *rest[1:2]))
    elif head == "env" and len(rest) > 1:
        env = str(as_dict(at(container, rest[:2])).get("name", ""))
        yield (JOB, ("dataSync", "env", env))
        yield (JOB, ("dataSync", "secretEnv", env))
    elif head == "volumeMounts":
        yield (JOB, ("dataSync", "volume"))
    yield (JOB, ("dataSync",))


def training_container(
    ctx: Ctx,
    container: dict[str, Any],
    rest: FieldPath,
    role: FieldPath,
    data_path: FieldPath | None = None,
) -> Iterator[Key]:
    """A field of the training container (`data_path`: where it is in `container`, when the
    TrainJob names it otherwise)."""
    head = rest[0] if rest else ""
    where = data_path if data_path is not None else rest
    if head in ("image", "imagePullPolicy"):
        yield (JOB, ("image",))
    elif head in ("command", "args"):
        yield from _argv(ctx, str(head), rest[1:2], at(container, where[:2]))
    elif head == "env":
        name = str(as_dict(at(container, where[:2])).get("name", "")) if len(rest) > 1 else ""
        yield from _env(ctx, name)
    elif head == "resources":
        yield from _resources(rest[1:], role)
    elif head == "ports":
        yield (JOB, ("metricsPort",))
    elif head == "securityContext":
        yield from _security(rest[1:])
    elif head == "volumeMounts" and len(rest) > 1:
        mount = str(as_dict(at(container, where[:2])).get("name", ""))
        yield from volume(ctx, mount, "extraVolumeMounts")
    yield from (() if head != "name" else ((JOB, ("framework",)),))


def _argv(ctx: Ctx, head: str, index: FieldPath, value: Any) -> Iterator[Key]:
    """An argument: the spec's item of the same text (in `args`, `command`, the MPI options;
    an mpirun `-x NAME` export is the variable's), else the item at the same index
    (`torchrun` stands where the spec's `python` does), else the DeepSpeed flag trainops
    appends, else the MPI settings."""
    if isinstance(value, str) and index:
        exported = _ENV_NAME.match(value)
        if exported and exported[1] in _env_names(ctx):
            yield from _env(ctx, exported[1])
        for spec_list in (("args",), ("command",), ("mpi", "mpirunArgs"), ("mpi", "workerCommand")):
            items = as_list(at(ctx.job, spec_list))
            if value in items:
                yield (JOB, (*spec_list, items.index(value)))
    if index:
        yield (JOB, (head, *index))
    if head == "args":
        yield (JOB, ("deepspeed", "configFlag"))
        yield (JOB, ("deepspeed",))
    yield (JOB, (head,))
    yield (JOB, ("mpi",))


def _env_names(ctx: Ctx) -> set[str]:
    """The variables the job (and its target here) sets itself."""
    names = {*as_dict(ctx.job.get("env")), *as_dict(ctx.job.get("secretEnv"))}
    if ctx.target is not None:
        target = as_dict(as_list(ctx.job.get("targets"))[ctx.target])
        names |= set(as_dict(target.get("env")))
    return names


def _env(ctx: Ctx, name: str) -> Iterator[Key]:
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


def volume(ctx: Ctx, name: str, extra: str) -> Iterator[Key]:
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
