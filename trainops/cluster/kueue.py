"""What Kueue's Workload says about a job it holds: why it evicted it, why it has not
admitted it (kueue.x-k8s.io Workload status: conditions, `admissionChecks`)."""

from __future__ import annotations

from typing import Any

from trainops.cluster.causes import KUEUE_EVICTED, PLATFORM, Cause


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", "?"))


# Kueue's eviction reasons other than preemption (kueue v0.19.2 apis/kueue/v1beta2/
# workload_types.go; the PodsReady timeout and deactivation: pkg/controller/core/
# workload_controller.go), and what they mean.
_EVICTION = {
    "PodsReadyTimeout": "its pods were not all ready within Kueue's waitForPodsReady timeout"
    " (look at the pods: unschedulable, an image still pulling, a crash loop); Kueue"
    " requeues it after a back-off",
    "Deactivated": "Kueue set it inactive (spec.active: false) and will not queue it again"
    " until it is set active",
    "NodeFailures": "a node it ran on failed",
    "ClusterQueueStopped": "its ClusterQueue was stopped (spec.stopPolicy)",
    "LocalQueueStopped": "its LocalQueue was stopped (spec.stopPolicy)",
    "AdmissionCheck": "an admission check (a ProvisioningRequest, MultiKueue) asked for a"
    " retry or rejected it",
}


def kueue_waiting(workload: dict[str, Any]) -> str:
    """Why Kueue has not admitted a Workload: the admission check still not Ready once
    quota is reserved (kueue v0.19.2 `status.admissionChecks[]`: name, state Pending,
    Retry, Rejected, message), else its QuotaReserved or Admitted condition's message."""
    status = workload.get("status") or {}
    conds = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}
    reserved = conds.get("QuotaReserved") or {}
    if reserved.get("status") == "True":
        queue = ((status.get("admission") or {}).get("clusterQueue")) or "its ClusterQueue"
        for check in status.get("admissionChecks") or []:
            if isinstance(check, dict) and check.get("state") != "Ready":
                said = f": {check['message']}" if check.get("message") else ""
                return (
                    f"quota is reserved in ClusterQueue {queue}, but admission check"
                    f" {check.get('name')} is {check.get('state', 'Pending')}{said}"
                )
    found = reserved or conds.get("Admitted") or {}
    return str(found.get("message") or "waiting in its queue")


def workload_cause(workload: dict[str, Any]) -> Cause | None:
    """Kueue's eviction of the job's Workload (preempted, or its node failed): the
    `Evicted` condition (reason `Preempted`, `PodsReadyTimeout`, ...) or the `Preempted`
    condition (kueue.x-k8s.io/v1beta1 Workload status, Kueue v0.9+)."""
    for kind in ("Preempted", "Evicted"):
        for cond in (workload.get("status") or {}).get("conditions") or []:
            if cond.get("type") == kind and cond.get("status") == "True":
                text = (
                    f"{KUEUE_EVICTED} {_name(workload)}"
                    f" ({cond.get('reason', kind)}): {cond.get('message', '')}".rstrip(": ")
                )
                if hint := _EVICTION.get(str(cond.get("reason"))):
                    text += f"; {hint}"
                if cond.get("reason") not in {
                    "Preempted",
                    "InClusterQueue",
                    "InCohortReclamation",
                    "InCohortFairSharing",
                    "InCohortReclaimWhileBorrowing",
                }:
                    text = text.replace("Preempted: ", "Evicted: ", 1)
                return Cause(text, PLATFORM, str(cond.get("lastTransitionTime") or ""))
    return None
