"""The names the consumers of a training job derive from its name, and the rule each must meet,
read from each consumer's code at the release trainops supports (issue 33 item 3: `7b-resnet`
rendered, validated and was refused by every operator).

- Kubeflow Training Operator (github.com/kubeflow/trainer, tag v1.9.4): the PyTorchJob and
  TFJob webhooks refuse a name that is not a DNS-1035 label (`pkg/webhooks/pytorch/
  pytorchjob_webhook.go:79`, `pkg/webhooks/tensorflow/tfjob_webhook.go:74`
  `NameIsDNS1035Label`); for each replica the operator creates a Service named
  `<job>-<replica type, lower case>-<index>` (`pkg/controller.v1/common/service.go:243`
  `GenGeneralName`), and the API server takes only a DNS-1035 label as a Service's name. The
  MPIJob v1 controller makes no Services and checks no name (`pkg/apis/kubeflow.org/v1/
  mpi_validation.go`).
- MPI Operator (github.com/kubeflow/mpi-operator, v0.8): `ValidateMPIJob` refuses a job whose
  last worker's host name `<job>-worker-<replicas - 1>` is not a DNS-1035 label
  (`pkg/apis/kubeflow/validation/validation.go:55` validateMPIJobName), and the controller drops
  such a job without a status; the launcher is the batch Job `<job>-launcher` with that
  `hostname` (`pkg/controller/mpi_job_controller.go:1574`), a DNS-1123 label; the job's
  headless Service is `<job>` itself (`:1575`, the pods' subdomain).
- Kubeflow Trainer v2.3.0: the TrainJob CRD's CEL rules want a DNS-1035 label of at most 63
  characters (`pkg/apis/trainer/v1alpha1/trainjob_types.go:36`); the JobSet it creates has
  the TrainJob's name, and JobSet v0.12.0's webhook (`pkg/webhooks/jobset_webhook.go:236` and
  `:249`) refuses it unless `<jobset>-<replicated job>-<replicas - 1>` and, for an Indexed job
  with completions (the default mode, `:121`; the Trainer sets completions to the node count,
  `pkg/runtime/framework/plugins/jobset/jobset.go:317`),
  `<jobset>-<replicated job>-<job index>-<pod index>-abcde` are DNS-1035 labels.
- trainops' own Service `<job>-metrics`: a Service name, so a DNS-1035 label.

PodGroups (the Training Operator's, the MPI Operator's and the Trainer's volcano plugin's are
named after the job) and ConfigMaps (`<job>-deepspeed-<hash>`, the MPI Operator's
`<job>-config`) are DNS-1123 subdomains (253 characters): a job name that passes the rules
above passes theirs. A claim trainops creates is named by `claimName` or `<job>-<volume>`: a
DNS-1123 subdomain too, checked as written (`claim_name`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DNS1035 = "DNS-1035 label"
DNS1123_LABEL = "DNS-1123 label"
DNS1123_SUBDOMAIN = "DNS-1123 subdomain"
MAX_LABEL = 63
MAX_SUBDOMAIN = 253
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# JobSet's webhook adds this to the deterministic part of a pod's name (pod names get a random
# five-character suffix).
JOBSET_POD_SUFFIX = "-abcde"

TRAINING_OPERATOR = "Training Operator v1.9"
MPI_OPERATOR = "MPI Operator v0.8"
TRAINER = "Trainer v2.3 (JobSet v0.12)"
METRICS_SERVICE = "trainops' metrics Service"


@dataclass(frozen=True)
class DerivedName:
    name: str
    rule: str
    """`DNS1035` or `DNS1123_LABEL`."""
    what: str
    """What the consumer names so, e.g. `the Service of Worker 9`."""
    consumer: str
    source: str
    """Where the consumer's code says so (repository path:line at its release)."""

    def _limits(self) -> tuple[re.Pattern[str], int]:
        if self.rule == DNS1123_SUBDOMAIN:
            return _DNS1123_SUBDOMAIN, MAX_SUBDOMAIN
        return (_DNS1035 if self.rule == DNS1035 else _DNS1123_LABEL), MAX_LABEL

    def problem_is_length(self) -> bool:
        """Whether the name fails only by its length (a shorter job name fixes it)."""
        pattern, most = self._limits()
        return len(self.name) > most and bool(pattern.match(self.name))

    def problem(self) -> str | None:
        """Why the consumer refuses the name (the API machinery's wording), None if it takes it."""
        pattern, most = self._limits()
        if len(self.name) > most:
            return f"longer than {most} characters ({len(self.name)})"
        if not pattern.match(self.name):
            start = "a letter" if self.rule == DNS1035 else "a letter or digit"
            dots = ", '.' between labels" if self.rule == DNS1123_SUBDOMAIN else ""
            return (
                f"not a {self.rule} (lower-case letters, digits and '-'{dots}, starting with"
                f" {start} and ending with a letter or digit)"
            )
        return None


def training_operator_names(kind: str, job: str, replicas: dict[str, int]) -> list[DerivedName]:
    """PyTorchJob/TFJob: the job's name and the Service of each replica type's last replica."""
    webhook = {
        "PyTorchJob": "kubeflow/trainer@v1.9.4 pkg/webhooks/pytorch/pytorchjob_webhook.go:79",
        "TFJob": "kubeflow/trainer@v1.9.4 pkg/webhooks/tensorflow/tfjob_webhook.go:74",
    }
    if kind not in webhook:  # MPIJob v1: no Services, no name check
        return []
    out = [DerivedName(job, DNS1035, f"the {kind}'s name", TRAINING_OPERATOR, webhook[kind])]
    for rtype, count in sorted(replicas.items()):
        if count > 0:
            out.append(
                DerivedName(
                    f"{job}-{rtype.lower()}-{count - 1}",
                    DNS1035,
                    f"the Service of {rtype} {count - 1}",
                    TRAINING_OPERATOR,
                    "kubeflow/trainer@v1.9.4 pkg/controller.v1/common/service.go:243",
                )
            )
    return out


def mpi_operator_names(job: str, workers: int) -> list[DerivedName]:
    """MPIJob v2beta1: the last worker's host name (what ValidateMPIJob checks), the launcher's."""
    last = max(workers, 1) - 1  # validateMPIJobName: replicas when > 0, else 1
    source = "kubeflow/mpi-operator@v0.8.0 "
    return [
        DerivedName(
            f"{job}-worker-{last}",
            DNS1035,
            f"the host name of worker {last}",
            MPI_OPERATOR,
            source + "pkg/apis/kubeflow/validation/validation.go:64",
        ),
        DerivedName(
            f"{job}-launcher",
            DNS1123_LABEL,
            "the launcher's Job and host name",
            MPI_OPERATOR,
            source + "pkg/controller/mpi_job_controller.go:1574",
        ),
    ]


def trainjob_names(job: str, replicated: list[tuple[str, int, int | None]]) -> list[DerivedName]:
    """TrainJob: its name, and per replicated job of its runtime (name, replicas, completions:
    the node count for the trainer's) the JobSet's longest Job and pod names."""
    out = [
        DerivedName(
            job,
            DNS1035,
            "the TrainJob's name",
            TRAINER,
            "kubeflow/trainer@v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go:36",
        )
    ]
    webhook = "kubernetes-sigs/jobset@v0.12.0 pkg/webhooks/jobset_webhook.go"
    for name, replicas, completions in replicated:
        out.append(
            DerivedName(
                f"{job}-{name}-{replicas - 1}",
                DNS1035,
                f"the JobSet's Job `{name}` {replicas - 1}",
                TRAINER,
                f"{webhook}:236",
            )
        )
        if completions is not None:
            out.append(
                DerivedName(
                    f"{job}-{name}-{replicas - 1}-{completions - 1}{JOBSET_POD_SUFFIX}",
                    DNS1035,
                    f"the pod names of `{name}` (with JobSet's 5-character suffix)",
                    TRAINER,
                    f"{webhook}:249",
                )
            )
    return out


def metrics_service_name(job: str, suffix: str) -> DerivedName:
    return service_name(f"{job}{suffix}", METRICS_SERVICE)


def service_name(name: str, what: str = "the Service's name") -> DerivedName:
    return DerivedName(
        name,
        DNS1035,
        what,
        "API server (a Service's name)",
        "k8s.io/kubernetes pkg/apis/core/validation ValidateServiceName (NameIsDNS1035Label)",
    )


def claim_name(name: str) -> DerivedName:
    """A PersistentVolumeClaim trainops creates: the API server wants a DNS-1123 subdomain
    (k8s.io/kubernetes `pkg/apis/core/validation` ValidatePersistentVolumeClaim)."""
    return DerivedName(
        name,
        DNS1123_SUBDOMAIN,
        "the claim's name",
        "API server (a PersistentVolumeClaim's name)",
        "k8s.io/kubernetes pkg/apis/core/validation ValidatePersistentVolumeClaim",
    )


def refused(names: list[DerivedName]) -> list[tuple[DerivedName, str]]:
    """The names their consumer refuses, with why."""
    return [(n, p) for n in names if (p := n.problem()) is not None]
