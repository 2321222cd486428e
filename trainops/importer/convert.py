"""Removed Kubeflow APIs rewritten as the served version their shape maps onto, before the
kind's importer reads them: a user with an old manifest wants it carried over, not refused.
Each conversion is what the operators' own API changes were, read in their sources, and
every change it makes is a note; what maps onto nothing served stays refused
(`kinds.REMOVED`).

- TFJob and PyTorchJob `kubeflow.org/v1alpha2`/`v1beta1`/`v1beta2` -> `kubeflow.org/v1`:
  the same replica specs; the run policy fields that sat under `spec` (`cleanPodPolicy`,
  `ttlSecondsAfterFinished`, `activeDeadlineSeconds`, `backoffLimit`: kubeflow/website
  `content/docs/reference/tfjob/v1beta1/tensorflow.md`; v1alpha2 had the first two,
  kubeflow-incubator/tfjob-java-client `docs/V1alpha2TFJobSpec.md`) move into v1's
  `spec.runPolicy`. A
  TFJob's `Master` is v1's Chief ("similar to chief, and kept just for backwards
  compatibility": training-operator `pkg/apis/kubeflow.org/v1/tensorflow_types.go`).
- MPIJob `kubeflow.org/v1alpha2` -> `kubeflow.org/v2beta1` (the MPI Operator's): the same
  `mpiReplicaSpecs` and `slotsPerWorker`; `backoffLimit`, `activeDeadlineSeconds`,
  `cleanPodPolicy` move into `runPolicy` (a value v2beta1 refuses, such as `Completed`, which
  v1alpha2 took and treated as `None`, becomes `Running`, with a note); `mainContainer` goes
  (v2beta1 runs the first container). v1alpha2's Launcher reached the Workers through
  `kubectl exec` (mpi-operator v0.2.3 `pkg/controllers/v1alpha2/mpi_job_controller.go`,
  `kubexec.sh`), v2beta1's through SSH: the note says the image must run sshd.
- MPIJob `kubeflow.org/v1alpha1` -> `kubeflow.org/v2beta1`: its one `template` ran both
  roles (mpi-operator 0.1.0 `pkg/controllers/mpi_job_controller.go`: the Launcher is the
  template without resources, running its command; the Workers the template with
  `sleep 365d`, which v2beta1's sshd replaces, and the GPUs `allocateGPUs` gives them);
  `gpus: N` is N/perNode Workers of perNode GPUs (fewer than a node: one Worker of N),
  perNode being the operator's `--gpus-per-node`, here the cluster profile's GPU product;
  `replicas: N` is N Workers of the template's GPU limit; the hostfile gives each Worker one
  slot per GPU.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from trainops.facts.gpus import container_gpus
from trainops.facts.kubeflow import MPIJOB_V2BETA1
from trainops.importer.notes import Notes
from trainops.jobspec.model import ClusterProfile

V1 = "kubeflow.org/v1"
# v1 replica type names, by their lower-case spelling (training-operator
# pkg/apis/kubeflow.org/v1 tensorflow_types.go, pytorch_types.go).
REPLICA_TYPES = {
    "TFJob": {"chief": "Chief", "master": "Chief", "ps": "PS", "worker": "Worker",
              "evaluator": "Evaluator"},
    "PyTorchJob": {"master": "Master", "worker": "Worker"},
}  # fmt: skip
# TFJob and PyTorchJob before v1, MPIJob v1alpha2: run policy fields under `spec`.
# The clean-up policies v2beta1 (and v1) accept (mpi-operator v2beta1 types.go enum).
CLEAN_POD_POLICIES = frozenset({"All", "Running", "None"})
RUN_POLICY_KEYS = ("cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds",
                   "backoffLimit")  # fmt: skip

Converter = Callable[[dict[str, Any], Notes, ClusterProfile], dict[str, Any] | None]


def _run_policy(spec: dict[str, Any], notes: Notes, was: str) -> None:
    """Move the run policy fields `was` kept under `spec` into `spec.runPolicy`."""
    policy = dict(spec.get("runPolicy") or {})
    for key in RUN_POLICY_KEYS:
        if key in spec:
            policy.setdefault(key, spec.pop(key))
            notes.add(["spec", key], f"`spec.{key}` ({was}) is `spec.runPolicy.{key}` now")
    if policy:
        spec["runPolicy"] = policy


def _operator_v1(obj: dict[str, Any], notes: Notes, cluster: ClusterProfile) -> dict[str, Any]:
    """TFJob/PyTorchJob v1alpha2, v1beta1 or v1beta2 as kubeflow.org/v1."""
    was = str(obj["apiVersion"])
    out = copy.deepcopy(obj)
    out["apiVersion"] = V1
    notes.add(["apiVersion"], f"{out['kind']} {was} (removed) converted to {V1}")
    spec = out.setdefault("spec", {})
    _run_policy(spec, notes, was)
    key = "tfReplicaSpecs" if out["kind"] == "TFJob" else "pytorchReplicaSpecs"
    specs = spec.get(key)
    if isinstance(specs, dict):
        spec[key] = _replica_types(specs, REPLICA_TYPES[str(out["kind"])], notes, key)
    return out


def _replica_types(
    specs: dict[str, Any], canonical: dict[str, str], notes: Notes, key: str
) -> dict[str, Any]:
    """The replica specs under v1's names: the old operators lower-cased the replica type
    (tf-operator's `reconcilePods`: "Convert TFReplicaType to lower string"), so `WORKER` and
    `Ps` ran as a worker and a parameter server; v1 reads `Worker` and `PS`. A TFJob's
    `Master` is v1's Chief."""
    out: dict[str, Any] = {}
    for name, rspec in specs.items():
        new = canonical.get(str(name).lower(), name)
        if new in out or (new != name and new in specs):
            new = name
        out[new] = rspec
        if new == name:
            continue
        why = (
            "v1's Chief (it keeps `Master` only for backwards compatibility): TF_CONFIG names"
            " its task `chief` instead of `master`"
            if str(name).lower() == "master" and new == "Chief"
            else f"v1's `{new}` (the operators before v1 read replica types in any case)"
        )
        notes.add(["spec", key, name], f"the `{name}` replica is {why}")
    return out


def _mpi_v1alpha2(obj: dict[str, Any], notes: Notes, cluster: ClusterProfile) -> dict[str, Any]:
    """MPIJob v1alpha2 as the MPI Operator's v2beta1."""
    out = copy.deepcopy(obj)
    out["apiVersion"] = MPIJOB_V2BETA1
    notes.add(
        ["apiVersion"],
        f"MPIJob kubeflow.org/v1alpha2 (removed) converted to {MPIJOB_V2BETA1}: its Launcher"
        " reaches the Workers over SSH, not `kubectl exec`: the Workers' image must run sshd",
    )
    spec = out.setdefault("spec", {})
    _run_policy(spec, notes, "kubeflow.org/v1alpha2")
    _clean_pod_policy(spec, notes)
    main = spec.pop("mainContainer", None)
    if main is not None:
        notes.add(
            ["spec", "mainContainer"],
            f"`mainContainer: {main}` dropped: v2beta1 runs each pod's first container (the"
            " container it names is moved first)",
        )
        for rspec in (spec.get("mpiReplicaSpecs") or {}).values():
            containers = (((rspec or {}).get("template") or {}).get("spec") or {}).get(
                "containers"
            ) or []
            named = [c for c in containers if c.get("name") == main]
            if named:
                containers.remove(named[0])
                containers.insert(0, named[0])
    return out


def _clean_pod_policy(spec: dict[str, Any], notes: Notes) -> None:
    """A v1alpha2 `cleanPodPolicy` v2beta1 refuses (its enum: All, Running, None), such as
    `Completed`: the v1alpha2 operator accepted any string (its CRD had no enum) and deleted
    the Workers after the job for `All` and `Running` only (mpi-operator v0.2.3
    `pkg/controllers/v1alpha2/mpi_job_controller.go` isCleanUpPods), so every other value
    kept them running. Written as `Running`, what the value asks for (clean up when done)."""
    policy = spec.get("runPolicy") or {}
    value = policy.get("cleanPodPolicy")
    if value is None or value in CLEAN_POD_POLICIES:
        return
    policy["cleanPodPolicy"] = "Running"
    notes.add(
        ["spec", "cleanPodPolicy"],
        f"`cleanPodPolicy: {value}` is no policy v2beta1 accepts (All, Running, None); the"
        " v1alpha2 operator took it and, knowing only All and Running, left the Workers"
        " running after the job (mpi-operator v0.2.3 isCleanUpPods): written as `Running`,"
        " which deletes what still runs when the job ends (the Workers, their sshd and GPUs)"
        " and keeps the Launcher's log; write `None` to keep the old behaviour",
    )


def _mpi_v1alpha1(
    obj: dict[str, Any], notes: Notes, cluster: ClusterProfile
) -> dict[str, Any] | None:
    """MPIJob v1alpha1 (one template, `gpus` or `replicas`) as v2beta1's Launcher and
    Workers; None (refused, noted) where the operator itself would have refused it."""
    spec = obj.get("spec") or {}
    template = spec.get("template") or {}
    containers = (template.get("spec") or {}).get("containers") or []
    if not containers:
        notes.refuse(["spec", "template"], "MPIJob v1alpha1 without a container: nothing to run")
        return None
    per_node = cluster.gpus[0].per_node
    gpus = spec.get("gpus")
    if isinstance(gpus, int) and not isinstance(gpus, bool):
        if gpus < per_node:
            workers, per_worker = 1, gpus
        elif gpus % per_node == 0:
            workers, per_worker = gpus // per_node, per_node
        else:
            notes.refuse(
                ["spec", "gpus"],
                f"`gpus: {gpus}` is not a multiple of {per_node} GPUs per node (cluster"
                f" `{cluster.name}`), which the MPI Operator refused too: give `gpus` a multiple,"
                " or `replicas` and a GPU limit",
            )
            return None
        how = f"`gpus: {gpus}` is {workers} Worker(s) of {per_worker} GPUs ({per_node} per node)"
    else:
        workers = int(spec.get("replicas") or 0)
        per_worker = container_gpus(containers[0])
        how = f"`replicas: {workers}` is {workers} Worker(s) of {per_worker} GPUs"
    launcher = copy.deepcopy(template)
    launcher["spec"]["containers"][0].pop("resources", None)
    worker = copy.deepcopy(template)
    first = worker["spec"]["containers"][0]
    first.pop("command", None)
    first.pop("args", None)
    limits = first.setdefault("resources", {}).setdefault("limits", {})
    if per_worker:
        limits["nvidia.com/gpu"] = per_worker
    policy = {"backoffLimit": spec["backoffLimit"]} if "backoffLimit" in spec else {}
    new_spec: dict[str, Any] = {
        "slotsPerWorker": max(per_worker, 1),
        "mpiReplicaSpecs": {
            "Launcher": {"replicas": 1, "template": launcher},
            "Worker": {"replicas": workers, "template": worker},
        },
    }
    if policy:
        new_spec["runPolicy"] = policy
    notes.add(
        ["apiVersion"],
        f"MPIJob kubeflow.org/v1alpha1 (removed) converted to {MPIJOB_V2BETA1}: the template"
        f" is the Launcher (without its resources) and the Workers; {how}, one slot per GPU;"
        " the Workers run sshd (rendered by trainops) where v1alpha1's slept, and the Launcher"
        " reaches them over SSH, not `kubectl exec`: the image must have sshd",
    )
    if spec.get("launcherOnMaster"):
        notes.add(
            ["spec", "launcherOnMaster"],
            "`launcherOnMaster` is not carried: training runs on worker nodes",
        )
    return {**copy.deepcopy(obj), "apiVersion": MPIJOB_V2BETA1, "spec": new_spec}


# (apiVersion, kind) of a removed API -> its conversion to one import reads.
CONVERTERS: dict[tuple[str, str], Converter] = {
    ("kubeflow.org/v1alpha2", "TFJob"): _operator_v1,
    ("kubeflow.org/v1alpha2", "PyTorchJob"): _operator_v1,
    ("kubeflow.org/v1beta1", "TFJob"): _operator_v1,
    ("kubeflow.org/v1beta2", "TFJob"): _operator_v1,
    ("kubeflow.org/v1beta1", "PyTorchJob"): _operator_v1,
    ("kubeflow.org/v1beta2", "PyTorchJob"): _operator_v1,
    ("kubeflow.org/v1alpha2", "MPIJob"): _mpi_v1alpha2,
    ("kubeflow.org/v1alpha1", "MPIJob"): _mpi_v1alpha1,
}


def converted(obj: dict[str, Any], notes: Notes, cluster: ClusterProfile) -> dict[str, Any] | None:
    """`obj` in the API version import reads (itself where it is one already); None where
    the conversion refused it (a note in `notes.refused`)."""
    gvk = (str(obj.get("apiVersion")), str(obj.get("kind")))
    convert = CONVERTERS.get(gvk)
    return obj if convert is None else convert(obj, notes, cluster)
