"""What a rule is: metadata (the docs are generated from it) plus a small check.

A check sees one object at a time, with the whole manifest set and the cluster
profile as context, and yields bare `Violation`s: a message and the path inside
the object. The engine (`trainops.rules.engine`) adds file, line, object,
cluster and the severity after the cluster's override and the object's waivers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from trainops.core.findings import Severity
from trainops.core.manifest import FieldPath
from trainops.kube.objects import Object
from trainops.rules.context import Context

Path = FieldPath


@dataclass(frozen=True)
class Violation:
    """One bare problem a check found in one object."""

    message: str
    path: Path = ()
    """Where inside the object (keys and list indexes): the engine turns it into a line."""
    severity: Severity | None = None
    """For rules with a milder variant (e.g. `rdma-incomplete`'s missing IPC_LOCK): overrides
    the rule's default severity. A cluster policy override still wins."""


CheckFn = Callable[[Object, Context], Iterable[Violation]]


@dataclass(frozen=True)
class Rule:
    """A policy rule: metadata plus its check. `docs/rules.md` is generated from these fields."""

    slug: str
    """Stable name, the `rule` of JSON findings, the suffix of the waiver annotation."""
    code: str
    """Stable short id (`TO101`), ruff-style: never reused, independent of list order. The
    hundreds group families: 1 resources, 2 elastic/launch, 3 env, 4 scheduling and
    lifecycle, 5 NCCL and network, 6 pod and image, 7 DeepSpeed, 8 MPI, 9 cluster, volumes,
    metrics and waivers."""
    severity: Severity
    summary: str
    """One line: what it catches."""
    why: str
    """Why it matters: what goes wrong at run time."""
    fix: str
    """What to change."""
    example: str
    """A short YAML excerpt that trips the rule."""
    check: CheckFn
    needs_cluster: bool = False
    """Only runs when a cluster profile is known (`--cluster`, or rendered output)."""
    pods_only: bool = False
    """Finds nothing in an object without pod templates (a Service, a ConfigMap): the engine
    skips it there. Most objects of a repository have none, and most rules look at pods."""
    references: Sequence[str] = field(default_factory=tuple)
    """Links to the upstream documentation the rule relies on."""
