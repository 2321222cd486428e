"""Memory and storage sizes no author means: a quantity without a unit is bytes
(`memory: 16` asks for 16 bytes) and `m` is milli (`memory: 16m` is 0.016 bytes). Kubernetes
takes both; the pod then cannot start (the runtime refuses a memory limit under a few MiB) or
is killed at once, and a 16-byte volume claim is refused or useless. The same slip on `cpu`
(`cpu: 6000` for `6000m`) asks for more CPUs than any node has: the pod stays Pending."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainops.core.errors import Problem
from trainops.core.yamlio import Document
from trainops.facts.quantity import parse_quantity
from trainops.jobspec.problems import Collector, dotted

# Below this, a size in a training job is a missing unit (the smallest real request is MiBs).
MIN_BYTES = 2**20
# The mappings of a job spec that hold a role's `memory` (`cpu` beside it).
_RESOURCES: tuple[tuple[str, ...], ...] = (
    ("resources",),
    ("tensorflow", "parameterServers", "resources"),
    ("tensorflow", "evaluator", "resources"),
    ("mpi", "launcher", "resources"),
)


# More CPUs than any machine a pod lands on has (the largest hold under a thousand).
MAX_CPUS = 1024


def _sizes(d: dict[str, Any]) -> Iterator[tuple[list[str | int], Any]]:
    for where in _RESOURCES:
        node: Any = d
        for key in where:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and "memory" in node:
            yield [*where, "memory"], node["memory"]
        if isinstance(node, dict) and "cpu" in node:
            yield [*where, "cpu"], node["cpu"]
    if "sharedMemory" in d:
        yield ["sharedMemory"], d["sharedMemory"]
    for name, volume in (d.get("volumes") or {}).items():
        if isinstance(volume, dict) and "size" in volume:
            yield ["volumes", name, "size"], volume["size"]


def check_byte_sizes(d: dict[str, Any], out: Collector) -> None:
    """A memory or storage size under 1 MiB, at its line, with the unit it lacks."""
    for path, value in _sizes(d):
        amount = parse_quantity(value)
        if path[-1] == "cpu":
            if amount is not None and amount > MAX_CPUS:
                out.add(
                    path,
                    f"`{dotted(path)}: {value}` asks for {amount:g} CPUs, more than any node"
                    f" has: did you mean `{value}m` (millicores)?",
                )
            continue
        if amount is None or amount == 0 or amount >= MIN_BYTES:
            continue
        text = str(value).strip()
        number = text.removesuffix("m")
        why = "`m` is milli" if text.endswith("m") else "a number without a unit is bytes"
        out.add(
            path,
            f"`{dotted(path)}: {text}` is {amount:g} bytes ({why}): write the unit,"
            f" `{number}Gi` or `{number}Mi`",
        )


def shared_memory_notes(d: dict[str, Any], doc: Document) -> list[Problem]:
    """A warning when `sharedMemory` is above the training container's memory limit: the
    kubelet sizes a memory-backed emptyDir to the smaller of its sizeLimit and the pod's memory
    limit (Kubernetes pkg/volume/emptydir `calculateEmptyDirMemorySize`), and pages written to
    /dev/shm count against the writer's limit: the rank is OOM-killed before /dev/shm fills."""
    if not isinstance(doc.data, dict) or "sharedMemory" not in doc.data:
        return []  # the default (16Gi) above a small pod's limit is capped, and not the author's
    shm = parse_quantity(d.get("sharedMemory"))
    memory = (d.get("resources") or {}).get("memory")
    limit = parse_quantity(memory)
    if shm is None or limit is None or limit <= 0 or shm <= limit:
        return []
    line, column = doc.position(["sharedMemory"])
    return [
        Problem(
            doc.file,
            line,
            column,
            f"`sharedMemory: {d['sharedMemory']}` is above the pods' memory limit"
            f" (`resources.memory: {memory}`): the kubelet sizes /dev/shm to the smaller, and"
            " what the ranks write there counts against the limit, so a rank is OOM-killed"
            " before /dev/shm is full: raise `resources.memory` or lower `sharedMemory`",
        )
    ]
