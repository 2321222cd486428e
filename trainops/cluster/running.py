"""What the current logs of a running job's pods say that its phase does not: a hang, and
the network NCCL chose on each pod (TCP sockets on an RDMA cluster is a finding).

Shared by `explain` (one job) and `status` (each running job): one log read per running
pod (its first container, the kubelet's timestamps on), at most MAX_LOG_READS per job.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from trainops.cluster import hang, nccl_log
from trainops.cluster.client import Client
from trainops.cluster.errors import ClusterError
from trainops.cluster.logs import Log, read
from trainops.facts.monitoring import METRICS_PORT_NAME
from trainops.jobspec.model import ClusterProfile

# Logs (and metrics endpoints) read per job: one request each, so bounded.
MAX_LOG_READS = 16


@dataclass
class Logs:
    """Each container log of one namespace read at most once, at most MAX_LOG_READS."""

    client: Client
    namespace: str
    read: dict[tuple[str, str, bool], Log | None] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)

    def get(self, pod: str, container: str, previous: bool) -> Log | None:
        key = (pod, container, previous)
        if key not in self.read:
            if len(self.read) >= MAX_LOG_READS:
                return None
            self.read[key] = read(
                self.client, self.namespace, pod, container, previous, unread=self.unread
            )
        return self.read[key]


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", "?"))


def _main_container(pod: dict[str, Any]) -> str | None:
    found = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name")
    return str(found) if found else None


def _metrics_port(pod: dict[str, Any]) -> int | None:
    """The trainer's metrics port: the container port named `metrics` (what trainops renders
    for the job's `metrics.port`)."""
    for c in (pod.get("spec") or {}).get("containers") or []:
        for port in c.get("ports") or []:
            if port.get("name") == METRICS_PORT_NAME and port.get("containerPort"):
                return int(port["containerPort"])
    return None


def last_steps(pods: list[dict[str, Any]], logs: Logs) -> dict[str, float]:
    """Each pod's `trainops_trainer_last_step_timestamp_seconds` (Unix time of its last
    completed step), read from its metrics endpoint through the pod proxy; pods without a
    metrics port, an answer or the gauge are left out, a 403 is noted as unread."""
    out: dict[str, float] = {}
    for pod in pods[:MAX_LOG_READS]:
        port = _metrics_port(pod)
        if port is None:
            continue
        try:
            text = logs.client.pod_proxy(logs.namespace, _name(pod), port, "metrics")
        except ClusterError as err:
            logs.unread.append(f"metrics of pod/{_name(pod)}: {err}")
            continue
        value = hang.last_step_gauge(text or "")
        if value is not None:
            out[_name(pod)] = value
    return out


def stalled(
    pods: list[dict[str, Any]], logs: Logs, now: dt.datetime, stall_seconds: int
) -> hang.Hang | None:
    """The hang the trainer's metrics and current logs show, for a job whose pods all run
    (else None)."""
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    if not running or len(running) != len(pods):
        return None
    current = [
        log
        for p in running
        if (container := _main_container(p)) is not None
        and (log := logs.get(_name(p), container, False)) is not None
    ]
    return hang.detect(current, last_steps(running, logs), now, stall_seconds)


def transports(logs: Logs) -> list[nccl_log.Transport]:
    """NCCL's network per pod, from every log read so far."""
    found = [
        t
        for log in logs.read.values()
        if log is not None and (t := nccl_log.transport(log.pod, log.lines)) is not None
    ]
    return sorted(found, key=str)


def socket_fallback(found: list[nccl_log.Transport], profile: ClusterProfile) -> str | None:
    """The finding when NCCL runs over TCP sockets on a cluster whose profile says RDMA."""
    socket = nccl_log.fallbacks(found)
    if not profile.network.is_rdma or not socket:
        return None
    pods = ", ".join(sorted({t.pod for t in socket}))
    return (
        f"SocketFallback: NCCL runs over TCP sockets, not RDMA, on pod(s) {pods} of RDMA"
        f" cluster {profile.name} (NCCL INFO Using network Socket); check NCCL_IB_HCA, the"
        " RDMA device plugin resource and the network attachment"
    )
