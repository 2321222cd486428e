"""The evidence `trainops explain` shows under its first line: the scheduler's message said
plainly, one line per pod, one line per event."""

from __future__ import annotations

import re
from typing import Any

from trainops.cluster.causes import containers as _containers
from trainops.cluster.causes import event_count, event_time

# The scheduler's summary, e.g. "0/12 nodes are available: 4 Insufficient nvidia.com/gpu,
# 8 node(s) didn't match Pod's node affinity/selector. preemption: ..."
# Volcano's (v1.15 pkg/scheduler/api/unschedule_info.go FitErrors) says "0/8 nodes are
# unavailable: 8 Insufficient nvidia.com/gpu."
_UNSCHEDULABLE = re.compile(
    r"^0/(\d+) nodes are (?:un)?available: (.*?)(?:\. preemption:.*)?\.?$", re.S
)
_SELECTOR_MISS = re.compile(r"^(\d+) node\(s\) didn't match Pod's node affinity/selector$")


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", "?"))


def scheduler_summary(message: str, pod: dict[str, Any]) -> str:
    """The scheduler's message, said plainly when every node misses the pod's nodeSelector."""
    first = message.strip().splitlines()[0] if message.strip() else ""
    match = _UNSCHEDULABLE.match(first)
    if match is None:
        return first
    total = int(match.group(1))
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    for part in match.group(2).split(", "):
        miss = _SELECTOR_MISS.match(part.strip())
        if miss and int(miss.group(1)) == total and selector:
            wanted = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
            return f"0/{total} nodes have {wanted} (the nodeSelector of pod {_name(pod)})"
    said = f"{first.split('. preemption:')[0].rstrip('.')} (pod {_name(pod)})"
    if "unbound immediate PersistentVolumeClaims" in first:
        claims = [
            str(v["persistentVolumeClaim"].get("claimName"))
            for v in (pod.get("spec") or {}).get("volumes") or []
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)
        ]
        said += (
            f"; a claim it mounts ({', '.join(claims) or '?'}) is not bound: its StorageClass"
            " could not provision a volume (kubectl describe pvc)"
        )
    return said


def pod_line(pod: dict[str, Any]) -> str:
    status = pod.get("status") or {}
    parts = [f"{_name(pod)}  {status.get('phase', '?')}"]
    if status.get("reason"):
        parts.append(f"{status['reason']}: {status.get('message', '')}".rstrip(": "))
    for cond in status.get("conditions") or []:
        if cond.get("status") == "False" and cond.get("reason") == "Unschedulable":
            parts.append(f"{cond.get('type')}=False Unschedulable: {cond.get('message', '')}")
    for c in _containers(pod):
        state = c.get("state") or {}
        for what, raw in state.items():
            detail = raw or {}
            reason = detail.get("reason", "")
            code = f" exit {detail['exitCode']}" if "exitCode" in detail else ""
            parts.append(f"{c.get('name')}: {what} {reason}{code}".rstrip())
        if c.get("restartCount"):
            last = (c.get("lastState") or {}).get("terminated") or {}
            parts.append(
                f"{c.get('name')}: restarts {c['restartCount']}"
                + (f" (last: {last.get('reason')} exit {last.get('exitCode')})" if last else "")
            )
    return "; ".join(parts)


def event_line(event: dict[str, Any]) -> str:
    when = event_time(event) or "-"
    obj = event.get("involvedObject") or {}
    times = event_count(event)
    count = f" (x{times})" if times > 1 else ""
    return (
        f"{when}  {event.get('type', '')}  {event.get('reason', '')}"
        f"  {str(obj.get('kind', '')).lower()}/{obj.get('name', '')}:"
        f" {str(event.get('message', '')).strip()}{count}"
    )


def scheduler_note(events: list[dict[str, Any]], names: set[str]) -> str:
    """How often and how lately the scheduler (or Kueue, Volcano) said it could not place
    `names`: ` (FailedScheduling x6, last 2026-11-23T08:05:06Z)`, or "" without such events.
    The event's `series.count` (or older `count`) is the scheduler's own tally of the same
    message."""
    said = [
        e
        for e in events
        if str((e.get("involvedObject") or {}).get("name")) in names
        and e.get("reason") in {"FailedScheduling", "Unschedulable", "Pending"}
    ]
    if not said:
        return ""
    latest = max(said, key=event_time)
    count = sum(event_count(e) for e in said)
    return f" ({latest.get('reason')} x{count}, last {event_time(latest)})"
