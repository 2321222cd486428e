"""`trainops explain JOB`: why a job is not running, or why it failed, in one line first.

Reads the job's conditions, its pods' statuses (Pending with the scheduler's reason,
image pulls, OOMKilled, CrashLoopBackOff, evictions), Kueue's Workload or Volcano's
PodGroup, recent events, and the last log lines of the failing container, then names
the most specific cause it finds: a pod-level cause (what the kubelet or the scheduler
said) beats the job's own summary ("1 Master replica(s) failed").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from trainops.cluster import kinds
from trainops.cluster.client import Client, Resource
from trainops.cluster.errors import ClusterError
from trainops.cluster.status import require_namespaces, scheduler_objects, served_training_kinds
from trainops.core.manifest import Manifest
from trainops.spec.model import ClusterProfile

DEFAULT_TAIL_LINES = 20
MAX_EVENTS = 10
_IMAGE_PULL = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull"}
# The scheduler's summary, e.g. "0/12 nodes are available: 4 Insufficient nvidia.com/gpu,
# 8 node(s) didn't match Pod's node affinity/selector. preemption: ..."
_UNSCHEDULABLE = re.compile(r"^0/(\d+) nodes are available: (.*?)(?:\. preemption:.*)?\.?$", re.S)
_SELECTOR_MISS = re.compile(r"^(\d+) node\(s\) didn't match Pod's node affinity/selector$")


@dataclass
class LogTail:
    pod: str
    container: str
    previous: bool
    lines: list[str]


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "cause": self.cause,
            "healthy": self.healthy,
            "conditions": self.conditions,
            "pods": self.pods,
            "events": self.events,
            "log": None
            if self.log is None
            else {
                "pod": self.log.pod,
                "container": self.log.container,
                "previous": self.log.previous,
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
        if self.events:
            out.append(f"Events (latest {len(self.events)}):")
            out += [f"  {line}" for line in self.events]
        if self.log is not None:
            which = "previous run" if self.log.previous else "current run"
            out.append(
                f"Log of pod/{self.log.pod} container {self.log.container}"
                f" ({which}, last {len(self.log.lines)} lines):"
            )
            out += [f"  {line}" for line in self.log.lines]
        return "\n".join(out) + "\n"


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    found = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    return [c for c in found if isinstance(c, dict)]


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", "?"))


def _limit(pod: dict[str, Any], container: str, resource: str) -> str | None:
    spec = pod.get("spec") or {}
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if c.get("name") == container:
            value = ((c.get("resources") or {}).get("limits") or {}).get(resource)
            return str(value) if value is not None else None
    return None


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
    return f"{first.split('. preemption:')[0].rstrip('.')} (pod {_name(pod)})"


def _pod_cause(pod: dict[str, Any]) -> tuple[str, str | None, bool] | None:
    """(cause, container whose log tells more, whether that log is of the previous run)."""
    name = _name(pod)
    status = pod.get("status") or {}
    if status.get("reason") == "Evicted":
        return (
            f"Evicted: pod {name}: {status.get('message', 'evicted by the kubelet')}",
            None,
            False,
        )
    for c in _containers(pod):
        state, last = c.get("state") or {}, c.get("lastState") or {}
        running = "running" in state
        for term, previous in ((state.get("terminated"), False), (last.get("terminated"), True)):
            if term and term.get("reason") == "OOMKilled" and not running:
                limit = _limit(pod, str(c.get("name")), "memory")
                within = f" (memory limit {limit})" if limit else ""
                return (
                    f"OOMKilled: container {c.get('name')} of pod {name} ran out of memory"
                    f"{within}, exit code {term.get('exitCode', 137)}; raise its memory or"
                    " lower the batch size",
                    str(c.get("name")),
                    previous,
                )
        waiting = state.get("waiting") or {}
        if waiting.get("reason") in _IMAGE_PULL:
            return (
                f"{waiting['reason']}: pod {name} cannot pull image {c.get('image', '?')}:"
                f" {waiting.get('message', '')}".rstrip(": "),
                None,
                False,
            )
        if waiting.get("reason") == "CrashLoopBackOff":
            term = last.get("terminated") or {}
            return (
                f"CrashLoopBackOff: container {c.get('name')} of pod {name} keeps exiting"
                f" (restarts {c.get('restartCount', 0)}, last exit code"
                f" {term.get('exitCode', '?')} {term.get('reason', '')})".replace(" )", ")"),
                str(c.get("name")),
                True,
            )
        term = state.get("terminated") or {}
        if term and int(term.get("exitCode") or 0) != 0:
            return (
                f"{term.get('reason') or 'Error'}: container {c.get('name')} of pod {name}"
                f" exited with code {term.get('exitCode')}",
                str(c.get("name")),
                False,
            )
    if status.get("phase") == "Pending":
        for cond in status.get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                return (
                    f"Pending: {scheduler_summary(str(cond.get('message', '')), pod)}",
                    None,
                    False,
                )
    return None


def _pod_line(pod: dict[str, Any]) -> str:
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


def _event_line(event: dict[str, Any]) -> str:
    when = (
        event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp") or "-"
    )
    obj = event.get("involvedObject") or {}
    count = f" (x{event['count']})" if int(event.get("count") or 1) > 1 else ""
    return (
        f"{when}  {event.get('type', '')}  {event.get('reason', '')}"
        f"  {str(obj.get('kind', '')).lower()}/{obj.get('name', '')}:"
        f" {str(event.get('message', '')).strip()}{count}"
    )


def _find(
    client: Client, profile: ClusterProfile, name: str, built: list[Manifest]
) -> tuple[Resource, str, Manifest | None]:
    """The job's served kind and namespace: from what Git builds, else searched live."""
    for m in built:
        if kinds.is_training(m.api_version, m.kind) and m.name == name:
            return client.require(m.api_version, m.kind), m.namespace or "default", m
    served = served_training_kinds(client)
    for ns in profile.namespaces:
        for resource in served:
            if client.get(resource, ns, name) is not None:
                return resource, ns, None
    known = sorted({m.name or "" for m in built if kinds.is_training(m.api_version, m.kind)})
    raise ClusterError(
        f"no training job {name!r} for cluster {profile.name}: Git builds none by that name"
        f" ({', '.join(known) or 'none'}) and namespaces {', '.join(profile.namespaces)}"
        f" on {client.where} have none"
    )


def explain(
    client: Client,
    profile: ClusterProfile,
    name: str,
    built: list[Manifest],
    tail_lines: int = DEFAULT_TAIL_LINES,
) -> Explanation:
    resource, ns, desired = _find(client, profile, name, built)
    require_namespaces(client, [ns], profile)
    title = f"{resource.kind} {ns}/{name} on cluster {profile.name}"
    job = client.get(resource, ns, name)
    if job is None:
        where = f" ({desired.file})" if desired is not None and desired.file else ""
        return Explanation(
            cause=f"NotDeployed: {resource.kind} {ns}/{name} is in Git{where} but not on the"
            " cluster: Argo CD / Flux has not synced it yet, or it was deleted",
            healthy=False,
            job=title,
        )
    pods = client.list(client.require(*kinds.POD), ns, f"{kinds.JOB_NAME_LABEL}={name}")
    pods.sort(key=_name)
    workloads, podgroups = scheduler_objects(client, profile, ns)
    uid = (job.get("metadata") or {}).get("uid")
    workload = next((w for w in workloads if kinds.owned_by(w, uid)), None)
    podgroup = next((p for p in podgroups if kinds.owned_by(p, uid) or _name(p) == name), None)
    involved = {name, *(_name(p) for p in pods)} | {
        _name(o) for o in (workload, podgroup) if o is not None
    }
    events = [
        e
        for e in client.list(client.require(*kinds.EVENT), ns)
        if str((e.get("involvedObject") or {}).get("name")) in involved
    ]
    events.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
    result = Explanation(
        cause="",
        healthy=False,
        job=title,
        conditions=kinds.conditions(job),
        pods=[_pod_line(p) for p in pods],
        events=[_event_line(e) for e in events[-MAX_EVENTS:]],
    )
    phase = kinds.phase(job)
    if phase in {"Succeeded", "Complete"}:
        cond = kinds.condition(job, phase) or {}
        result.cause, result.healthy = f"{phase}: {cond.get('message', 'the job finished')}", True
        return result
    for pod in pods:
        found = _pod_cause(pod)
        if found is not None:
            result.cause, container, previous = found
            if container is not None:
                text = client.logs(ns, _name(pod), container, previous, tail_lines)
                if text:
                    lines = text.rstrip("\n").splitlines()[-tail_lines:]
                    result.log = LogTail(_name(pod), container, previous, lines)
            return result
    if workload is not None and not _true(workload, "Admitted"):
        reserved = kinds.condition(workload, "QuotaReserved")
        admitted = kinds.condition(workload, "Admitted")
        why = (reserved or admitted or {}).get("message") or "waiting in its queue"
        result.cause = f"Queued: Kueue has not admitted Workload {_name(workload)}: {why}"
        return result
    if podgroup is not None and (podgroup.get("status") or {}).get("phase") not in {
        "Running",
        "Completed",
    }:
        pg_status = podgroup.get("status") or {}
        conds = [c for c in pg_status.get("conditions") or [] if c.get("status") == "True"]
        why = conds[-1].get("message") if conds else "waiting for all its pods to fit"
        result.cause = (
            f"Pending: Volcano PodGroup {_name(podgroup)} is"
            f" {pg_status.get('phase', 'Pending')}: {why}"
        )
        return result
    cond = kinds.condition(job, phase) or {}
    message = cond.get("message") or ""
    if phase == "Running":
        running = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
        result.cause, result.healthy = f"Running: {running}/{len(pods)} pods running", True
    elif phase == "Failed":
        result.cause = f"Failed: {message or 'the job failed'}"
    else:
        result.cause = f"{phase}: {message or 'no pod has started yet'}"
    return result


def _true(obj: dict[str, Any], kind: str) -> bool:
    cond = kinds.condition(obj, kind)
    return cond is not None and cond.get("status") == "True"
