"""`trainops explain JOB`: why a job is not running, or why it failed, in one line first.

Reads the job's conditions, all its pods (Pending with the scheduler's reason, image
pulls, OOMKilled, CrashLoopBackOff, evictions, preemption, lost nodes), Kueue's Workload or
Volcano's PodGroup, the events (which outlive pods that `cleanPodPolicy` deleted) and the
failing containers' logs. The causes of all pods are ranked (causes.py) so that the first
failure is named, not the peers that failed after it; a torchrun log shows the failing
child's traceback (logs.py); a running job whose trainer makes no progress is Hung
(hang.py); on an RDMA cluster, NCCL falling back to TCP sockets is a finding (nccl_log.py).
What could not be read (a log without `pods/log` permission) is said, and the diagnosis
found without it stands.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace
from typing import Any

from trainops.cluster import causes as causes_mod
from trainops.cluster import hang, kinds, kueue, nccl_log, running
from trainops.cluster.answer import DIED_OF, LAST, Explanation, LogTail
from trainops.cluster.causes import Cause
from trainops.cluster.client import Client, Resource
from trainops.cluster.errors import ClusterError
from trainops.cluster.evidence import event_line, pod_line, scheduler_note, scheduler_summary
from trainops.cluster.logs import (
    CHILD_FAILED,
    Log,
    died_of,
    exception_of,
    first_failure,
    last_traceback,
    root_cause,
)
from trainops.cluster.running import Logs
from trainops.cluster.status import require_namespaces, scheduler_objects, served_training_kinds
from trainops.core.manifest import Manifest
from trainops.jobspec.model import ClusterProfile

DEFAULT_TAIL_LINES = 20
MAX_EVENTS = 10


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", "?"))


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


@dataclass
class _Seen:
    """What the cluster shows of one job."""

    job: dict[str, Any]
    pods: list[dict[str, Any]]
    events: list[dict[str, Any]]
    workload: dict[str, Any] | None
    podgroup: dict[str, Any] | None
    logs: Logs


def _pods(client: Client, resource: Resource, ns: str, name: str) -> list[dict[str, Any]]:
    """The job's pods: the Training Operator's label, or for a TrainJob the JobSet's."""
    label = kinds.JOBSET_NAME_LABEL if resource.kind == "TrainJob" else kinds.JOB_NAME_LABEL
    pods = client.list(client.require(*kinds.POD), ns, f"{label}={name}")
    return sorted(pods, key=_name)


def _events(
    client: Client, ns: str, name: str, involved: set[str], unread: list[str]
) -> list[dict[str, Any]]:
    """Events of the job, its pods (also those already deleted: `<job>-...`) and its
    Workload or PodGroup, oldest first."""
    try:
        listed = client.list(client.require(*kinds.EVENT), ns)
    except ClusterError as err:
        unread.append(f"events: {err}")
        return []
    out = []
    for e in listed:
        obj = e.get("involvedObject") or {}
        who = str(obj.get("name"))
        if who in involved or (obj.get("kind") == "Pod" and who.startswith(f"{name}-")):
            out.append(e)
    return sorted(out, key=causes_mod.event_time)


def _checked(c: Cause, logs: Logs) -> Cause:
    """An exit whose log ends in a collective error follows the peer it lost; a trainer's
    watchdog line in its log says the rank had hung before it exited."""
    log = logs.get(c.pod, c.container, c.previous) if c.pod and c.container else None
    if log is None or c.nature != causes_mod.EXITED:
        return c
    watchdog = [line for line in log.lines if hang.WATCHDOG_PREFIX in line]
    if watchdog:
        return replace(c, text=f"Hung: {watchdog[-1].strip()} (pod {c.pod}); {c.text}")
    # What the program died of decides: a torchrun log also holds the local peers' collective
    # errors that followed its failing child.
    return c.following() if nccl_log.peer_gone(died_of(log.lines)) else c


def _gone(c: Cause, live: dict[str, dict[str, Any]]) -> bool:
    """Whether an event's cause is about a pod no longer there: deleted, or replaced by one
    of the same name (the Training Operator deletes a failed or evicted pod and creates it
    again under its name): the event names another uid, or came before the pod was created."""
    meta = live.get(c.pod or "")
    if c.pod is None or meta is None:
        return True
    if c.uid and meta.get("uid"):
        return c.uid != meta.get("uid")
    created = str(meta.get("creationTimestamp") or "")
    return bool(c.when and created and c.when < created)


def _ranked(seen: _Seen, job_running: bool) -> list[Cause]:
    """Every cause the pods, the events and Kueue show, first failure first. While the job
    runs, what only the events or Kueue's conditions remember (an eviction, a preemption,
    pods long deleted) is history, not the cause of what its pods do now."""
    live = {_name(p): p.get("metadata") or {} for p in seen.pods}
    found = [
        c
        for p in seen.pods
        for c in causes_mod.pod_causes(p, scheduler_summary)
        or causes_mod.startup_causes(p, seen.events)
    ]
    if not job_running:
        evicted = kueue.workload_cause(seen.workload) if seen.workload else None
        if evicted is not None:  # Kueue's condition says it better than its event
            found.append(evicted)
        found += [
            c
            for c in causes_mod.event_causes(seen.events)
            if _gone(c, live)
            and not (evicted is not None and c.text.startswith(causes_mod.KUEUE_EVICTED))
        ]
    return causes_mod.rank([_checked(c, seen.logs) for c in found], job_running)


def _show_log(log: Log, tail_lines: int) -> LogTail:
    """The failing torchrun child's traceback chain, else the traceback the program died of,
    else the last lines."""
    child = first_failure(log.lines)
    if child is not None:
        what = "first traceback of the failing child"
        return LogTail(log.pod, log.container, log.previous, child, what)
    chain = last_traceback(log.lines)
    if chain is not None:
        return LogTail(log.pod, log.container, log.previous, chain, DIED_OF)
    return LogTail(log.pod, log.container, log.previous, log.lines[-tail_lines:])


def _death(log: Log, shown: LogTail) -> tuple[str, str | None]:
    """What the log says killed the container: (` raised <exception>` words for the first
    line or "", torchrun's root cause line or None)."""
    root = root_cause(log.lines) if any(CHILD_FAILED in line for line in log.lines) else None
    words = ""
    if shown.what != LAST and shown.lines:
        who = f"rank {root.rank}" if root is not None and root.rank is not None else "it"
        words = f"; {who} raised {exception_of(shown.lines)}"
    elif root is not None and root.killed:
        words = f"; {root.text()}"
    return words, (root.text() if root is not None else None)


def explain(
    client: Client,
    profile: ClusterProfile,
    name: str,
    built: list[Manifest],
    *,
    tail_lines: int = DEFAULT_TAIL_LINES,
    now: dt.datetime | None = None,
    stall_seconds: int = hang.DEFAULT_STALL_SECONDS,
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
    pods = _pods(client, resource, ns, name)
    workloads, podgroups = scheduler_objects(client, profile, ns)
    uid = (job.get("metadata") or {}).get("uid")
    workload = next((w for w in workloads if kinds.owned_by(w, uid)), None)
    podgroup = next((p for p in podgroups if kinds.owned_by(p, uid) or _name(p) == name), None)
    involved = {name, *(_name(p) for p in pods)} | {
        _name(o) for o in (workload, podgroup) if o is not None
    }
    logs = Logs(client, ns)
    events = _events(client, ns, name, involved, logs.unread)
    seen = _Seen(job, pods, events, workload, podgroup, logs)
    result = Explanation(
        cause="",
        healthy=False,
        job=title,
        conditions=kinds.conditions(job),
        pods=[pod_line(p) for p in pods],
        events=[event_line(e) for e in events[-MAX_EVENTS:]],
        unread=logs.unread,
    )
    phase = kinds.phase(job)
    if phase in {"Succeeded", "Complete"}:
        cond = kinds.condition(job, phase) or {}
        result.cause, result.healthy = f"{phase}: {cond.get('message', 'the job finished')}", True
        # The operator's success policy may end a job on its master while a worker failed.
        result.findings += [
            f"failed before the job finished: {c.text}"
            for p in pods
            for c in causes_mod.pod_causes(p, scheduler_summary)
        ]
        return result
    ranked = _ranked(seen, phase == "Running")
    if ranked:
        _name_first(result, ranked, seen, tail_lines)
    elif not _queued(result, seen):
        stuck = None
        if phase == "Running":
            now = now or dt.datetime.now(dt.UTC)
            stuck = running.stalled(seen.pods, logs, now, stall_seconds)
        if stuck is not None:
            result.cause = stuck.cause
            result.findings += stuck.evidence
        else:
            _by_phase(result, seen, phase)
    _transports(result, profile, logs)
    return result


def _name_first(result: Explanation, ranked: list[Cause], seen: _Seen, tail_lines: int) -> None:
    first = ranked[0]
    result.cause = first.text
    if first.nature == causes_mod.UNSCHEDULABLE and first.pod:
        result.cause += scheduler_note(seen.events, {first.pod})
    if not seen.pods and first.pod is not None:
        policy = ((seen.job.get("spec") or {}).get("runPolicy") or {}).get("cleanPodPolicy")
        why = f" (runPolicy.cleanPodPolicy: {policy})" if policy else ""
        result.cause += f"; the pods are gone{why}: this is from the events"
    result.findings += [f"then: {c.text}" for c in ranked[1:]]
    if first.pod and first.container:
        log = seen.logs.get(first.pod, first.container, first.previous)
        if log is not None:
            result.log = _show_log(log, tail_lines)
            words, root = _death(log, result.log)
            if first.nature == causes_mod.EXITED:
                result.cause += words
            if root is not None:
                result.findings.insert(0, root)


def _queued(result: Explanation, seen: _Seen) -> bool:
    """Kueue has not admitted the job, or Volcano cannot gang-schedule it."""
    workload, podgroup = seen.workload, seen.podgroup
    if workload is not None and not _true(workload, "Admitted"):
        why = kueue.kueue_waiting(workload)
        note = scheduler_note(seen.events, {_name(workload)})
        result.cause = f"Queued: Kueue has not admitted Workload {_name(workload)}: {why}{note}"
        return True
    pg_status = (podgroup or {}).get("status") or {}
    if podgroup is not None and pg_status.get("phase") not in {"Running", "Completed"}:
        conds = [c for c in pg_status.get("conditions") or [] if c.get("status") == "True"]
        why = conds[-1].get("message") if conds else "waiting for all its pods to fit"
        if pg_status.get("phase") == "Unknown":  # volcano pkg/scheduler/framework/session.go
            why = (
                f"{pg_status.get('running', 0)} of its pods run but the rest of the gang cannot"
                f" be scheduled: {why}"
            )
        note = scheduler_note(seen.events, {_name(podgroup)})
        result.cause = (
            f"Pending: Volcano PodGroup {_name(podgroup)} is"
            f" {pg_status.get('phase', 'Pending')}: {why}{note}"
        )
        return True
    return False


def _by_phase(result: Explanation, seen: _Seen, phase: str) -> None:
    """No pod, queue or hang says more: the job's own condition."""
    message = (kinds.condition(seen.job, phase) or {}).get("message") or ""
    if phase == "Running":
        up = sum(1 for p in seen.pods if (p.get("status") or {}).get("phase") == "Running")
        result.cause, result.healthy = f"Running: {up}/{len(seen.pods)} pods running", True
    elif phase == "Failed":
        result.cause = f"Failed: {message or 'the job failed'}{_limit_set(seen.job, message)}"
    elif phase == "Suspended":
        result.cause = (
            f"Suspended: {message or 'the job is suspended'}; its suspend field is true and"
            " the operator deleted its pods: Kueue resumes it when it admits its Workload,"
            " else set the field to false"
        )
    elif phase == "Unknown" and not seen.pods:
        kind, api = str(seen.job.get("kind")), str(seen.job.get("apiVersion"))
        result.cause = (
            f"NotReconciled: the {kind} has no status and no pods: {kinds.provider(api)} has"
            f" not taken it up; is its controller running, and does it serve {kind} (the"
            " Training Operator's --enable-scheme)? `trainops doctor` checks both"
        )
    else:
        said, starting = message or "no pod has started yet", _starting(seen.pods)
        result.cause = f"{phase}: {said.rstrip('.') if starting else said}{starting}"


def _starting(pods: list[dict[str, Any]]) -> str:
    """`; pod <p> is still ContainerCreating since <t> ...` for the longest-waiting pod whose
    kubelet has not started its containers and said nothing more (no event left)."""
    waiting = [
        p
        for p in pods
        if any(
            (c.get("state") or {}).get("waiting", {}).get("reason") == "ContainerCreating"
            for c in causes_mod.containers(p)
        )
    ]
    if not waiting:
        return ""
    first = min(waiting, key=lambda p: str((p.get("status") or {}).get("startTime") or ""))
    since = (first.get("status") or {}).get("startTime") or "?"
    return (
        f"; pod {_name(first)} is still ContainerCreating since {since}: its node pulls the"
        f" image or mounts its volumes (kubectl describe pod {_name(first)})"
    )


def _limit_set(job: dict[str, Any], message: str) -> str:
    """The runPolicy limit the operator's failure message names, with its value
    (kubeflow/training-operator v1.9.0 pkg/controller.v1/common/job.go: "... has failed
    because it was active longer than specified deadline", "... reached the specified
    backoff limit")."""
    policy = (job.get("spec") or {}).get("runPolicy") or {}
    for words, key in (("deadline", "activeDeadlineSeconds"), ("backoff limit", "backoffLimit")):
        if words in message and key in policy:
            return f" (runPolicy.{key}: {policy[key]})"
    return ""


def _transports(result: Explanation, profile: ClusterProfile, logs: Logs) -> None:
    """NCCL's network per pod, from the logs read; TCP on an RDMA cluster is a finding,
    and the first line when nothing else is wrong."""
    found = running.transports(logs)
    result.findings += [f"NCCL network: {t}" for t in found]
    line = running.socket_fallback(found, profile)
    if line is not None:
        result.findings.insert(0, line)
        if result.healthy:
            result.cause, result.healthy = line, False


def _true(obj: dict[str, Any], kind: str) -> bool:
    cond = kinds.condition(obj, kind)
    return cond is not None and cond.get("status") == "True"
