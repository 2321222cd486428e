"""What a job needs the cluster to run, against what its profile says it runs (`installed:`).

- MPIJob: the MPI Operator (`kubeflow.org/v2beta1`) and the Training Operator
  (`kubeflow.org/v1`) both install `mpijobs.kubeflow.org`, so a cluster serves one of the
  two versions, and a job of the other is refused by the API server.
- Kueue admits only the kinds whose integration its Configuration enables; v0.19's default
  turned PyTorchJob and TFJob off (kubernetes-sigs/kueue v0.19.2,
  config/components/manager/controller_manager_config.yaml), and then the queue label on
  such a job is ignored: it runs unqueued, around the quota.

Both are refused at load, at the job's target, with what to change.
"""

from __future__ import annotations

from trainops.core.errors import Addition
from trainops.facts.kubeflow import MPIJOB_SERVED_BY
from trainops.facts.schedulers import KUEUE_FRAMEWORKS
from trainops.facts.trainer import TRAINER_API, TRAINJOB
from trainops.jobspec.model import ClusterProfile, TrainingJob
from trainops.jobspec.problems import Collector

_KINDS = {"pytorch": ("kubeflow.org/v1", "PyTorchJob"), "tensorflow": ("kubeflow.org/v1", "TFJob")}


def rendered_kind(job: TrainingJob, cluster: ClusterProfile) -> tuple[str, str]:
    """(apiVersion, kind) of the job's training object on `cluster`."""
    if cluster.operator.trainer_v2:
        return TRAINER_API, TRAINJOB
    if job.framework == "mpi" and job.mpi is not None:
        return job.mpi.api_version, "MPIJob"
    return _KINDS.get(job.framework, _KINDS["pytorch"])


def check_target(
    job: TrainingJob, cluster: ClusterProfile, where: list[str | int], out: Collector
) -> None:
    """Problems of `job` on `cluster` (targeted at `where`) with what the cluster runs."""
    api, kind = rendered_kind(job, cluster)
    served = MPIJOB_SERVED_BY[cluster.installed.mpi_jobs]
    if kind == "MPIJob" and api != served:
        out.add(
            [*where, "cluster"],
            f"job `{job.name}` is an MPIJob `{api}`, and cluster `{cluster.name}` serves"
            f" `mpijobs.kubeflow.org` as `{served}` (`installed.mpiJobs:"
            f" {cluster.installed.mpi_jobs}`; one operator serves that CRD per cluster): set"
            f" `mpi.apiVersion: {served}`, or target another cluster",
        )
    if cluster.scheduler.kind != "kueue":
        return
    framework = KUEUE_FRAMEWORKS.get((api, kind))
    enabled = cluster.installed.kueue_frameworks
    if framework is not None and framework in enabled:
        return
    what = (
        f"Kueue has no integration for `{api}` {kind}"
        if framework is None
        else f"Kueue {cluster.installed.kueue_version} there does not enable `{framework}`"
        + ("" if cluster.installed.kueue_integrations is not None else " by default")
    )
    # Listing integrations replaces the release's defaults: the addition keeps them.
    additions = (
        ()
        if framework is None
        else (
            Addition(
                cluster.name,
                ("installed", "kueue", "integrations"),
                tuple(sorted({*enabled, framework})),
            ),
        )
    )
    out.add(
        [*where, "cluster"],
        f"job `{job.name}` renders a {kind} on cluster `{cluster.name}`, which queues with"
        f" Kueue, and {what}: the queue label would be ignored and the job run outside its"
        " quota. Enable the integration in Kueue's Configuration (`integrations.frameworks`)"
        " and list it in the profile's `installed.kueue.integrations`, or target another"
        " cluster",
        additions,
    )
