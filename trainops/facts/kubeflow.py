"""What the Kubeflow Training Operator v1 (and the MPI Operator) do: the job kinds and where
their replica specs live, the restart policy a replica gets when it names none, the labels and
the env they put on the pods they create.

Read from the operator's source (v1.9, `kubeflow/trainer` release-1.9):
`pkg/controller.v1/pytorch/envvar.go` (setPodEnv), `master.go` (MasterEnvVarGenerator),
`elastic.go` (ElasticEnvVarGenerator), `pkg/controller.v1/tensorflow/tensorflow.go`
(TF_CONFIG), `pkg/controller.v1/mpi/mpijob_controller.go`; and the MPI Operator v2beta1
`pkg/controller/mpi_job_controller.go`.
https://github.com/kubeflow/trainer/blob/release-1.9/pkg/controller.v1/pytorch/envvar.go
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainops.core.values import as_dict, as_int
from trainops.facts.trainer import NODE_CONTAINER, TRAINJOB

KUBEFLOW_GROUP = "kubeflow.org"
KUBEFLOW_VERSION = "v1"
# The Training Operator finds the training container of a PyTorchJob by this name.
PYTORCH_CONTAINER = "pytorch"
# The Training Operator writes TF_CONFIG into the container of this name only (TFJob).
TENSORFLOW_CONTAINER = "tensorflow"
# The MPI Operator takes the first container of each replica; these are its examples' names.
MPI_LAUNCHER_CONTAINER = "mpi-launcher"
MPI_WORKER_CONTAINER = "mpi-worker"
# The training container: the one each controller configures by name (the PyTorchJob's port
# and env, TF_CONFIG, a TrainJob's `trainer` fields), else the first (the MPI Operator takes
# the first; the PyTorchJob defaulter falls back to it: getDefaultContainerIndex).
TRAINING_CONTAINER: dict[str, str] = {
    "PyTorchJob": PYTORCH_CONTAINER,
    "TFJob": TENSORFLOW_CONTAINER,
    TRAINJOB: NODE_CONTAINER,
}
# MPIJob APIs: the MPI Operator's (SSH, mpiImplementation) and the Training Operator's v1.
MPIJOB_V2BETA1 = "kubeflow.org/v2beta1"
MPIJOB_V1 = "kubeflow.org/v1"
# Who serves `mpijobs.kubeflow.org` in which version (a profile's `installed.mpiJobs`): the MPI
# Operator v0.8 (v2beta1) or the Training Operator v1.9 (v1); both install the same CRD name,
# so a cluster runs one of them.
MPIJOB_SERVED_BY = {"mpi-operator": MPIJOB_V2BETA1, "training-operator": MPIJOB_V1}
# Where the MPI Operator (v2beta1) mounts the hostfile in the Launcher, the env naming it per
# implementation, and the Workers' default command when none is given
# (kubeflow/mpi-operator pkg/controller/mpi_job_controller.go: configMountPath, hostfileName,
# ompiEnvVars / intelEnvVars / mpichEnvVars, newWorker).
MPI_HOSTFILE = "/etc/mpi/hostfile"
MPI_HOSTFILE_ENV = {
    "OpenMPI": "OMPI_MCA_orte_default_hostfile",
    "Intel": "I_MPI_HYDRA_HOST_FILE",
    "MPICH": "HYDRA_HOST_FILE",
}
MPI_WORKER_DEFAULT_COMMAND = ("/usr/sbin/sshd", "-De")


def mpi_worker_host(job: str, namespace: str, index: int) -> str:
    """The host name of MPI Worker `index` as the MPI Operator's hostfile lists it: the pod's
    hostname under the job's headless Service (`<job>-worker-<i>.<job>.<ns>.svc`)."""
    return f"{job}-worker-{index}.{job}.{namespace}.svc"


# Label the operator puts on every pod of a job (its value: the job's name).
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
# A pod's part in the job: the MPI Operator v2beta1 (v0.8, mpi_job_controller.go
# `defaultLabels`) says `launcher`/`worker` in the role label; the Training Operator v1 says the
# replica type, lower-cased, in the replica-type label.
JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
REPLICA_TYPE_LABEL = "training.kubeflow.org/replica-type"


@dataclass(frozen=True)
class JobKind:
    """A Kubeflow Training Operator job kind."""

    kind: str
    replica_specs: str
    """Field under `spec` holding the replica types (Master/Worker, Chief/PS/Worker, ...)."""
    versions: tuple[str, ...] = (KUBEFLOW_VERSION,)
    """API versions served for it: MPIJob has the MPI Operator's v2beta1 beside v1."""

    @property
    def api_version(self) -> str:
        return f"{KUBEFLOW_GROUP}/{KUBEFLOW_VERSION}"

    @property
    def api_versions(self) -> tuple[str, ...]:
        return tuple(f"{KUBEFLOW_GROUP}/{v}" for v in self.versions)


# The job kinds the GitOps health checks and the diff know. They share the training
# operator's JobCondition types (Created, Running, Restarting, Succeeded, Failed, Suspended):
# https://github.com/kubeflow/trainer/blob/v1.9.4/pkg/apis/kubeflow.org/v1/common_types.go
TRAINING_JOB_KINDS: tuple[JobKind, ...] = (
    JobKind("PyTorchJob", "pytorchReplicaSpecs"),
    JobKind("TFJob", "tfReplicaSpecs"),
    JobKind("MPIJob", "mpiReplicaSpecs", ("v1", "v2beta1")),
)

# Kubeflow Training Operator v1 kinds -> the key holding their replica specs.
# https://github.com/kubeflow/trainer/tree/release-1.9/pkg/apis/kubeflow.org/v1
KUBEFLOW_REPLICA_KEYS: dict[str, str] = {
    "PyTorchJob": "pytorchReplicaSpecs",
    "TFJob": "tfReplicaSpecs",
    "MPIJob": "mpiReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs",
    "PaddleJob": "paddleReplicaSpecs",
    "JAXJob": "jaxReplicaSpecs",
}

# The replica types of the kinds trainops renders, in the operators' spelling.
REPLICA_TYPES: dict[str, tuple[str, ...]] = {
    "PyTorchJob": ("Master", "Worker"),
    "TFJob": ("Chief", "Worker", "PS", "Evaluator"),
    "MPIJob": ("Launcher", "Worker"),
}

# `replicas` of a replica spec that names none (setDefaultReplicas, every kind).
DEFAULT_REPLICAS = 1

# What the PyTorchJob defaulter adds (release-1.9 pkg/apis/kubeflow.org/v1/pytorch_defaults.go
# and pytorch_types.go): a port named `pytorchjob-port` on the `pytorch` container when it
# declares none (PyTorchJobDefaultPort / PyTorchJobDefaultPortName); `spec.nprocPerNode` when
# absent, "auto" (torchrun counts the GPUs; DefaultNprocPerNode); and the rendezvous backend
# the elastic env names when `rdzvBackend` is unset (BackendC10D, elastic.go).
PYTORCH_DEFAULT_PORT = 23456
PYTORCH_PORT_NAME = "pytorchjob-port"
PYTORCH_DEFAULT_NPROC_PER_NODE = "auto"
DEFAULT_RDZV_BACKEND = "c10d"


def elastic_range(spec: Mapping[str, Any]) -> tuple[int, int] | None:
    """A PyTorchJob's elastic range, [minReplicas, maxReplicas], as the operator's defaulter
    completes it (release-1.9 pytorch_defaults.go `setElasticPolicy`, the one convention every
    reader uses): both written, as written; only one written, the other takes its value; neither,
    both are the Worker replicas (themselves defaulted to 1). None without an `elasticPolicy`.
    https://github.com/kubeflow/trainer/blob/v1.9.4/pkg/apis/kubeflow.org/v1/pytorch_defaults.go
    """
    policy = spec.get("elasticPolicy")
    if not isinstance(policy, dict):
        return None
    low, high = as_int(policy.get("minReplicas")), as_int(policy.get("maxReplicas"))
    if low is not None and high is not None:
        return low, high
    if high is not None:
        return high, high
    if low is not None:
        return low, low
    workers = as_int(
        as_dict(as_dict(spec.get("pytorchReplicaSpecs")).get("Worker")).get("replicas")
    )
    count = DEFAULT_REPLICAS if workers is None else workers
    return count, count


# The job kind each spec `framework` renders to (the v1 operators; Trainer v2 renders a TrainJob).
FRAMEWORK_KINDS: dict[str, str] = {"pytorch": "PyTorchJob", "tensorflow": "TFJob", "mpi": "MPIJob"}


def set_elastic_range(spec: dict[str, Any], low: int, high: int) -> None:
    """Write [minReplicas, maxReplicas] into a PyTorchJob's elasticPolicy (which must exist):
    the keys `elastic_range` reads, kept beside it (run-local scales a job down with it)."""
    policy = spec["elasticPolicy"]
    policy["minReplicas"], policy["maxReplicas"] = low, high


# Replica types that do the work of a batch job and must end: `Always` restarts them forever.
# Master/Chief/Launcher drive the job; Worker/Evaluator compute. (PS servers too.)
LEADER_REPLICA_TYPES = frozenset({"master", "chief", "launcher"})

# The restart policy the operators give a replica whose spec names none, read from their
# defaulting code. Training Operator v1 (kubeflow/trainer release-1.9,
# pkg/apis/kubeflow.org/v1/<kind>_types.go `<Kind>DefaultRestartPolicy`, applied by
# <kind>_defaults.go): PyTorchJob and PaddleJob OnFailure; TFJob, XGBoostJob, JAXJob and
# MPIJob (Launcher and Worker) Never. MPI Operator v2beta1 (kubeflow/mpi-operator
# pkg/apis/kubeflow/v2beta1/default.go, constants.go): Launcher OnFailure, Worker Never.
# The CRDs cannot tell: their shared ReplicaSpec description says "Default to Never" for
# every kind, which the PyTorchJob/PaddleJob defaulting overrides.
# https://github.com/kubeflow/trainer/blob/release-1.9/pkg/apis/kubeflow.org/v1/tensorflow_types.go
# https://github.com/kubeflow/mpi-operator/blob/master/pkg/apis/kubeflow/v2beta1/default.go
DEFAULT_RESTART_POLICY: dict[str, str] = {
    "PyTorchJob": "OnFailure",
    "PaddleJob": "OnFailure",
    "TFJob": "Never",
    "XGBoostJob": "Never",
    "JAXJob": "Never",
    "MPIJob": "Never",
}
# (apiVersion, kind, lower-case replica type) -> default, where a replica type differs.
DEFAULT_RESTART_POLICY_BY_REPLICA: dict[tuple[str, str, str], str] = {
    ("kubeflow.org/v2beta1", "MPIJob", "launcher"): "OnFailure",
}


def default_restart_policy(api_version: str, kind: str, rtype: str) -> str:
    """The restart policy the operator defaults a replica of this job to."""
    key = (api_version, kind, rtype.lower())
    return DEFAULT_RESTART_POLICY_BY_REPLICA.get(key, DEFAULT_RESTART_POLICY.get(kind, "Never"))


# cleanPodPolicy when unset: the Training Operator (kubeflow.org/v1, every kind) defaults to
# None; the MPI Operator (kubeflow.org/v2beta1) to Running. (The CRDs' field descriptions.)
CLEAN_POD_POLICY_DEFAULT: dict[str, str] = {"kubeflow.org/v2beta1": "Running"}


def default_clean_pod_policy(api_version: str) -> str:
    return CLEAN_POD_POLICY_DEFAULT.get(api_version, "None")


# Rendezvous backends torchrun accepts and the operator's elasticPolicy enumerates.
# https://github.com/kubeflow/trainer/blob/release-1.9/pkg/apis/kubeflow.org/v1/pytorch_types.go
RDZV_BACKENDS = frozenset({"c10d", "etcd", "etcd-v2"})

# Set in every PyTorchJob container.
PYTORCH_ALWAYS = frozenset({"PYTHONUNBUFFERED"})
# Set only when the job has a Master replica (MasterEnvVarGenerator + rank/world size).
PYTORCH_WITH_MASTER = frozenset(
    {"MASTER_ADDR", "MASTER_PORT", "PET_MASTER_ADDR", "PET_MASTER_PORT", "WORLD_SIZE", "RANK",
     "PET_NODE_RANK"}
)  # fmt: skip
# Set when elasticPolicy is present (always, then depending on the fields set).
PYTORCH_ELASTIC = frozenset({"PET_RDZV_ENDPOINT", "PET_RDZV_BACKEND", "PET_NNODES"})
PYTORCH_ELASTIC_OPTIONAL = {
    "maxRestarts": "PET_MAX_RESTARTS",
    "nProcPerNode": "PET_NPROC_PER_NODE",
    "rdzvId": "PET_RDZV_ID",
    "rdzvConf": "PET_RDZV_CONF",
    "standalone": "PET_STANDALONE",
}
TFJOB = frozenset({"TF_CONFIG"})
# MPI Operator (v1 and v2beta1): hostfile and ssh agent settings for OpenMPI / Intel MPI / MPICH.
MPIJOB = frozenset(
    {"OMPI_MCA_orte_keep_fqdn_hostnames", "OMPI_MCA_orte_default_hostfile",
     "OMPI_MCA_plm_rsh_args", "OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_set_default_slots",
     "I_MPI_HYDRA_HOST_FILE", "I_MPI_HYDRA_BOOTSTRAP", "I_MPI_HYDRA_BOOTSTRAP_EXEC",
     "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "I_MPI_PERHOST", "HYDRA_HOST_FILE",
     "HYDRA_LAUNCHER_EXTRA_ARGS", "K_MPI_JOB_ROLE", "NVIDIA_VISIBLE_DEVICES",
     "NVIDIA_DRIVER_CAPABILITIES"}
)  # fmt: skip


def operator_env_names(kind: str, spec: dict[str, Any]) -> frozenset[str] | None:
    """Names of the env the operator sets in every container of a job of this kind and shape
    (their values, for a PyTorchJob: `trainops.runlocal.operator_env`).

    None when we do not model the kind's env (the rule then stays silent).
    """
    if kind == "PyTorchJob":
        names = set(PYTORCH_ALWAYS)
        replicas = spec.get("pytorchReplicaSpecs")
        if isinstance(replicas, dict) and "Master" in replicas:
            names |= PYTORCH_WITH_MASTER
        if spec.get("nprocPerNode") is not None:
            names.add("PET_NPROC_PER_NODE")
        elastic = spec.get("elasticPolicy")
        if isinstance(elastic, dict):
            names |= PYTORCH_ELASTIC
            names |= {env for key, env in PYTORCH_ELASTIC_OPTIONAL.items() if key in elastic}
        else:
            names.add("PET_NNODES")
        return frozenset(names)
    if kind == "TFJob":
        return TFJOB
    if kind == "MPIJob":
        return MPIJOB
    return None


# API versions the operators no longer serve: the API server rejects these objects outright.
# (kind, apiVersion) -> what replaces it. MPIJob v1alpha1/v1alpha2 were dropped by the MPI
# Operator (v2beta1 since 0.3, with kubeflow.org/v1 in the Training Operator); TFJob and
# PyTorchJob v1beta1/v1beta2 went with Training Operator 1.0's kubeflow.org/v1.
# https://github.com/kubeflow/mpi-operator#installation, https://github.com/kubeflow/trainer/releases/tag/v1.0.0
REMOVED_APIS: dict[tuple[str, str], str] = {
    ("MPIJob", "kubeflow.org/v1alpha1"): "kubeflow.org/v2beta1 (mpiReplicaSpecs Launcher/Worker)",
    ("MPIJob", "kubeflow.org/v1alpha2"): "kubeflow.org/v2beta1 (same mpiReplicaSpecs)",
    ("TFJob", "kubeflow.org/v1alpha1"): "kubeflow.org/v1 (tfReplicaSpecs by replica type)",
    ("TFJob", "kubeflow.org/v1alpha2"): "kubeflow.org/v1 (same tfReplicaSpecs)",
    ("TFJob", "kubeflow.org/v1beta1"): "kubeflow.org/v1 (same tfReplicaSpecs)",
    ("TFJob", "kubeflow.org/v1beta2"): "kubeflow.org/v1 (same tfReplicaSpecs)",
    ("PyTorchJob", "kubeflow.org/v1alpha2"): "kubeflow.org/v1 (same pytorchReplicaSpecs)",
    ("PyTorchJob", "kubeflow.org/v1beta1"): "kubeflow.org/v1 (same pytorchReplicaSpecs)",
    ("PyTorchJob", "kubeflow.org/v1beta2"): "kubeflow.org/v1 (same pytorchReplicaSpecs)",
}
