"""The MPI Operator v0.8 port (`mpi_operator_port.py`) against the operator's own unit tests,
translated case by case into vectors (github.com/kubeflow/mpi-operator v0.8.0):

- `pkg/apis/kubeflow/validation/validation_test.go` TestValidateMPIJob: each case's MPIJob and
  the field paths of the errors it wants (the test ignores Detail and BadValue);
- `pkg/apis/kubeflow/v2beta1/default_test.go` TestSetDefaults_MPIJob "base defaults".

Issue 33's port fidelity: the port used the Training Operator's `managedBy` set (the MPI
Operator's is `kubeflow.org/mpi-operator` and MultiKueue's) and let a worker host name pass 63
characters; "invalid fields" and "valid with worker" catch both.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance.mpi_operator_port import set_defaults, validate

CONTAINERS = {"spec": {"containers": [{}]}}


def _job(name: str, impl: str, launcher: dict[str, Any], worker: dict[str, Any] | None = None,
         **spec: Any) -> dict[str, Any]:  # fmt: skip
    specs = {"Launcher": launcher, **({"Worker": worker} if worker is not None else {})}
    return {
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 2,
            "runPolicy": {"cleanPodPolicy": "Running"},
            "sshAuthMountPath": "/home/mpiuser/.ssh",
            "mpiImplementation": impl,
            "mpiReplicaSpecs": specs,
            **spec,
        },
    }


def _replica(replicas: int | None, restart: str, containers: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"restartPolicy": restart} if restart else {}
    if replicas is not None:
        out["replicas"] = replicas
    if containers:
        out["template"] = CONTAINERS
    return out


LAUNCHER = _replica(1, "Never")
INVALID_FIELDS = _job(
    "this-name-is-waaaaaaaay-too-long-for-a-worker-hostname",
    "Unknown",
    LAUNCHER,
    _replica(1000, "Never"),
    sshAuthMountPath="/root/.ssh",
)
INVALID_FIELDS["spec"]["runPolicy"] = {
    "cleanPodPolicy": "unknown",
    "ttlSecondsAfterFinished": -1,
    "activeDeadlineSeconds": -1,
    "backoffLimit": -1,
    "managedBy": "invalid.com/controller",
}
EMPTY_SPECS = _job("foo", "OpenMPI", {}, sshAuthMountPath="/root/.ssh")
EMPTY_SPECS["spec"]["mpiReplicaSpecs"] = {}
CASES: dict[str, tuple[dict[str, Any], list[str]]] = {
    "valid (intel)": (_job("foo", "Intel", LAUNCHER), []),
    "valid with worker (intel)": (
        _job("foo", "Intel", _replica(1, "OnFailure"), _replica(3, "Never")),
        [],
    ),
    "valid (mpich)": (_job("foo", "MPICH", LAUNCHER), []),
    "valid with worker (mpich)": (
        _job("foo", "MPICH", _replica(1, "OnFailure"), _replica(3, "Never")),
        [],
    ),
    "empty job": (
        {},
        [
            "metadata.name",
            "spec.mpiReplicaSpecs",
            "spec.slotsPerWorker",
            "spec.runPolicy.cleanPodPolicy",
            "spec.sshAuthMountPath",
            "spec.mpiImplementation",
        ],
    ),
    "invalid fields": (
        INVALID_FIELDS,
        [
            "metadata.name",
            "spec.runPolicy.cleanPodPolicy",
            "spec.runPolicy.ttlSecondsAfterFinished",
            "spec.runPolicy.activeDeadlineSeconds",
            "spec.runPolicy.backoffLimit",
            "spec.runPolicy.managedBy",
            "spec.mpiImplementation",
        ],
    ),
    "empty replica specs": (EMPTY_SPECS, ["spec.mpiReplicaSpecs[Launcher]"]),
    "missing replica spec fields": (
        _job("foo", "OpenMPI", _replica(None, "", False), _replica(None, "", False)),
        [
            "spec.mpiReplicaSpecs[Launcher].replicas",
            "spec.mpiReplicaSpecs[Launcher].restartPolicy",
            "spec.mpiReplicaSpecs[Launcher].template.spec.containers",
            "spec.mpiReplicaSpecs[Worker].replicas",
            "spec.mpiReplicaSpecs[Worker].restartPolicy",
            "spec.mpiReplicaSpecs[Worker].template.spec.containers",
        ],
    ),
    "invalid replica fields": (
        _job("foo", "OpenMPI", _replica(2, "Always"), _replica(0, "Invalid")),
        [
            "spec.mpiReplicaSpecs[Launcher].restartPolicy",
            "spec.mpiReplicaSpecs[Launcher].replicas",
            "spec.mpiReplicaSpecs[Worker].restartPolicy",
            "spec.mpiReplicaSpecs[Worker].replicas",
        ],
    ),
    "invalid mpiJob name": (_job("1-foo", "Intel", LAUNCHER), ["metadata.name"]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_validate_mpijob(case: str) -> None:
    job, want = CASES[case]
    assert validate(job) == want


def test_the_mpi_operators_own_manager_is_accepted() -> None:
    """The Training Operator's manager is not the MPI Operator's."""
    job = _job("foo", "Intel", LAUNCHER)
    job["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/mpi-operator"
    assert validate(job) == []
    job["spec"]["runPolicy"]["managedBy"] = "kubeflow.org/training-operator"
    assert validate(job) == ["spec.runPolicy.managedBy"]


def test_set_defaults_base() -> None:
    assert set_defaults({}) == {
        "spec": {
            "slotsPerWorker": 1,
            "runPolicy": {"cleanPodPolicy": "None"},
            "sshAuthMountPath": "/root/.ssh",
            "mpiImplementation": "OpenMPI",
            "launcherCreationPolicy": "AtStartup",
        }
    }
