"""What the consumers accept when a job that already exists changes: the fields they refuse to
update, and who refuses, at the releases trainops supports.

An update a consumer refuses fails the GitOps tool's dry run: Argo CD v3.5.1 with
`ServerSideDiff=true` dry-runs every object to compare (`controller/state.go`
`CompareAppState`: a failed `StateDiffs` marks every resource of the Application Unknown, and
`appcontroller.go` `autoSync` syncs only an OutOfSync Application, so the whole cluster stops
syncing); Flux kustomize-controller v1.9.4 dry-runs a stage before applying any of it
(fluxcd/pkg ssa v0.76.1 `ApplyAll`: one refusal fails the stage). trainops therefore never
sends such an update: a changed job is a new run under a new name (docs/gitops.md, "A
changed job"), and `trainops diff` refuses the rest at review time.

Paths are tuples of keys from the object's root; `*` is any list item or map value.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainops.facts.kubeflow import KUBEFLOW_GROUP
from trainops.facts.schedulers import KUEUE_QUEUE_LABEL
from trainops.facts.trainer import TRAINER_API, TRAINJOB

Path = tuple[str, ...]


@dataclass(frozen=True)
class Immutable:
    """A field a consumer refuses to change on an existing object."""

    path: Path
    who: str
    """The consumer and where it says so, for the message."""
    while_running: bool = False
    """Refused only while the job runs (accepted while Kueue holds it suspended)."""


# Who refuses, as the diff names them. Where each says so: kubeflow/trainer v1.9.4
# manifests/base/crds/kubeflow.org_{pytorch,tf,mpi}jobs.yaml (`x-kubernetes-validations`);
# pkg/webhooks/tensorflow/tfjob_webhook.go ValidateUpdate -> pkg/common/util/webhooks.go
# ValidateRunPolicyUpdate; kubeflow/trainer v2.3.0 pkg/apis/trainer/v1alpha1/trainjob_types.go
# and pkg/runtime/framework/plugins/jobset/jobset.go Validate (runtimePatches); kubernetes-sigs/
# kueue pkg/controller/jobframework/validation.go validateUpdateForQueueName (v0.9 to v0.19).
_V1_CRD = "the API server (Training Operator v1.9.4 {kind} CRD: self == oldSelf)"
_TFJOB_WEBHOOK = "the Training Operator v1.9.4 TFJob webhook (ValidateRunPolicyUpdate)"
_TRAINJOB_CRD = "the API server (Kubeflow Trainer v2.3.0 TrainJob CRD: self == oldSelf)"
_TRAINJOB_WEBHOOK = (
    "the Kubeflow Trainer v2.3.0 TrainJob webhook (runtime patches change only while suspended)"
)
_KUEUE = "Kueue's job webhook (validateUpdateForQueueName: only while the job is suspended)"

_QUEUE: Path = ("spec", "runPolicy", "schedulingPolicy", "queue")
_PATCH_POD: Path = (
    "spec", "runtimePatches", "*", "trainingRuntimeSpec", "template", "spec", "replicatedJobs",
    "*", "template", "spec", "template", "spec",
)  # fmt: skip

# (apiVersion, kind) -> what the API server and the operator's webhooks refuse to change.
# PyTorchJob's webhook at v1.9.4 compares the new object with itself (`oldJob :=
# newObj.(...)` in pytorchjob_webhook.go ValidateUpdate), so it refuses no update; the MPI
# Operator v0.8 (v2beta1) has no webhook and its CRD no transition rule; MPIJob v1 has no
# webhook in the Training Operator v1.9.4.
IMMUTABLE: dict[tuple[str, str], tuple[Immutable, ...]] = {
    (f"{KUBEFLOW_GROUP}/v1", "PyTorchJob"): (Immutable(_QUEUE, _V1_CRD.format(kind="PyTorchJob")),),
    (f"{KUBEFLOW_GROUP}/v1", "TFJob"): (
        Immutable(_QUEUE, _V1_CRD.format(kind="TFJob")),
        Immutable(("spec", "runPolicy", "managedBy"), _TFJOB_WEBHOOK),
    ),
    (f"{KUBEFLOW_GROUP}/v1", "MPIJob"): (Immutable(_QUEUE, _V1_CRD.format(kind="MPIJob")),),
    (f"{KUBEFLOW_GROUP}/v2beta1", "MPIJob"): (),
    (TRAINER_API, TRAINJOB): (
        *(
            Immutable(("spec", field), _TRAINJOB_CRD)
            for field in (
                "activeDeadlineSeconds",
                "initializer",
                "managedBy",
                "runtimeRef",
                "trainer",
            )
        ),
        Immutable(("spec", "runtimePatches", "*", "manager"), _TRAINJOB_CRD),
        *(
            Immutable((*_PATCH_POD, field), _TRAINJOB_CRD)
            for field in (
                "containers",
                "imagePullSecrets",
                "initContainers",
                "securityContext",
                "serviceAccountName",
                "terminationGracePeriodSeconds",
                "volumes",
            )
        ),
        Immutable(("spec", "runtimePatches"), _TRAINJOB_WEBHOOK, while_running=True),
    ),
}

# On a Kueue cluster, every job kind Kueue manages: its queue label.
KUEUE_IMMUTABLE = Immutable(("metadata", "labels", KUEUE_QUEUE_LABEL), _KUEUE, while_running=True)


def immutable_fields(api_version: str, kind: str, kueue: bool) -> tuple[Immutable, ...]:
    """The fields of a job of this kind that no update may change (`kueue`: the cluster runs
    Kueue, whose webhook adds the queue label)."""
    found = IMMUTABLE.get((api_version, kind), ())
    return (*found, KUEUE_IMMUTABLE) if kueue else found


def matches(pattern: Path, path: Path) -> bool:
    """Whether a changed field `path` lies at or under `pattern` (`*`: any one key)."""
    if len(path) < len(pattern):
        return False
    return all(p in ("*", k) for p, k in zip(pattern, path, strict=False))
