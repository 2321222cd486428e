"""Names a consumer refuses, on any manifests (`validate --manifests` reads jobs trainops did
not render; for its own jobs the loader refuses such a name first): the names each consumer
derives from a job's name, against the rule its code applies (`facts/derived_names.py`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_int, as_list, has_placeholder
from trainops.facts import derived_names as dn
from trainops.facts.trainer import ANCESTOR_LABEL, ANCESTOR_TRAINER
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

MPI_V2 = "kubeflow.org/v2beta1"


def _replicated(jobs: list[Any], trainer_nodes: int | None) -> list[tuple[str, int, int | None]]:
    """(name, replicas, completions of an Indexed job) per replicated job of a JobSet spec;
    the Trainer's node step counts `trainer_nodes` pods (it sets completions to numNodes)."""
    out = []
    for raw in jobs:
        job = as_dict(raw)
        template = as_dict(as_dict(job.get("template")).get("spec"))
        labels = as_dict(as_dict(as_dict(job.get("template")).get("metadata")).get("labels"))
        completions = as_int(template.get("completions"))
        if trainer_nodes is not None and labels.get(ANCESTOR_LABEL) == ANCESTOR_TRAINER:
            completions = trainer_nodes
        if template.get("completionMode", "Indexed") != "Indexed":  # JobSet's default
            completions = None
        out.append((str(job.get("name")), as_int(job.get("replicas")) or 1, completions))
    return out


def _trainjob_names(obj: Object) -> list[dn.DerivedName]:
    runtime = obj.runtime.spec if obj.runtime is not None else {}
    jobs = as_list(as_dict(as_dict(runtime.get("template")).get("spec")).get("replicatedJobs"))
    nodes = as_int(as_dict(obj.spec.get("trainer")).get("numNodes")) or as_int(
        as_dict(runtime.get("mlPolicy")).get("numNodes")
    )
    return dn.trainjob_names(obj.name, _replicated(jobs, nodes or 1))


def derived(obj: Object) -> list[dn.DerivedName]:
    """The names the consumer of `obj` derives from its name."""
    if obj.is_trainjob:
        return _trainjob_names(obj)
    if obj.is_jobset:
        names = dn.trainjob_names(
            obj.name, _replicated(as_list(obj.spec.get("replicatedJobs")), None)
        )
        return names[1:]  # a JobSet's own name is a DNS-1123 subdomain
    if obj.kind == "Service" and obj.group == "":
        return [dn.service_name(obj.name)]
    if not obj.is_kubeflow_job:
        return []
    specs = as_dict(obj.spec.get(obj.replica_key))
    if obj.manifest.api_version == MPI_V2:
        worker = as_dict(specs.get("Worker"))
        return dn.mpi_operator_names(obj.name, as_int(worker.get("replicas")) or 0)
    counts = {str(t): as_int(as_dict(s).get("replicas")) or 1 for t, s in specs.items()}
    elastic = obj.elastic_range
    if elastic is not None and "Worker" in counts:
        counts["Worker"] = max(counts["Worker"], elastic[1])
    return dn.training_operator_names(obj.kind, obj.name, counts)


def _refused(obj: Object, ctx: Context) -> Iterator[Violation]:
    if has_placeholder(obj.name):
        return  # a template's name (`${RUN_NAME}`): the name applied is not known here
    refused = dn.refused(derived(obj))
    if refused:
        name, why = refused[0]
        yield Violation(
            f"{name.what} `{name.name}` is {why}: the {name.consumer} refuses it"
            f" ({name.source}); "
            + ("shorten the name" if name.problem_is_length() else "start the name with a letter"),
            ("metadata", "name"),
        )


RULES = (
    Rule(
        slug="name-refused",
        code="TO406",
        severity=Severity.ERROR,
        summary="A job or Service name its consumer refuses, or from which it derives a name it"
        " refuses (a Service per replica, an MPI host name, a JobSet's Job and pod names).",
        why="The schemas accept any DNS subdomain, but the Training Operator's webhooks, the"
        " TrainJob CRD and Service names want a DNS-1035 label (starting with a letter, at most"
        " 63 characters), and the MPI Operator and JobSet refuse a job whose derived host, Job"
        " or pod names pass 63 characters: the job is refused at apply, or dropped without a"
        " status.",
        fix="Rename the job: start with a letter, and keep it short enough for its longest"
        " derived name (`<name>-worker-<n>`, `<name>-node-0-<n>-abcde`).",
        example="metadata: {name: 7b-resnet}  # a PyTorchJob",
        check=_refused,
        references=(
            "https://github.com/kubeflow/mpi-operator/blob/v0.8.0/pkg/apis/kubeflow/validation/"
            "validation.go",
            "https://github.com/kubernetes-sigs/jobset/blob/v0.12.0/pkg/webhooks/jobset_webhook.go",
        ),
    ),
)
