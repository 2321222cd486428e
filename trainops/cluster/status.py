"""`trainops status`: every training job on a cluster, and every job of Git for it.

Per live job: its phase (latest True condition), replicas per type (active /
succeeded / failed), container restarts of its pods, GPUs it asks for, age, Kueue
admission (its Workload) or Volcano PodGroup phase where the cluster profile uses
them, and whether Git builds it and with the same spec. For a running job, its pods'
current logs are read (running.py): `Hung` when they show no progress, and a finding when
NCCL runs over TCP sockets on an RDMA cluster. Per job of Git that the
cluster lacks: a row that says so.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from trainops.cluster import causes, compare, kinds, running
from trainops.cluster.client import Client, Resource
from trainops.cluster.errors import ClusterError
from trainops.cluster.evidence import scheduler_summary
from trainops.cluster.hang import DEFAULT_STALL_SECONDS
from trainops.core.manifest import Manifest
from trainops.core.text import one_line
from trainops.facts import gpus as gpu_facts
from trainops.jobspec.model import ClusterProfile

IN_SYNC, DIFFERS, NOT_IN_GIT, MISSING = "in sync", "differs", "not in Git", "missing"


@dataclass(frozen=True)
class Replicas:
    active: int = 0
    succeeded: int = 0
    failed: int = 0

    def __str__(self) -> str:
        return f"{self.active}/{self.succeeded}/{self.failed}"


@dataclass
class JobStatus:
    """One row of `trainops status`."""

    namespace: str
    name: str
    kind: str
    phase: str
    """Latest True condition; `-` for a job of Git the cluster does not have."""
    git: str
    """`in sync`, `differs` (spec differs from what Git builds), `not in Git`, `missing`."""
    replicas: dict[str, Replicas] = field(default_factory=dict)
    restarts: int = 0
    gpus: int = 0
    created: str | None = None
    age_seconds: int | None = None
    queue: str | None = None
    """`kueue: Admitted`, `volcano: Running`, ...; None where the cluster uses neither."""
    file: str | None = None
    """The repository file Git builds it from."""
    findings: list[str] = field(default_factory=list)
    """What the running pods' logs say beyond the phase: a hang, NCCL on TCP sockets on an
    RDMA cluster, a log that could not be read."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "name": self.name,
            "kind": self.kind,
            "phase": self.phase,
            "replicas": {
                k: {"active": v.active, "succeeded": v.succeeded, "failed": v.failed}
                for k, v in sorted(self.replicas.items())
            },
            "restarts": self.restarts,
            "gpus": self.gpus,
            "created": self.created,
            "ageSeconds": self.age_seconds,
            "queue": self.queue,
            "git": self.git,
            "file": self.file,
            "findings": self.findings,
        }


def require_namespaces(client: Client, namespaces: Iterable[str], profile: ClusterProfile) -> None:
    """Fail with one line when a namespace the job needs is not on the cluster.

    Listing in a namespace that does not exist answers an empty list, which would read as
    "no jobs"; a user allowed only inside namespaces may not get namespace objects, and
    then we cannot tell (and do not fail).
    """
    for ns in sorted(set(namespaces)):
        if client.namespace_exists(ns) is False:
            raise ClusterError(
                f"namespace {ns!r} does not exist on cluster {profile.name} at {client.where};"
                f" create it (`kubectl create namespace {ns}`) or remove it from"
                f" {profile.file}"
            )


def served_training_kinds(client: Client) -> list[Resource]:
    """The training kinds this cluster serves; none at all is an error naming the CRDs."""
    served = [r for av, k in kinds.TRAINING_KINDS if (r := client.resource(av, k)) is not None]
    if not served:
        names = ", ".join(dict.fromkeys(k for _, k in kinds.TRAINING_KINDS))
        raise ClusterError(
            f"{client.where} serves none of the training kinds ({names}): the Kubeflow Training"
            " Operator's CRDs are not installed"
        )
    return served


def _age(created: str | None, now: dt.datetime) -> int | None:
    if not created:
        return None
    try:
        when = dt.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0, int((now - when).total_seconds()))


def _replicas(job: dict[str, Any]) -> dict[str, Replicas]:
    status = job.get("status") or {}
    out: dict[str, Replicas] = {}
    for name, counts in (status.get("replicaStatuses") or {}).items():
        if isinstance(counts, dict):
            out[str(name)] = Replicas(
                int(counts.get("active") or 0),
                int(counts.get("succeeded") or 0),
                int(counts.get("failed") or 0),
            )
    for entry in status.get("jobsStatus") or []:  # TrainJob: one entry per replicated job
        if isinstance(entry, dict) and entry.get("name"):
            out[str(entry["name"])] = Replicas(
                int(entry.get("active") or 0),
                int(entry.get("succeeded") or 0),
                int(entry.get("failed") or 0),
            )
    return out


def job_gpus(job: dict[str, Any], profile: ClusterProfile) -> int:
    """GPUs the job asks for in all: replicas x GPUs per pod (TrainJob: nodes x per node)."""
    return gpu_facts.job_gpus(job, {g.resource for g in profile.gpus})


def restarts(pods: Iterable[dict[str, Any]]) -> int:
    total = 0
    for pod in pods:
        status = pod.get("status") or {}
        for c in (status.get("containerStatuses") or []) + (
            status.get("initContainerStatuses") or []
        ):
            total += int(c.get("restartCount") or 0)
    return total


def pods_by_job(pods: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        job = labels.get(kinds.JOB_NAME_LABEL) or labels.get(kinds.JOBSET_NAME_LABEL)
        if job:
            out.setdefault(str(job), []).append(pod)
    return out


def queue_state(
    job: dict[str, Any],
    workloads: list[dict[str, Any]],
    podgroups: list[dict[str, Any]],
    scheduler: str = "default",
) -> str | None:
    """Kueue admission (from the job's Workload) or the Volcano PodGroup phase; on a
    cluster whose profile names Kueue or Volcano, their absence is said too (the queue
    label or schedulerName did not reach them, or they are not installed)."""
    meta = job.get("metadata") or {}
    uid = meta.get("uid")
    for wl in workloads:
        if kinds.owned_by(wl, uid):
            for state in ("Finished", "Evicted", "Admitted", "QuotaReserved"):
                cond = kinds.condition(wl, state)
                if cond is not None and cond.get("status") == "True":
                    return f"kueue: {state}"
            return "kueue: Pending"
    for pg in podgroups:
        if kinds.owned_by(pg, uid) or (pg.get("metadata") or {}).get("name") == meta.get("name"):
            return f"volcano: {(pg.get('status') or {}).get('phase') or 'Pending'}"
    if scheduler == "kueue":
        return "kueue: no Workload"
    if scheduler == "volcano":
        return "volcano: no PodGroup"
    return None


def scheduler_objects(
    client: Client, profile: ClusterProfile, namespace: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Kueue Workloads and Volcano PodGroups in `namespace`, where the profile uses them."""
    workloads: list[dict[str, Any]] = []
    podgroups: list[dict[str, Any]] = []
    if profile.scheduler.kind == "kueue":
        res = client.resource(*kinds.KUEUE_WORKLOAD)
        workloads = client.list(res, namespace) if res else []
    if profile.scheduler.kind == "volcano":
        res = client.resource(*kinds.VOLCANO_PODGROUP)
        podgroups = client.list(res, namespace) if res else []
    return workloads, podgroups


def _running_findings(
    client: Client,
    profile: ClusterProfile,
    ns: str,
    pods: list[dict[str, Any]],
    when: tuple[dt.datetime, int],
) -> tuple[bool, list[str]]:
    """(hung, findings) from the current logs of a running job's pods (running.py)."""
    logs = running.Logs(client, ns)
    now, stall_seconds = when
    stuck = running.stalled(pods, logs, now, stall_seconds)
    findings = [stuck.cause] if stuck is not None else []
    fallback = running.socket_fallback(running.transports(logs), profile)
    findings += [fallback] if fallback is not None else []
    return stuck is not None, findings + [f"could not read {line}" for line in logs.unread]


def pod_finding(name: str, pods: list[dict[str, Any]], phase: str, cluster: str) -> list[str]:
    """The first failure its pods show (causes.py, as `explain` ranks them, without the
    logs), for a job that has not finished: the row's phase is the operator's, this is why."""
    if phase in {"Succeeded", "Complete"}:
        return []
    found = [c for p in pods for c in causes.pod_causes(p, scheduler_summary)]
    ranked = causes.rank(found, phase in {"Running", "Hung"})
    if not ranked:
        return []
    more = f" (and {len(ranked) - 1} more)" if len(ranked) > 1 else ""
    return [f"{ranked[0].text}{more}; trainops explain {name} --cluster {cluster}"]


def collect(
    client: Client,
    profile: ClusterProfile,
    built: list[Manifest],
    now: dt.datetime,
    stall_seconds: int = DEFAULT_STALL_SECONDS,
) -> list[JobStatus]:
    """Every training job on the cluster in the profile's namespaces, and every job Git
    builds for it, sorted by namespace, name and kind. A running job whose logs show no
    progress is `Hung`."""
    wanted = {
        (m.kind, m.namespace or "", m.name or ""): m
        for m in built
        if kinds.is_training(m.api_version, m.kind)
    }
    namespaces = sorted(set(profile.namespaces) | {ns for _, ns, _ in wanted})
    require_namespaces(client, namespaces, profile)
    served = served_training_kinds(client)
    pod_resource = client.require(*kinds.POD)
    rows: list[JobStatus] = []
    seen: set[tuple[str, str, str]] = set()
    for ns in namespaces:
        jobs = [(r, j) for r in served for j in client.list(r, ns)]
        if not jobs:
            continue
        listed = client.list(pod_resource, ns, kinds.JOB_NAME_LABEL)
        if any(r.kind == "TrainJob" for r, _ in jobs):  # a JobSet's pods carry its label
            listed += client.list(pod_resource, ns, kinds.JOBSET_NAME_LABEL)
        pods = pods_by_job(listed)
        workloads, podgroups = scheduler_objects(client, profile, ns)
        for resource, job in jobs:
            meta = job.get("metadata") or {}
            key = (resource.kind, ns, str(meta.get("name")))
            seen.add(key)
            desired = wanted.get(key)
            git = NOT_IN_GIT
            if desired is not None:
                git = DIFFERS if compare.differs(desired.data, job) else IN_SYNC
            phase, findings = kinds.phase(job), list[str]()
            if phase == "Running" and pods.get(key[2]):
                hung, findings = _running_findings(
                    client, profile, ns, pods[key[2]], (now, stall_seconds)
                )
                phase = "Hung" if hung else phase
            why = pod_finding(key[2], pods.get(key[2], []), phase, profile.name)
            findings = why + findings
            rows.append(
                JobStatus(
                    namespace=ns,
                    name=key[2],
                    kind=resource.kind,
                    phase=phase,
                    git=git,
                    replicas=_replicas(job),
                    restarts=restarts(pods.get(key[2], [])),
                    gpus=job_gpus(job, profile),
                    created=meta.get("creationTimestamp"),
                    age_seconds=_age(meta.get("creationTimestamp"), now),
                    queue=queue_state(job, workloads, podgroups, profile.scheduler.kind),
                    file=desired.file if desired is not None else None,
                    findings=findings,
                )
            )
    for key, m in wanted.items():
        if key not in seen:
            rows.append(
                JobStatus(
                    namespace=key[1],
                    name=key[2],
                    kind=key[0],
                    phase="-",
                    git=MISSING,
                    gpus=job_gpus(m.data, profile),
                    file=m.file,
                )
            )
    rows.sort(key=lambda r: (r.namespace, r.name, r.kind))
    return rows


def age_text(seconds: int | None) -> str:
    """kubectl's short age: 45s, 12m, 5h, 3d."""
    if seconds is None:
        return "-"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def table(rows: list[JobStatus]) -> str:
    """The rows as an aligned text table (for a terminal)."""
    header = ("NAMESPACE", "NAME", "KIND", "PHASE", "REPLICAS (A/S/F)", "RESTARTS", "GPUS",
              "AGE", "QUEUE", "GIT")  # fmt: skip
    body = [
        tuple(  # names from the cluster: inert, one line
            one_line(cell)
            for cell in (
                r.namespace,
                r.name,
                r.kind,
                r.phase,
                " ".join(f"{t}={c}" for t, c in sorted(r.replicas.items())) or "-",
                str(r.restarts),
                str(r.gpus),
                age_text(r.age_seconds),
                r.queue or "-",
                r.git,
            )
        )
        for r in rows
    ]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, *body]]  # fmt: skip
    notes = [one_line(f"{r.namespace}/{r.name}: {f}") for r in rows for f in r.findings]
    return "\n".join([*lines, *(["", *notes] if notes else [])]) + "\n"
