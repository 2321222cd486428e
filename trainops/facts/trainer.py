"""What Kubeflow Trainer v2 (TrainJob, (Cluster)TrainingRuntime, JobSet) reads and stamps.

Read from the v2.3.0 CRDs (`manifests/base/crds/trainer.kubeflow.org_*.yaml`), the default
runtimes (`manifests/base/runtimes/`) and the user guides:
https://www.kubeflow.org/docs/components/trainer/ and
https://github.com/kubeflow/trainer/tree/v2.3.0/pkg/apis/trainer/v1alpha1
"""

from __future__ import annotations

TRAINER_GROUP = "trainer.kubeflow.org"
TRAINER_API = f"{TRAINER_GROUP}/v1alpha1"
JOBSET_GROUP = "jobset.x-k8s.io"
TRAINJOB = "TrainJob"
TRAINING_RUNTIME = "TrainingRuntime"
CLUSTER_TRAINING_RUNTIME = "ClusterTrainingRuntime"
RUNTIME_KINDS = frozenset({TRAINING_RUNTIME, CLUSTER_TRAINING_RUNTIME})

# The operator a cluster profile names: `training-operator` (v1: PyTorchJob ...) or `trainer`
# (v2: TrainJob). trainops renders TrainJob for Trainer v2.3 and later: v2.3 replaced
# `podTemplateOverrides` with `runtimePatches`, which is what the renderer writes.
TRAINING_OPERATOR = "training-operator"
TRAINER = "trainer"
MIN_TRAINER_VERSION = (2, 3)

# The releases (major, minor) trainops renders for, per operator; any other is refused at load
# (issue 33 item 9: a profile's `operator.version` was read and ignored).
# - Training Operator: every field the renderer writes (`spec.nprocPerNode`, `elasticPolicy`,
#   `runPolicy.schedulingPolicy` with `minAvailable` and `queue`, `runPolicy.backoffLimit`) is
#   served by the PyTorchJob/TFJob/MPIJob CRDs of v1.7.0, v1.8.1 and v1.9.4
#   (`manifests/base/crds/kubeflow.org_*.yaml`; checked with `trainops validate --crds`), so
#   the output is the same for the three. v1.6.0 and earlier have no `spec.nprocPerNode`: the
#   API server prunes it (structural schema) and torchrun starts one process per pod. There is
#   no v1.10: v1 ended at v1.9 (Trainer v2 is `name: trainer`). Differences that do not change
#   the output: v1.7 validates in the controller (an invalid job gets an event, not an
#   admission error; the webhooks came in v1.8); v1.9 adds `runPolicy.managedBy`, which
#   trainops does not write.
# - Trainer: v2.3 replaced `podTemplateOverrides` with `runtimePatches`, which is what the
#   renderer writes; v2.3.x is the release the conformance ports (tests/conformance/
#   test_trainer_v2.py) are read from, so a later minor is refused until they are re-read.
SUPPORTED_RELEASES: dict[str, tuple[tuple[int, int], ...]] = {
    TRAINING_OPERATOR: ((1, 7), (1, 8), (1, 9)),
    TRAINER: ((2, 3),),
}

# The replicated job and container a torch runtime trains in; the Trainer's torch plugin
# injects PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR and PET_MASTER_PORT
# into this container only (envInjection can add others), and TrainJob `trainer.*` lands here.
NODE_JOB = "node"
NODE_CONTAINER = "node"
# The initializer jobs (and their containers) of a runtime, and the TrainJob's
# `spec.initializer` key each reads (`secretRef`, `env`, `storageUri`).
INITIALIZERS = {"dataset-initializer": "dataset", "model-initializer": "model"}
# The trainer plugin finds the step that trains by this label on the replicated job.
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
ANCESTOR_TRAINER = "trainer"
# A runtime's framework, read by the Kubeflow SDK to list runtimes.
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
# JobSet labels every pod it creates with its name (the TrainJob's name).
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
# The Trainer's torch plugin sets these in the node container (torch plugin, v2.3).
PET_ENV = frozenset(
    {"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"}
)

# Volcano: the queue of the PodGroup the Trainer creates comes from this annotation on the
# runtime's JobSet template (`spec.template.metadata.annotations`), which a TrainJob's runtime
# patch (`trainingRuntimeSpec.template.metadata.annotations`) may override; never from the
# TrainJob's own metadata (v2.3.0 `pkg/runtime/core/trainingruntime.go` newRuntimeInfo,
# `pkg/runtime/framework/plugins/volcano/volcano.go` Build). Without it: Volcano's `default`.
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"

# Which TrainJob fields no update may change, and who refuses them: facts/lifecycle.py.

# The Trainer's admission webhook stamps `runtimePatches[].time` on every create and update
# (observability only): never drift. Other managers (Kueue: `kueue.x-k8s.io/manager`) own
# their own runtimePatches entries (a list map keyed by `manager`).
PATCH_TIME_FIELD = "time"
KUEUE_PATCH_MANAGER = "kueue.x-k8s.io/manager"

# What a TrainJob's runtime patch may set on the pod of a replicated job, and nothing else
# (`PodSpecPatch`, `PodTemplatePatch`, `ContainerPatch` in pkg/apis/trainer/v1alpha1/
# trainjob_types.go at v2.3.0). The Trainer merges each patch into the runtime's JobSet
# template with Kubernetes' strategic merge patch (pkg/runtime/core/trainingruntime.go
# mergeRuntimePatches): maps merge, lists with a merge key (volumes, containers, env,
# volumeMounts, imagePullSecrets, schedulingGates) merge item by item, any other list
# (tolerations, capabilities) replaces the runtime's.
PATCH_POD_METADATA_FIELDS = frozenset({"labels", "annotations"})
PATCH_POD_SPEC_FIELDS = frozenset(
    {
        "affinity",
        "containers",
        "imagePullSecrets",
        "initContainers",
        "nodeSelector",
        "schedulingGates",
        "securityContext",
        "serviceAccountName",
        "terminationGracePeriodSeconds",
        "tolerations",
        "volumes",
    }
)
# A container patch names a container the runtime has (the jobset plugin's Validate refuses
# others, and so new containers) and may set only these; `env` never on `node` (its env is
# `spec.trainer.env`).
PATCH_CONTAINER_FIELDS = frozenset({"name", "env", "volumeMounts", "securityContext"})
# What `spec.trainer` sets on the node container, and the trainer field each is.
TRAINER_CONTAINER_FIELDS = {
    "image": "image",
    "command": "command",
    "args": "args",
    "env": "env",
    "resources": "resourcesPerNode",
}


def trainjob_running(status: object) -> bool:
    """Whether a TrainJob's pods run, from `status.jobsStatus` (it has no Running condition):
    some child Job is `ready` and none is `active` without being ready. JobSet v0.12.0
    (`calculateReplicatedJobStatuses`) counts a child Job `active` from its first Pending pod
    and `ready` once its ready and succeeded pods reach its parallelism, so `active` alone
    reads a gang waiting for GPUs as running. The Flux CEL and Argo CD Lua say the same."""
    jobs = status.get("jobsStatus") if isinstance(status, dict) else None
    entries = [j for j in jobs if isinstance(j, dict)] if isinstance(jobs, list) else []

    def count(entry: dict[str, object], key: str) -> int:
        value = entry.get(key)
        return value if isinstance(value, int) else 0

    return any(count(j, "ready") > 0 for j in entries) and all(
        count(j, "active") <= count(j, "ready") for j in entries
    )
