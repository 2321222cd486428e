"""Why a training job's pods failed, ranked so that the first failure is named first.

A distributed job fails as a chain: one rank dies (OOMKilled, evicted, preempted, its node
lost, its image unpullable) and every peer then fails its next collective (NCCL/gloo
errors, torchrun restarts, CrashLoopBackOff). The pod whose name sorts first is rarely the
culprit, so every pod's cause is collected and ranked by its nature, then by when it
happened: what the platform did to a pod (kill, evict, preempt, node loss) comes before a
pod that could not start, which comes before a pod that exited on its own, which comes
before a pod that exited because a peer was gone.

Pod conditions and reasons are the kubelet's and the scheduler's:
https://kubernetes.io/docs/concepts/workloads/pods/disruptions/#pod-disruption-conditions
(`DisruptionTarget` with PreemptionByScheduler, DeletionByTaintManager, EvictionByEvictionAPI,
DeletionByPodGC, TerminationByKubelet) and
https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/ (`Evicted`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from trainops.cluster import kubelet

# Natures, most root-like first.
PLATFORM = 0
"""The platform ended the pod: OOM killer, eviction, preemption, node loss, image pull."""
UNSCHEDULABLE = 1
"""The pod never got a node."""
EXITED = 2
"""The container exited non-zero on its own."""
FOLLOWER = 3
"""The container exited because a peer had gone: its log ends in a collective error."""

_IMAGE_PULL = {"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull"}
KUEUE_EVICTED = "Preempted: Kueue evicted Workload"
# Exit code 137 is 128 + SIGKILL: the kernel's OOM killer, or a kill after the grace period.
SIGKILL_EXIT = 137


@dataclass(frozen=True)
class Cause:
    """One pod's (or the scheduler's) reason, with what ranks it."""

    text: str
    nature: int
    when: str
    """RFC 3339 time it happened ("" when unknown: ranked last within its nature)."""
    pod: str | None = None
    container: str | None = None
    """The container whose log tells more."""
    previous: bool = False
    """Whether that log is of the container's previous run."""
    past: bool = False
    """A termination of a container that has since restarted and runs again."""
    uid: str = ""
    """The uid of the pod an event was about ("" when the event does not say)."""

    def key(self) -> tuple[int, int, str, str]:
        return (self.nature, 0 if self.when else 1, self.when, self.pod or "")

    def following(self) -> Cause:
        """This cause, known (from its log) to follow a peer's failure."""
        return replace(self, nature=max(self.nature, FOLLOWER))


def rank(causes: list[Cause], job_running: bool) -> list[Cause]:
    """Causes first failure first. A past termination of a container that runs again is only
    a cause while something else is wrong too (else the job recovered from it)."""
    if job_running and all(c.past for c in causes):
        return []
    return sorted(causes, key=Cause.key)


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", "?"))


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    status = pod.get("status") or {}
    found = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    return [c for c in found if isinstance(c, dict)]


def _limit(pod: dict[str, Any], container: str, resource: str) -> str | None:
    spec = pod.get("spec") or {}
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if c.get("name") == container:
            value = ((c.get("resources") or {}).get("limits") or {}).get(resource)
            return str(value) if value is not None else None
    return None


def pod_causes(pod: dict[str, Any], summary: Callable[[str, dict[str, Any]], str]) -> list[Cause]:
    """Every cause one pod shows. `summary(message, pod)` words the scheduler's message."""
    name = _name(pod)
    status = pod.get("status") or {}
    node = (pod.get("spec") or {}).get("nodeName") or "?"
    out: list[Cause] = []
    disrupted: dict[str, Any] = next(
        (
            c
            for c in status.get("conditions") or []
            if c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        ),
        {},
    )
    when = str(disrupted.get("lastTransitionTime") or "")
    reason = str(status.get("reason") or "")
    if reason:  # the kubelet's own words: Evicted, UnexpectedAdmissionError, OutOf<resource>...
        message = str(status.get("message", "")).strip() or "ended by the kubelet"
        hint = kubelet.eviction_hint(message) if reason == "Evicted" else ""
        if not hint and (meaning := kubelet.pod_reason_hint(reason)):
            hint = f" ({meaning})"
        text = f"{reason}: pod {name}: {message}{hint}"
        out.append(Cause(text, PLATFORM, when, name))
    elif (template := kubelet.DISRUPTION.get(str(disrupted.get("reason")))) is not None:
        out.append(Cause(template.format(pod=name, node=node), PLATFORM, when, name))
    elif (lost := kubelet.node_not_ready(pod)) is not None:
        out.append(Cause(lost[0], PLATFORM, lost[1], name))
    deleting = (pod.get("metadata") or {}).get("deletionTimestamp")
    if out and deleting and status.get("phase") in {"Running", "Pending"}:
        first = out[0]
        out[0] = replace(first, text=f"{first.text}; {kubelet.stuck(name, str(deleting))}")
    for c in containers(pod):
        # The SIGKILL/SIGTERM of a pod the platform ended is no cause of its own.
        out += _container_causes(pod, c, ended=bool(out))
    if status.get("phase") == "Pending" and not out:
        for cond in status.get("conditions") or []:
            if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
                text = f"Pending: {summary(str(cond.get('message', '')), pod)}"
                if cond.get("reason") == "SchedulingGated":
                    text = f"Pending: {kubelet.gated(pod)}"
                when = str(cond.get("lastTransitionTime") or "")
                out.append(Cause(text, UNSCHEDULABLE, when, name))
    return out


def _started(status: dict[str, Any]) -> str:
    return str(status.get("startTime") or "")


def _container_causes(pod: dict[str, Any], c: dict[str, Any], ended: bool) -> list[Cause]:
    name, cname = _name(pod), str(c.get("name"))
    who = f"init container {cname}" if cname in _init_names(pod) else f"container {cname}"
    state, last = c.get("state") or {}, c.get("lastState") or {}
    running = "running" in state
    out: list[Cause] = []
    for term, previous in ((state.get("terminated"), False), (last.get("terminated"), True)):
        if term and term.get("reason") == "OOMKilled":
            limit = _limit(pod, cname, "memory")
            within = f" (memory limit {limit})" if limit else ""
            text = (
                f"OOMKilled: {who} of pod {name} ran out of memory{within}, exit"
                f" code {term.get('exitCode', SIGKILL_EXIT)}; raise its memory"
                + (" limit" if who.startswith("init") else " or lower the batch size")
            )
            when = str(term.get("finishedAt") or "")
            out.append(Cause(text, PLATFORM, when, name, cname, previous, past=running))
            return out
    waiting = state.get("waiting") or {}
    term = state.get("terminated") or {}
    if waiting.get("reason") in _IMAGE_PULL:
        text = (
            f"{waiting['reason']}: pod {name} cannot pull image {c.get('image', '?')}:"
            f" {waiting.get('message', '')}".rstrip(": ")
        ) + kubelet.image_hint(str(waiting.get("message") or ""))
        out.append(Cause(text, PLATFORM, _started(pod.get("status") or {}), name))
    elif waiting.get("reason") in kubelet.CANNOT_START:
        message = str(waiting.get("message") or "").strip()
        text = (
            f"{waiting['reason']}: the kubelet cannot start {who} of pod {name}: {message}".rstrip(
                ": "
            )
        ) + kubelet.cannot_start_hint(message)
        out.append(Cause(text, PLATFORM, _started(pod.get("status") or {}), name))
    elif term.get("reason") == "ContainerStatusUnknown":
        text = (
            f"ContainerStatusUnknown: the kubelet lost {who} of pod {name}"
            f" ({term.get('message') or 'it could not be located'}): its node restarted or"
            " was unreachable when the pod was deleted; the exit code"
            f" {term.get('exitCode', SIGKILL_EXIT)} is the kubelet's, not the program's"
        )
        out.append(Cause(text, PLATFORM, str(term.get("finishedAt") or ""), name))
    elif waiting.get("reason") == "CrashLoopBackOff":
        term = last.get("terminated") or {}
        code = kubelet.exit_code(term)
        text = (
            f"CrashLoopBackOff: {who} of pod {name} keeps exiting (restarts"
            f" {c.get('restartCount', 0)}, last exit code {term.get('exitCode', '?')}"
            f" {term.get('reason', '')})".replace(" )", ")")
        ) + kubelet.said(term, code)
        out.append(Cause(text, EXITED, str(term.get("finishedAt") or ""), name, cname, True))
    elif (code := kubelet.exit_code(term)) != 0 and not (ended and code in _KILLED):
        text = (
            f"{term.get('reason') or 'Error'}: {who} of pod {name} exited with code {code}"
        ) + kubelet.said(term, code)
        out.append(Cause(text, EXITED, str(term.get("finishedAt") or ""), name, cname))
    elif running and (code := kubelet.exit_code(last.get("terminated") or {})) != 0:
        # A crash loop caught between two runs: the previous run's log says why.
        term = last["terminated"]
        text = (
            f"{term.get('reason') or 'Error'}: {who} of pod {name} exited"
            f" with code {code}{kubelet.exit_meaning(code)} and was restarted (restarts"
            f" {c.get('restartCount', 0)})"
        )
        when = str(term.get("finishedAt") or "")
        out.append(Cause(text, EXITED, when, name, cname, True, past=True))
    return out


# A container's SIGKILL or SIGTERM exit, when the kubelet ended its pod.
_KILLED = {SIGKILL_EXIT, 143}


def _init_names(pod: dict[str, Any]) -> set[str]:
    found = ((pod.get("status") or {}).get("initContainerStatuses") or []) + (
        (pod.get("spec") or {}).get("initContainers") or []
    )
    return {str(c.get("name")) for c in found if isinstance(c, dict)}


_OOM_KILLED = "OOMKilled"
# A pod named in an operator's event message: `Pod: <ns>.<pod>` (Training Operator) or
# `pod <ns>/<pod>` (batch Job, MPI Operator).
_POD_IN_MESSAGE = re.compile(r"\b[Pp]od:? \"?(?:[a-z0-9-]+[./])?([a-z0-9][-a-z0-9.]*[a-z0-9])")


def _pod_named(message: str) -> str | None:
    found = _POD_IN_MESSAGE.search(message)
    return found.group(1) if found else None


# The Training Operator's event on the job for each pod that exits: `Pod: <ns>.<pod> exited
# with code <n>` (reason ExitedWithCode; kubeflow/training-operator
# pkg/controller.v1/common/pod.go, v1.7-v1.9).
_EXITED = re.compile(r"^Pod: (?P<ns>[^.\s]+)\.(?P<pod>\S+) exited with code (?P<code>-?\d+)")


def _series(event: dict[str, Any]) -> dict[str, Any]:
    series = event.get("series")
    return series if isinstance(series, dict) else {}


def event_time(event: dict[str, Any]) -> str:
    """When the event last happened: a series' last observation (events.k8s.io/v1 events,
    which the scheduler writes since Kubernetes 1.19, read as core/v1 keep `eventTime` as the
    first time and `series.lastObservedTime` as the latest), else `lastTimestamp`."""
    series = _series(event)
    return str(
        series.get("lastObservedTime")
        or event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or ""
    )


def event_count(event: dict[str, Any]) -> int:
    """How often it happened: `series.count` (events.k8s.io/v1), else the older `count`."""
    series = _series(event)
    for value in (series.get("count"), event.get("count")):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 1


def event_causes(events: list[dict[str, Any]]) -> list[Cause]:
    """Causes that the events still tell once the pods are gone (the Training Operator's
    `cleanPodPolicy: All` deletes them) or that no pod shows: exits, evictions, preemption
    by Kueue (a Workload event `Preempted`) or by Volcano (a PodGroup event `Evict` with
    reason `preempt` or `reclaim`, volcano pkg/scheduler/cache/cache.go `Evict`)."""
    out: list[Cause] = []
    for e in events:
        reason, message = str(e.get("reason") or ""), str(e.get("message") or "").strip()
        obj = e.get("involvedObject") or {}
        kind, name, when = str(obj.get("kind") or ""), str(obj.get("name") or ""), event_time(e)
        exited = _EXITED.match(message) if reason == "ExitedWithCode" else None
        if exited is not None and int(exited["code"]) != 0:
            code = int(exited["code"])
            why = (
                " (SIGKILL: the kernel's OOM killer, or a kill after the grace period)"
                if code == SIGKILL_EXIT
                else kubelet.exit_meaning(code)
            )
            text = f"Exited: pod {exited['pod']} exited with code {code}{why}"
            nature = PLATFORM if code == SIGKILL_EXIT else EXITED
            out.append(Cause(text, nature, when, exited["pod"]))
        elif kubelet.create_failed(reason, message):
            text = (
                f"FailedCreate: {kind.lower()}/{name} cannot create its pods: {message}"
                + kubelet.create_hint(message)
            )
            out.append(Cause(text, UNSCHEDULABLE, when, None))
        elif kind == "Pod" and reason in {"Evicted", "Preempted", "OOMKilling"}:
            text = f"{reason}: pod {name}: {message}{kubelet.eviction_hint(message)}"
            out.append(Cause(text, PLATFORM, when, name, uid=str(obj.get("uid") or "")))
        elif _OOM_KILLED in message:  # an operator's or controller's words for a pod it saw
            pod = _pod_named(message) or (name if kind == "Pod" else None)
            who = f"pod {pod}" if pod else f"{kind.lower()}/{name}"
            text = f"OOMKilled: {who} ran out of memory ({reason}: {message})"
            out.append(Cause(text, PLATFORM, when, pod))
        elif kind == "Workload" and reason in {"Preempted", "Evicted"}:
            out.append(Cause(f"{KUEUE_EVICTED} {name}: {message}", PLATFORM, when, None))
        elif kind == "PodGroup" and reason == "Evict":
            text = f"Preempted: Volcano evicted pods of PodGroup {name} ({message or 'evict'})"
            out.append(Cause(text, PLATFORM, when, None))
    return out


def startup_causes(pod: dict[str, Any], events: list[dict[str, Any]]) -> list[Cause]:
    """A pod with a node that cannot start, from the events about it: a volume that cannot
    be attached or mounted, a network the CNI cannot set up (its containers only say
    ContainerCreating)."""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    if status.get("phase") != "Pending":
        return []
    said: dict[str, dict[str, Any]] = {}
    for e in events:
        obj = e.get("involvedObject") or {}
        if (
            obj.get("kind") == "Pod"
            and obj.get("name") == meta.get("name")
            and obj.get("uid") in {None, "", meta.get("uid")}
            and e.get("reason") in kubelet.STARTUP_EVENTS
        ):
            said[str(e.get("reason"))] = e  # events come oldest first: the latest stays
    out = []
    for reason, e in sorted(said.items()):
        message = " ".join(str(e.get("message") or "").split())
        text = (
            f"{reason}: pod {_name(pod)} cannot start: {message[:400]}"
            f"{kubelet.startup_hint(reason, message)} ({reason} x{event_count(e)}, last"
            f" {event_time(e)})"
        )
        out.append(Cause(text, PLATFORM, event_time(e), _name(pod)))
    return out
