"""A written job spec as the repository reads it: its keys in the order the shipped examples
use, and the spec loaded and checked against the cluster as `trainops render` will (schema,
file checks, core schemas at the cluster's version, the pod fence): what import writes
renders, or the object is refused."""

from __future__ import annotations

from typing import Any

import yaml

from trainops.core.errors import InputError, Problem
from trainops.core.yamlio import load_text
from trainops.jobspec.job import build_job
from trainops.jobspec.load import job_against_cluster
from trainops.jobspec.model import ClusterProfile
from trainops.jobspec.podtemplate import check_fields
from trainops.jobspec.problems import Collector

# The key order of a written spec: the way the shipped examples read.
KEY_ORDER = (
    "apiVersion",
    "kind",
    "name",
    "namespace",
    "framework",
    "image",
    "command",
    "args",
    "replicas",
    "gpusPerReplica",
    "resources",
    "elastic",
    "tensorflow",
    "mpi",
    "volumes",
    "sharedMemory",
    "env",
    "secretEnv",
    "metricsPort",
    "hostNetwork",
    "securityContext",
    "terminationGracePeriodSeconds",
    "runPolicy",
    "labels",
    "annotations",
    "imagePullSecrets",
    "serviceAccountName",
    "priorityClassName",
    "affinity",
    "podLabels",
    "podAnnotations",
    "extraVolumes",
    "extraVolumeMounts",
    "podTemplate",
    "replicaPodTemplates",
    "targets",
)


def ordered(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` in KEY_ORDER (a key it does not list last: never dropped)."""
    return {
        **{k: spec[k] for k in KEY_ORDER if k in spec},
        **{k: v for k, v in spec.items() if k not in KEY_ORDER},
    }


def load_spec(job: dict[str, Any], cluster: ClusterProfile, source: str) -> Any:
    """The job spec as the loader reads it; its problems (a bug or an unexpressible value)
    raised with the source object named."""
    text = yaml.safe_dump(job, sort_keys=False)
    (doc,) = load_text(text, f"jobs/{job['name']}.yaml")
    out = Collector(doc)
    built = build_job(doc, out)
    check_fields(doc.data, [cluster.kubernetes_version], out)
    problems = list(out.problems)
    if built is not None and not problems:
        problems = job_against_cluster(built, doc, cluster)
    if built is None or problems:
        raise InputError(
            [
                Problem.whole_file(
                    source,
                    f"the imported spec does not load ({p.message}); the object cannot be imported"
                    " as it is",
                )
                for p in problems
            ]
        )
    return built
