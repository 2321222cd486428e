"""What a job may not ask of a cluster running Kubeflow Trainer v2 (checked at the door).

Trainer v2.3 has no elastic training (its torch policy has no elasticPolicy), no TTL on a
TrainJob, and a TrainJob's runtime patches cannot set hostNetwork; trainops renders torch
runtimes only (no TensorFlow or MPI job on v2). Each is refused with what to do, rather than
rendered as something the job did not ask for. docs/trainer-v2.md.
"""

from __future__ import annotations

from trainops.spec.model import ClusterProfile, TrainingJob
from trainops.spec.problems import Collector


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
