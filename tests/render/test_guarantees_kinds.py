"""README "What the renderer guarantees" for TFJob and MPIJob, on what the real kustomize builds.

Same method as `test_guarantees.py` (whose fixture and helpers this reuses): the shipped and
the rich repositories rendered by the CLI, every overlay built by kustomize, expectations read
from the job and cluster specs as plain YAML and from the rule as the README states it.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.render.guarantees import PAIRS, build, env_by_name, pod_templates, pods_on

__all__ = ["build"]  # the module-scoped fixture, shared

# Spelled out (not imported), as in test_guarantees.py.
TF_ROLES = ("Chief", "Worker", "PS", "Evaluator")
MPI_DEFAULT_API = "kubeflow.org/v2beta1"
MPIRUN_DEFAULT_ARGS = ["-bind-to", "none", "-map-by", "slot"]
GPU_WORDS = ("gpu", "nvidia.com/", "amd.com/")


def _gpus(container: dict[str, Any]) -> int:
    limits = container["resources"].get("limits", {})
    return sum(int(v) for k, v in limits.items() if any(w in k for w in GPU_WORDS))


def _jobs(b: Any, framework: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(job, spec) for job, spec in b.training_jobs() if spec["framework"] == framework]


def _nccl_names(profile: dict[str, Any]) -> set[str]:
    """What README promises every NCCL pod: the transport's switch and the socket interface."""
    return {"NCCL_IB_DISABLE", "NCCL_SOCKET_IFNAME"}


def test_the_fixtures_exercise_every_role(build: Any) -> None:
    seen: set[str] = set()
    for label, cluster in PAIRS:
        for job, spec in build(label, cluster).training_jobs():
            seen |= {f"{job['kind']}:{rtype}" for rtype, _, _ in pod_templates(job)}
            seen |= {f"{job['kind']}:{job['apiVersion']}"}
            seen |= {f"mpi:{spec.get('mpi', {}).get('implementation', 'OpenMPI')}"}
            if spec.get("tensorflow", {}).get("successPolicy"):
                seen.add(f"tf:{spec['tensorflow']['successPolicy']}")
    wanted = {f"TFJob:{r}" for r in TF_ROLES} | {"MPIJob:Launcher", "MPIJob:Worker"}
    wanted |= {"MPIJob:kubeflow.org/v2beta1", "MPIJob:kubeflow.org/v1", "mpi:Intel"}
    wanted |= {"mpi:OpenMPI", "tf:AllWorkers"}
    assert wanted <= seen, wanted - seen


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_tfjob_roles(build: Any, label: str, cluster: str) -> None:
    """TFJob: one Chief and `replicas - 1` Workers (`replicas` Workers with `chief: false`),
    the parameter servers and the one Evaluator the spec asks for, each with its own GPUs and
    resources (the job's by default); every role `restartPolicy: OnFailure`; `successPolicy`
    "" (Chief or worker 0) unless `AllWorkers`; the program as written in a container named
    `tensorflow`, with no TF_CONFIG (the operator writes it)."""
    b = build(label, cluster)
    for job, spec in _jobs(b, "tensorflow"):
        tf = spec.get("tensorflow", {})
        pods = pods_on(spec, cluster)
        chief = tf.get("chief", True)
        wanted = {"Chief": 1, "Worker": pods - 1} if chief else {"Worker": pods}
        if "parameterServers" in tf:
            wanted["PS"] = tf["parameterServers"]["replicas"]
        if "evaluator" in tf:
            wanted["Evaluator"] = 1
        wanted = {k: v for k, v in wanted.items() if v}
        templates = pod_templates(job)
        assert {rtype: n for rtype, n, _ in templates} == wanted
        specs = job["spec"]["tfReplicaSpecs"]
        assert {r: specs[r]["restartPolicy"] for r in specs} == dict.fromkeys(specs, "OnFailure")
        policy = tf.get("successPolicy", "ChiefOrWorker0")
        assert job["spec"]["successPolicy"] == ("AllWorkers" if policy == "AllWorkers" else "")
        role_specs = {"PS": tf.get("parameterServers"), "Evaluator": tf.get("evaluator")}
        for rtype, _, template in templates:
            (container,) = template["spec"]["containers"]
            assert container["name"] == "tensorflow"
            assert container["command"] == spec["command"]
            assert container.get("args", []) == [str(a) for a in spec.get("args", [])]
            assert "TF_CONFIG" not in env_by_name(container)
            role = role_specs.get(rtype) or {}
            resources = role.get("resources", spec["resources"])
            requests = container["resources"]["requests"]
            assert (requests["cpu"], requests["memory"]) == tuple(
                str(resources[k]) for k in ("cpu", "memory")
            )
            gpus = role.get("gpus", 0) if rtype in role_specs else spec["gpusPerReplica"]
            assert _gpus(container) == gpus, (rtype, gpus)
            # A role without GPUs is no NCCL pod: no GPU nodes, no NCCL env.
            assert ("nodeSelector" in template["spec"]) == (gpus > 0)
            has_nccl = _nccl_names(b.profile) <= set(env_by_name(container))
            assert has_nccl == (gpus > 0 or rtype not in role_specs), rtype


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_mpijob_launcher_and_workers(build: Any, label: str, cluster: str) -> None:
    """MPIJob: the MPI Operator's v2beta1 unless `mpi.apiVersion` names v1; one Launcher (no
    GPU unless `mpi.launcher.gpus`) and `replicas` Workers with `slotsPerWorker` = GPUs per
    Worker; `mpiImplementation` on v2beta1. The Launcher runs `mpirun` with one argv element
    per word: the job's mpirun options, `-np` = Workers x slots, with Open MPI a `-x NAME` for
    every variable of its env (the cluster's NCCL settings among them), the cluster's socket
    interface for MPI's TCP traffic, then the program and its args. On v2beta1 MASTER_ADDR is
    Worker 0, the first host of the operator's hostfile, for python ranks only
    (`mpi.rankProgram: executable` runs any program, which reads no torch.distributed env)."""
    b = build(label, cluster)
    interface = b.profile["network"]["socketInterface"]
    for job, spec in _jobs(b, "mpi"):
        mpi = spec.get("mpi", {})
        name, namespace = spec["name"], spec["namespace"]
        api = mpi.get("apiVersion", MPI_DEFAULT_API)
        implementation = mpi.get("implementation", "OpenMPI")
        pods = pods_on(spec, cluster)
        slots = max(spec["gpusPerReplica"], 1)
        assert job["apiVersion"] == api
        assert {rtype: n for rtype, n, _ in pod_templates(job)} == {"Launcher": 1, "Worker": pods}
        specs = job["spec"]["mpiReplicaSpecs"]
        assert {r: specs[r]["restartPolicy"] for r in specs} == dict.fromkeys(specs, "OnFailure")
        assert job["spec"]["slotsPerWorker"] == slots
        assert job["spec"].get("mpiImplementation") == (
            implementation if api == MPI_DEFAULT_API else None
        )
        (launcher,) = specs["Launcher"]["template"]["spec"]["containers"]
        assert _gpus(launcher) == mpi.get("launcher", {}).get("gpus", 0)
        env = env_by_name(launcher)
        assert _nccl_names(b.profile) <= set(env)
        argv = launcher["command"] + launcher["args"]
        assert argv[0] == "mpirun"
        assert [w for w in argv if w.startswith("-") and len(w.split()) > 1] == []
        options = mpi.get("mpirunArgs", MPIRUN_DEFAULT_ARGS)
        assert argv[1 : 1 + len(options)] == options
        assert argv[argv.index("-np") + 1] == str(pods * slots)
        program = [*spec["command"], *[str(a) for a in spec.get("args", [])]]
        assert argv[-len(program) :] == program
        generated = argv[1 + len(options) :]  # the author's own `-x` stay theirs
        exported = {generated[i + 1] for i, w in enumerate(generated) if w == "-x"}
        assert exported == (set(env) if implementation == "OpenMPI" else set())
        if implementation == "OpenMPI":
            assert argv[argv.index("btl_tcp_if_include") + 1] == interface
            assert argv[argv.index("oob_tcp_if_include") + 1] == interface
        else:
            assert argv[argv.index("-iface") + 1] == interface
        if api == MPI_DEFAULT_API and mpi.get("rankProgram", "python") == "python":
            wanted = f"{name}-worker-0.{name}.{namespace}.svc"
            assert env["MASTER_ADDR"]["value"] == wanted
        else:  # no such Service (v1), or ranks that are no torch.distributed program
            assert "MASTER_ADDR" not in env
        (worker,) = specs["Worker"]["template"]["spec"]["containers"]
        assert _gpus(worker) == spec["gpusPerReplica"]
        assert "args" not in worker
        assert worker.get("command") == mpi.get("workerCommand")
        assert _nccl_names(b.profile) <= set(env_by_name(worker))
