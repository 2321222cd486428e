"""What a job needs the cluster to run, against what its profile says it runs (`installed:`).

- MPIJob: the MPI Operator (`kubeflow.org/v2beta1`) and the Training Operator
  (`kubeflow.org/v1`) both install `mpijobs.kubeflow.org`, so a cluster serves one of the
  two versions, and a job of the other is refused by the API server.
- Kueue admits only the kinds whose integration its Configuration enables; v0.19's default
  turned PyTorchJob and TFJob off (kubernetes-sigs/kueue v0.19.2,
  config/components/manager/controller_manager_config.yaml), and then the queue label on
  such a job is ignored: it runs unqueued, around the quota.

Both are refused at load with what to change: an MPIJob at the job's target, a kind Kueue
does not admit once at the profile, naming the jobs.
"""

from __future__ import annotations

from collections.abc import Sequence

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


def check_kueue(
    cluster: ClusterProfile,
    jobs: Sequence[TrainingJob],
    out: Collector,
    at: list[str | int] | None = None,
) -> None:
    """On a Kueue cluster, each kind its `jobs` render that Kueue does not admit there: one
    problem at the profile per kind, naming the jobs (a profile switched to Kueue is one
    mistake, not one per job); `at`: another place for it (`out` another file's)."""
    if cluster.scheduler.kind != "kueue":
        return
    refused: dict[tuple[str, str], list[str]] = {}
    for job in jobs:
        api, kind = rendered_kind(job, cluster)
        framework = KUEUE_FRAMEWORKS.get((api, kind))
        if framework is None or framework not in cluster.installed.kueue_frameworks:
            refused.setdefault((api, kind), []).append(f"`{job.name}`")
    for (api, kind), names in sorted(refused.items()):
        framework = KUEUE_FRAMEWORKS.get((api, kind))
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
                    tuple(sorted({*cluster.installed.kueue_frameworks, framework})),
                ),
            )
        )
        jobs_text = ", ".join(names)
        where = ["installed", "kueue", "integrations"]
        if cluster.installed.kueue_integrations is None:
            where = ["scheduler", "name"]
        out.add(
            at if at is not None else where,
            f"cluster `{cluster.name}` queues with Kueue, and {what}: job(s) {jobs_text}"
            f" render a {kind} here, whose queue label would be ignored and which would run"
            " outside its quota. Enable the integration in Kueue's Configuration"
            " (`integrations.frameworks`) and list it in the profile's"
            " `installed.kueue.integrations`, or target those jobs at another cluster",
            additions,
        )
