"""The MPI Operator v0.8 (github.com/kubeflow/mpi-operator, tag v0.8.0) reads an MPIJob
v2beta1: ported small, with its own unit tests as vectors (tests/conformance/
test_mpi_operator.py).

- `pkg/apis/kubeflow/v2beta1/default.go` SetDefaults_MPIJob: cleanPodPolicy None,
  slotsPerWorker 1, sshAuthMountPath /root/.ssh, mpiImplementation OpenMPI,
  launcherCreationPolicy AtStartup; the Launcher's restartPolicy OnFailure and replicas 1, the
  Worker's Never and 0;
- `pkg/apis/kubeflow/validation/validation.go` ValidateMPIJob: validateMPIJobName (the last
  worker's host name `<name>-worker-<replicas - 1>`, replicas taken as 1 when unset or 0, a
  DNS-1035 label: at most 63 characters, starting with a letter), validateMPIJobSpec (the
  replica specs, slotsPerWorker, the run policy with its own `managedBy` set: the MPI
  Operator's `kubeflow.org/mpi-operator` and MultiKueue's, `pkg/apis/kubeflow/v2beta1/
  types.go` KubeflowJobController/MultiKueueController; sshAuthMountPath; the MPI
  implementation). It returns the field paths of its errors, in its order, as the upstream
  test compares them.
"""

from __future__ import annotations

import copy
import re
from typing import Any

DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MANAGED_BY = {"kubeflow.org/mpi-operator", "kueue.x-k8s.io/multikueue"}
CLEAN_POLICIES = {"None", "Running", "All"}
IMPLEMENTATIONS = {"OpenMPI", "Intel", "MPICH"}
RESTART_POLICIES = {"Never", "OnFailure"}


def set_defaults(job: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_MPIJob on a copy."""
    out = copy.deepcopy(job)
    spec = out.setdefault("spec", {})
    spec.setdefault("runPolicy", {}).setdefault("cleanPodPolicy", "None")
    spec.setdefault("slotsPerWorker", 1)
    spec["sshAuthMountPath"] = spec.get("sshAuthMountPath") or "/root/.ssh"
    spec["mpiImplementation"] = spec.get("mpiImplementation") or "OpenMPI"
    spec["launcherCreationPolicy"] = spec.get("launcherCreationPolicy") or "AtStartup"
    specs = spec.get("mpiReplicaSpecs") or {}
    for rtype, restart, replicas in (("Launcher", "OnFailure", 1), ("Worker", "Never", 0)):
        if specs.get(rtype) is not None:
            specs[rtype]["restartPolicy"] = specs[rtype].get("restartPolicy") or restart
            specs[rtype].setdefault("replicas", replicas)
    return out


def _name_errors(job: dict[str, Any]) -> list[str]:
    worker = ((job.get("spec") or {}).get("mpiReplicaSpecs") or {}).get("Worker")
    replicas = (worker or {}).get("replicas")
    replicas = replicas if replicas is not None and replicas > 0 else 1
    host = f"{(job.get('metadata') or {}).get('name', '')}-worker-{replicas - 1}"
    return [] if len(host) <= 63 and DNS1035.match(host) else ["metadata.name"]


def _replica_errors(spec: dict[str, Any], path: str, launcher: bool) -> list[str]:
    errors = []
    if spec.get("replicas") is None:
        errors.append(f"{path}.replicas")
    if spec.get("restartPolicy", "") not in RESTART_POLICIES:
        errors.append(f"{path}.restartPolicy")
    if not ((spec.get("template") or {}).get("spec") or {}).get("containers"):
        errors.append(f"{path}.template.spec.containers")
    replicas = spec.get("replicas")
    if launcher and replicas is not None and replicas != 1:
        errors.append(f"{path}.replicas")
    if not launcher and replicas is not None and replicas <= 0:
        errors.append(f"{path}.replicas")
    return errors


def _run_policy_errors(policy: dict[str, Any]) -> list[str]:
    path = "spec.runPolicy"
    errors = []
    if policy.get("cleanPodPolicy") not in CLEAN_POLICIES:
        errors.append(f"{path}.cleanPodPolicy")
    for key in ("ttlSecondsAfterFinished", "activeDeadlineSeconds", "backoffLimit"):
        if policy.get(key) is not None and policy[key] < 0:
            errors.append(f"{path}.{key}")
    if policy.get("managedBy") is not None and policy["managedBy"] not in MANAGED_BY:
        errors.append(f"{path}.managedBy")
    return errors


def validate(job: dict[str, Any]) -> list[str]:
    """ValidateMPIJob: the field paths of the errors, in upstream's order."""
    spec = job.get("spec") or {}
    errors = _name_errors(job)
    specs = spec.get("mpiReplicaSpecs")
    path = "spec.mpiReplicaSpecs"
    if specs is None:
        errors.append(path)
    else:
        launcher, worker = specs.get("Launcher"), specs.get("Worker")
        if launcher is None:
            errors.append(f"{path}[Launcher]")
        else:
            errors += _replica_errors(launcher, f"{path}[Launcher]", True)
        if worker is not None:
            errors += _replica_errors(worker, f"{path}[Worker]", False)
    slots = spec.get("slotsPerWorker")
    if slots is None or slots < 0:
        errors.append("spec.slotsPerWorker")
    errors += _run_policy_errors(spec.get("runPolicy") or {})
    if not spec.get("sshAuthMountPath"):
        errors.append("spec.sshAuthMountPath")
    if spec.get("mpiImplementation") not in IMPLEMENTATIONS:
        errors.append("spec.mpiImplementation")
    return errors
