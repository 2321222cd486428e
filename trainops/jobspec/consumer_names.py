"""Every name a consumer derives from a job's name, checked at load against that consumer's
rule (`facts/derived_names.py`, from each consumer's code): a name the operator, the Trainer's
JobSet or the API server refuses is a load error at the job's `name`, once per reason, with the
derived name, who refuses it and where their code says so (issue 33 item 3)."""

from __future__ import annotations

from trainops.facts import derived_names as dn
from trainops.facts.monitoring import METRICS_SERVICE_SUFFIX
from trainops.facts.trainer import NODE_JOB
from trainops.jobspec.installed import rendered_kind
from trainops.jobspec.model import ClusterProfile, Target, TrainingJob
from trainops.jobspec.problems import Collector


def derived(job: TrainingJob, cluster: ClusterProfile, target: Target) -> list[dn.DerivedName]:
    """The names the consumers on `cluster` derive from `job` (at its largest size there)."""
    api, kind = rendered_kind(job, cluster)
    counts = job.replica_counts(target)
    if cluster.operator.trainer_v2:
        # trainops' runtimes have one replicated job, `node` (replicas 1), whose completions
        # the Trainer sets to `numNodes`.
        names = dn.trainjob_names(job.name, [(NODE_JOB, 1, job.pods_on(target))])
    elif kind == "MPIJob" and api == "kubeflow.org/v2beta1":
        names = dn.mpi_operator_names(job.name, counts.get("Worker", 0))
    else:
        names = dn.training_operator_names(kind, job.name, counts)
    if job.serves_trainer_metrics():
        names.append(dn.metrics_service_name(job.name, METRICS_SERVICE_SUFFIX))
    return names


def _claims(job: TrainingJob, out: Collector) -> None:
    """The claims trainops creates (`size`): `claimName` as written, else `<job>-<volume>`."""
    for vol in job.volumes:
        if not vol.create:
            continue
        for name, why in dn.refused([dn.claim_name(vol.claim_name)]):
            written = f"{job.name}-{vol.name}" != vol.claim_name
            out.add(
                ["volumes", vol.name, "claimName"] if written else ["volumes", vol.name],
                f"volume `{vol.name}`: {name.what} `{name.name}` is {why}, which the"
                f" {name.consumer} refuses ({name.source}): name the claim so",
            )


def check_job(
    job: TrainingJob, targets: list[tuple[ClusterProfile, Target]], out: Collector
) -> None:
    """One problem per mistake, at the job's `name`: a name that does not start like a DNS-1035
    label once, naming every consumer on the targets that refuses it; else, per target, the
    first derived name a consumer there refuses as too long."""
    _claims(job, out)
    refused = [(c, n, why) for c, t in targets for n, why in dn.refused(derived(job, c, t))]
    own = [(n, why) for _, n, why in refused if n.name == job.name or not n.problem_is_length()]
    if own:
        why = own[0][1]
        sources: dict[str, str] = {}
        for name, _ in own:
            sources.setdefault(name.consumer, name.source)
        who = ", ".join(f"the {consumer} ({source})" for consumer, source in sources.items())
        out.add(
            ["name"],
            f"job name `{job.name}` is {why}, and so are the names derived from it: refused by"
            f" {who}; choose a name starting with a letter (and rename the file)",
        )
        return
    # Per target its first refused name; targets refusing the same name are one mistake.
    first: dict[str, tuple[dn.DerivedName, str]] = {}
    for cluster, derived_name, reason in refused:
        first.setdefault(cluster.name, (derived_name, reason))
    clusters: dict[tuple[dn.DerivedName, str], list[str]] = {}
    for cluster_name, found in first.items():
        clusters.setdefault(found, []).append(f"`{cluster_name}`")
    for (name, why), names in clusters.items():
        out.add(
            ["name"],
            f"job name `{job.name}` is too long for cluster {', '.join(names)}: {name.what}"
            f" `{name.name}` is {why}, which the {name.consumer} refuses ({name.source});"
            " choose a shorter name (and rename the file)",
        )
