"""Findings: what validation reports, in the shape DESIGN.md fixes for `--format json`."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True)
class Location:
    """Where a finding was found in what trainops generated: the rendered object and file
    (a finding itself names the spec line that produced the field, `validate/locate.py`)."""

    file: str | None
    line: int | None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    cluster: str | None = None
    replica_type: str | None = None
    """The replica type (`Master`, `Worker`, a TrainJob's `node`) the field belongs to."""
    container: str | None = None
    """The container the field belongs to, when it is a container's."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "cluster": self.cluster,
            "replicaType": self.replica_type,
            "container": self.container,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Location:
        keys = ("file", "line", "kind", "name", "namespace", "cluster")
        return cls(
            **{k: d.get(k) for k in keys},
            replica_type=d.get("replicaType"),
            container=d.get("container"),
        )


@dataclass(frozen=True)
class Finding:
    """One problem with one object (or one file).

    Rules yield bare findings (rule, severity, message); the engine fills in where.
    """

    rule: str
    """Slug: `schema`, `build`, `spec`, `drift`, or a policy rule's slug."""
    severity: Severity
    message: str
    file: str | None = None
    line: int | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    cluster: str | None = None
    waived: str | None = None
    """Why this finding does not count, when it does not: the waiver annotation and its
    reason, or the cluster policy that switched a security rule off. Reported in every
    format, never counted as an error or warning (rules/waivers.py)."""
    switched_off: bool = False
    """This finding says the cluster profile's `policy` switches security rule `rule` off
    (one per rule and cluster, waived, in every run whether or not anything breaks the rule):
    the summary of every format lists them (report/formats.py)."""
    related: tuple[Location, ...] = ()
    """Where in the rendered output it was found, when `file`/`line` name the spec line that
    produced the field: one per object, cluster and replica type merged into this finding."""
    path: tuple[str | int, ...] | None = field(default=None, compare=False, repr=False)
    """The field inside the object (keys and list indexes), for the way back to the spec;
    not reported."""

    def to_dict(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"waived": self.waived} if self.waived is not None else {}
        if self.switched_off:
            extra["switchedOff"] = True
        if self.related:
            extra["relatedLocations"] = [r.to_dict() for r in self.related]
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
            "cluster": self.cluster,
            **extra,
        }

    def sort_key(self) -> tuple[str, int, str, str, str, str]:
        return (
            self.file or "",
            self.line or 0,
            self.cluster or "",
            self.kind or "",
            self.name or "",
            self.rule,
        )
