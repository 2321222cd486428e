"""The repository as every command loads it: the spec checks, plus the policy rules a
cluster profile's `policy:` may name (known here, above the spec layer)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from trainops.core.errors import InputError, Problem
from trainops.jobspec.checked import CheckedSpecs
from trainops.jobspec.load import load_repository
from trainops.jobspec.model import ClusterProfile, Repository, Target, TrainingJob
from trainops.rules import RULES_BY_SLUG


def load(root: Path, checked: Callable[[], CheckedSpecs | None] | None = None) -> Repository:
    """`checked`: which job specs to check, asked once they are read (`--changed`; None:
    every one)."""
    return load_repository(root, frozenset(RULES_BY_SLUG), checked)


def job_on_cluster(
    repo: Repository, job_name: str, cluster_name: str
) -> tuple[TrainingJob, ClusterProfile, Target]:
    """The job named on the command line, on the cluster named with `--cluster` (`top`,
    `preflight`): bad input, exit 2, when either is unknown or the job does not target it."""
    profile = repo.clusters.get(cluster_name)
    if profile is None:
        known = ", ".join(sorted(repo.clusters))
        raise InputError(Problem.about("--cluster", f"no cluster `{cluster_name}` ({known})"))
    job = next((j for j in repo.jobs if j.name == job_name), None)
    target = next((t for t in job.targets if t.cluster == profile.name), None) if job else None
    if job is None or target is None:
        raise InputError(
            Problem.about("JOB", f"no job `{job_name}` in jobs/ targets `{profile.name}`")
        )
    return job, profile, target
