"""What `trainops explain` answers: the cause in one line, then the evidence, as text or JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from trainops.core.text import one_line

LAST = "last lines"
DIED_OF = "the traceback it died of"


@dataclass
class LogTail:
    pod: str
    container: str
    previous: bool
    lines: list[str]
    what: str = "last lines"  # LAST
    """`last lines`, `first traceback of the failing child` (torchrun) or `the traceback it
    died of` (the last traceback chain of a Python program): a chain is shown whole, its
    last line the exception that ended the program, whatever `--tail` says."""


@dataclass
class Explanation:
    """The answer: the cause in one line, then the evidence."""

    cause: str
    healthy: bool
    """True when nothing is wrong (Running, Succeeded): `explain` exits 0."""
    job: str
    conditions: list[dict[str, Any]] = field(default_factory=list)
    pods: list[str] = field(default_factory=list)
    """One line per pod: phase, scheduling, container states."""
    events: list[str] = field(default_factory=list)
    log: LogTail | None = None
    findings: list[str] = field(default_factory=list)
    """What else is wrong or worth knowing: causes after the first, NCCL's network per pod,
    a hang's evidence."""
    unread: list[str] = field(default_factory=list)
    """What could not be read (and why): the diagnosis is made without it."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "cause": self.cause,
            "healthy": self.healthy,
            "conditions": self.conditions,
            "pods": self.pods,
            "events": self.events,
            "findings": self.findings,
            "unread": self.unread,
            "log": None
            if self.log is None
            else {
                "pod": self.log.pod,
                "container": self.log.container,
                "previous": self.log.previous,
                "what": self.log.what,
                "lines": self.log.lines,
            },
        }

    def text(self) -> str:
        out = [self.cause, "", f"{self.job}"]
        if self.conditions:
            out.append("Conditions:")
            out += [
                f"  {c.get('type', '?')}={c.get('status', '?')}  {c.get('reason', '')}:"
                f" {c.get('message', '')}  ({c.get('lastTransitionTime', '-')})"
                for c in self.conditions
            ]
        if self.pods:
            out.append("Pods:")
            out += [f"  {line}" for line in self.pods]
        if self.findings:
            out.append("Findings:")
            out += [f"  {line}" for line in self.findings]
        if self.events:
            out.append(f"Events (latest {len(self.events)}):")
            out += [f"  {line}" for line in self.events]
        if self.log is not None:
            which = "previous run" if self.log.previous else "current run"
            size = len(self.log.lines)
            what = (
                f"last {size} lines" if self.log.what == LAST else f"{self.log.what}, {size} lines"
            )
            out.append(
                f"Log of pod/{self.log.pod} container {self.log.container} ({which}, {what}):"
            )
            out += [f"  {line}" for line in self.log.lines]
        if self.unread:
            out.append("Could not read:")
            out += [f"  {line}" for line in self.unread]
        # Every entry one line, inert: logs, events and names come from the cluster.
        return "\n".join(one_line(line) for line in out) + "\n"
