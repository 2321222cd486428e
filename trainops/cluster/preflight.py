"""`trainops preflight --apply`: run the fabric preflight on the cluster and read its log.

Creates the rendered MPIJob and its NetworkPolicy through the cluster client, waits for the
operator's verdict, reads the Launcher pod's log (all_reduce_perf's output, judged by the CLI
with facts/nccl_tests.py) and deletes both objects unless asked to keep them.

What the operators do, read at these releases:
- MPI Operator v0.8 (kubeflow.org/v2beta1, pkg/controller/mpi_job_controller.go): the Launcher
  is a batch Job `<job>-launcher`; the MPIJob gets condition `Succeeded` or `Failed` (True) from
  that Job's outcome; its pods carry `training.kubeflow.org/job-name: <job>` and
  `training.kubeflow.org/job-role: launcher` (`defaultLabels`).
- Training Operator v1 (kubeflow.org/v1 MPIJob): the same conditions; the Launcher is a pod
  labelled `training.kubeflow.org/replica-type: launcher`.
A Launcher retried under its backoff limit leaves several pods: the newest one's log is read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainops.cluster.admit import admit
from trainops.cluster.client import Client
from trainops.cluster.errors import ClusterError
from trainops.facts.kubeflow import JOB_NAME_LABEL, JOB_ROLE_LABEL, REPLICA_TYPE_LABEL
from trainops.jobspec.model import ClusterProfile

LAUNCHER = "launcher"
# all_reduce_perf from 8 B to 8 GiB prints ~35 rows; the tail keeps the header and mpirun's
# own errors too.
LOG_TAIL_LINES = 2000
DONE = ("Succeeded", "Failed")
# How often the MPIJob's status is read while it runs.
POLL_SECONDS = 5.0


@dataclass(frozen=True)
class Outcome:
    """How the preflight ended on the cluster."""

    state: str
    """`Succeeded`, `Failed` (the operator's condition) or `TimedOut` (we stopped waiting)."""
    message: str
    """The condition's message, or what we waited for."""
    pod: str | None
    """The Launcher pod whose log was read (None: no Launcher pod was found)."""
    log: str | None
    """Its log (None: no pod, or the kubelet had none)."""


def _condition(obj: dict[str, Any]) -> tuple[str, str] | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") in DONE and str(cond.get("status")) == "True":
            return str(cond["type"]), str(cond.get("message") or cond.get("reason") or "")
    return None


def _is_launcher(pod: dict[str, Any]) -> bool:
    labels = pod.get("metadata", {}).get("labels") or {}
    return LAUNCHER in (labels.get(JOB_ROLE_LABEL), labels.get(REPLICA_TYPE_LABEL))


def _container(job: dict[str, Any]) -> str:
    spec = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    return str(spec["containers"][0]["name"])


def launcher_log(client: Client, job: dict[str, Any]) -> tuple[str | None, str | None]:
    """(pod, log) of the job's newest Launcher pod; (None, None) when it has none."""
    meta = job["metadata"]
    pods = client.list(
        client.require("v1", "Pod"), meta["namespace"], f"{JOB_NAME_LABEL}={meta['name']}"
    )
    launchers = sorted(
        (p for p in pods if _is_launcher(p)),
        key=lambda p: (p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]),
    )
    if not launchers:
        return None, None
    pod = str(launchers[-1]["metadata"]["name"])
    log = client.logs(meta["namespace"], pod, _container(job), False, LOG_TAIL_LINES)
    return pod, log


def run(
    client: Client,
    objects: list[dict[str, Any]],
    timeout: float,
    *,
    profile: ClusterProfile,
    source: str,
    keep: bool = False,
    poll: float | None = None,
    say: Callable[[str], None] = lambda _: None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Create `objects` (the MPIJob first), wait up to `timeout` seconds for its verdict, read
    the Launcher's log, delete them unless `keep`. Objects that break the rules `validate`
    holds the job to (`profile`'s, made from the spec `source`) are refused before anything
    is created (`admit.Refused`); the cluster's refusals are ClusterErrors (exit 2)."""
    admit(objects, profile, source)
    job = objects[0]
    meta = job["metadata"]
    resources = [client.require(o["apiVersion"], o["kind"]) for o in objects]
    created: list[tuple[int, dict[str, Any]]] = []
    try:
        for index, obj in enumerate(objects):
            client.create(resources[index], obj)
            created.append((index, obj))
            say(f"created {obj['kind']} {meta['namespace']}/{obj['metadata']['name']}")
        end = clock() + timeout
        while True:
            current = client.get(resources[0], meta["namespace"], meta["name"])
            if current is None:
                raise ClusterError(
                    f"{job['kind']} {meta['namespace']}/{meta['name']} disappeared while"
                    " the preflight ran (deleted by someone else?)"
                )
            done = _condition(current)
            if done is not None:
                state, message = done
                break
            if clock() >= end:
                state = "TimedOut"
                message = (
                    f"no Succeeded or Failed condition within {timeout:g}s: pods pending"
                    " (GPUs, RDMA devices) or a hung NCCL set-up; --keep it and look with"
                    " `trainops explain`"
                )
                break
            sleep(POLL_SECONDS if poll is None else poll)
        pod, log = launcher_log(client, job)
        return Outcome(state, message, pod, log)
    finally:
        if not keep:
            for index, obj in reversed(created):
                client.delete(resources[index], meta["namespace"], obj["metadata"]["name"])
                say(f"deleted {obj['kind']} {meta['namespace']}/{obj['metadata']['name']}")
