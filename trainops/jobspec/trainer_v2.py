"""What a job may not ask of a cluster running Kubeflow Trainer v2 (checked at the door).

Trainer v2.3 has no elastic training (its torch policy has no elasticPolicy), no TTL on a
TrainJob, and a TrainJob's runtime patches cannot set hostNetwork; trainops renders torch
runtimes only (no TensorFlow or MPI job on v2). Each is refused with what to do, rather than
rendered as something the job did not ask for. docs/trainer-v2.md.

The job's pod fields and escape hatch reach a TrainJob through its runtime patch and its
`trainer` (render/trainjob.py); what neither can carry (facts/trainer.py, v2.3.0's
`PodSpecPatch`) is refused by `check_hatch`, naming the field: dropped, it would leave the
job running without what it asked for.
"""

from __future__ import annotations

from typing import Any

from trainops.facts.kubeflow import PYTORCH_CONTAINER
from trainops.facts.trainer import (
    NODE_CONTAINER,
    PATCH_CONTAINER_FIELDS,
    PATCH_POD_METADATA_FIELDS,
    PATCH_POD_SPEC_FIELDS,
    PET_ENV,
    TRAINER_CONTAINER_FIELDS,
)
from trainops.jobspec.model import ClusterProfile, TrainingJob
from trainops.jobspec.problems import Collector

# Pod fields a TrainJob carries in its runtime patch but the escape hatch may not touch there:
# init containers (the runtime's own; new ones cannot be added by a patch).
_NOT_FROM_THE_HATCH = frozenset({"initContainers"})
# The node container's fields the hatch may set: the patch's and the trainer's.
_NODE_FIELDS = (PATCH_CONTAINER_FIELDS | set(TRAINER_CONTAINER_FIELDS)) - {"name"}


def check_target(
    job: TrainingJob, cluster: ClusterProfile, where: list[str | int], out: Collector
) -> None:
    """Problems of `job` on the Trainer v2 `cluster` it targets at `where`."""
    if not cluster.operator.trainer_v2:
        return
    on = f"cluster `{cluster.name}` runs Kubeflow Trainer v2 ({cluster.operator.version})"
    if job.framework != "pytorch":
        out.add(
            [*where, "cluster"],
            f"job `{job.name}` is `framework: {job.framework}` but {on}, for which trainops"
            " renders PyTorch (torch-distributed) runtimes only: target a `training-operator`"
            " cluster",
        )
    if not job.command:
        out.add(
            [*where, "cluster"],
            f"job `{job.name}` has no `command` but {on}: a TrainJob's trainer needs the"
            " program to run under torchrun; write `command`",
        )
    if job.elastic is not None:
        out.add(
            [*where, "cluster"],
            f"job `{job.name}` is elastic but {on}, which has no elastic training (a TrainJob"
            " runs a fixed numNodes; v2.3 has no elasticPolicy): target a `training-operator`"
            " cluster, or remove `elastic` to run fixed-size everywhere",
        )
    if job.run_policy.ttl_seconds_after_finished is not None:
        out.add(
            ["runPolicy", "ttlSecondsAfterFinished"],
            f"{on}: a TrainJob has no TTL (v2.3); remove `ttlSecondsAfterFinished` (the"
            " finished TrainJob stays as the record, which GitOps needs anyway)",
        )
    if job.host_network:
        out.add(
            ["hostNetwork"],
            f"{on}: a TrainJob's runtime patches cannot set hostNetwork (v2.3); remove"
            " `hostNetwork` (use the cluster's RDMA network) or target a `training-operator`"
            " cluster",
        )


def _v2_clusters(clusters: list[ClusterProfile]) -> str:
    names = ", ".join(f"`{c.name}`" for c in clusters)
    return f"cluster {names} runs Kubeflow Trainer v2, whose TrainJob"


def check_hatch(d: dict[str, Any], clusters: list[ClusterProfile], out: Collector) -> None:
    """The pod fields of job spec `d` (as written) that a v2.3 TrainJob cannot carry, once
    for all the Trainer v2 `clusters` it targets."""
    v2 = [c for c in clusters if c.operator.trainer_v2]
    if not v2:
        return
    on = _v2_clusters(v2)
    if d.get("priorityClassName") is not None:
        out.add(
            ["priorityClassName"],
            f"{on} cannot set a priority class (runtime patches have no `priorityClassName`;"
            " the runtime's is the profile's `scheduler.priorityClass`): remove it, or target"
            " a `training-operator` cluster",
        )
    if d.get("sidecars"):
        out.add(
            ["sidecars"],
            f"{on} cannot add containers (runtime patches change only the runtime's own):"
            " remove `sidecars`, or target a `training-operator` cluster",
        )
    for rtype in sorted(d.get("replicaPodTemplates") or {}):
        out.add(
            ["replicaPodTemplates", rtype],
            f"{on} runs one pod template for every node (replicated job `node`), with no"
            f" `{rtype}` of its own: put what every pod needs in `podTemplate`",
        )
    template = d.get("podTemplate")
    if isinstance(template, dict):
        _check_template(template, on, out)


def _check_template(template: dict[str, Any], on: str, out: Collector) -> None:
    allowed = ", ".join(sorted(PATCH_POD_SPEC_FIELDS - _NOT_FROM_THE_HATCH))
    for key in sorted(template.get("metadata") or {}):
        if key not in PATCH_POD_METADATA_FIELDS:
            out.add(
                ["podTemplate", "metadata", key],
                f"{on}'s runtime patch carries only pod labels and annotations, not"
                f" `podTemplate.metadata.{key}`: remove it",
            )
    spec = template.get("spec") or {}
    for key in sorted(spec):
        if key not in PATCH_POD_SPEC_FIELDS or key in _NOT_FROM_THE_HATCH:
            out.add(
                ["podTemplate", "spec", key],
                f"{on}'s runtime patch cannot carry `podTemplate.spec.{key}` (v2.3 patches"
                f" {allowed}): remove it, or target a `training-operator` cluster",
            )
    for i, container in enumerate(spec.get("containers") or ()):
        where: list[str | int] = ["podTemplate", "spec", "containers", i]
        name = (container or {}).get("name")
        if name != PYTORCH_CONTAINER:
            out.add(
                [*where, "name"],
                f"{on} cannot add container `{name}` (a runtime patch changes only the"
                f" runtime's `{NODE_CONTAINER}` container, which the escape hatch calls"
                f" `{PYTORCH_CONTAINER}`)",
            )
            continue
        for key in sorted(container):
            if key not in _NODE_FIELDS and key != "name":
                fields = ", ".join(sorted(_NODE_FIELDS))
                out.add(
                    [*where, key],
                    f"{on} cannot set `{key}` on the training container (a TrainJob sets"
                    f" {fields}): remove it, or target a `training-operator` cluster",
                )
        for j, var in enumerate(container.get("env") or ()):
            if (var or {}).get("name") in PET_ENV:
                out.add(
                    [*where, "env", j, "name"],
                    f"{on}'s trainer env may not set `{var['name']}`: the Trainer's torch"
                    " plugin sets it (its webhook refuses the TrainJob)",
                )
