"""Typed model of the inputs: `TrainingJob` (jobs/*.yaml), and `ClusterProfile` (clusters/*.yaml,
defined in `trainops.jobspec.profile`) and `Repository` (`trainops.jobspec.repository`), re-exported
here.

Everything here is already checked: the loader (`trainops.jobspec.load`) validates
the YAML against `trainops/schemas/*.schema.json` and the cross-field rules, with file and
line, before building these objects. Field docs mirror the schema descriptions; defaults are
the schema's own (`trainops.jobspec.schemas.default`), never restated here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from trainops.core.errors import Problem
from trainops.facts import deepspeed as ds_facts
from trainops.facts import zero_tuning
from trainops.jobspec.model_shape import ModelSize
from trainops.jobspec.profile import (
    Capacity,
    ClusterProfile,
    Delivery,
    GpuProduct,
    Installed,
    Monitoring,
    Network,
    Notification,
    Operator,
    PodSecurityLevel,
    ProvidedByPlatform,
    Rdma,
    Scheduler,
    Storage,
)
from trainops.jobspec.repository import PlatformObject, RepoSettings, Repository
from trainops.jobspec.roles import Mpi, Role, TensorFlow
from trainops.jobspec.schemas import JOB, default

__all__ = [
    "Capacity",
    "ClusterProfile",
    "DataSync",
    "DeepSpeed",
    "Delivery",
    "Elastic",
    "GpuProduct",
    "Installed",
    "ModelSize",
    "Monitoring",
    "Mpi",
    "Network",
    "Notification",
    "Operator",
    "PlatformObject",
    "PodOverrides",
    "PodSecurity",
    "PodSecurityLevel",
    "Precision",
    "ProvidedByPlatform",
    "Rdma",
    "RepoSettings",
    "Repository",
    "Role",
    "RunPolicy",
    "Scheduler",
    "SecretEnv",
    "Storage",
    "Target",
    "TensorFlow",
    "TrainingJob",
    "Volume",
]

Precision = Literal["bf16", "fp16", "fp32"]


@dataclass(frozen=True)
class Volume:
    """A persistent volume mounted into every training container."""

    name: str
    """Volume name inside the pod (`dataset`, `checkpoints`, ...)."""
    mount_path: str
    """Where the training container sees it."""
    read_only: bool
    """Mounted read-only in the training container (default: true for `dataset`)."""
    claim_name: str
    """Claim to mount: an existing one, or the one we create (`<job>-<name>`)."""
    create: bool
    """True when we render the PersistentVolumeClaim ourselves."""
    size: str | None = None
    """Requested size of a created claim, e.g. `500Gi`."""
    storage_class: str | None = None
    """StorageClass of a created claim; None means the cluster's default."""
    access_mode: str = default(JOB, "volumes.*.accessMode")
    """Access mode of a created claim."""


@dataclass(frozen=True)
class Elastic:
    min_replicas: int
    """Fewest pods the job keeps training with."""
    max_replicas: int
    """Most pods the job scales to."""
    max_restarts: int
    """torchrun's --max-restarts: group restarts before the job fails."""


@dataclass(frozen=True)
class DeepSpeed:
    zero_stage: int
    """ZeRO stage 0-3 (optimizer states, gradients, parameters partitioned)."""
    precision: Precision
    """`bf16`, `fp16` or `fp32`: which of DeepSpeed's precision blocks is enabled."""
    micro_batch_per_gpu: int | None
    """`train_micro_batch_size_per_gpu`; None leaves it to `config` (or 1)."""
    gradient_accumulation: int | None
    """`gradient_accumulation_steps`; None leaves it to `config` (or 1)."""
    config: dict[str, Any] | None
    """A full DeepSpeed config given by the user; batch keys are checked, not trusted."""
    config_flag: str
    """Flag the training program takes the config path with (ours: `--deepspeed-config`)."""


@dataclass(frozen=True)
class DataSync:
    """An init container that fills the dataset volume before training (e.g. `aws s3 sync`)."""

    image: str
    """Image of the init container, e.g. `amazon/aws-cli:2.17.0`."""
    command: tuple[str, ...]
    """Its command, e.g. `[aws, s3, sync, s3://bucket/data, /data]` (keep it idempotent)."""
    volume: str
    """Which job volume it writes to (mounted read-write in the init container only)."""
    env: dict[str, str] = field(default_factory=dict)
    """Plain env of the init container."""
    secret_env: tuple[SecretEnv, ...] = ()
    """Env of the init container from Secrets (secretKeyRef)."""


@dataclass(frozen=True)
class SecretEnv:
    name: str
    """The environment variable."""
    secret: str
    """The Secret in the job's namespace."""
    key: str
    """The key inside the Secret."""


@dataclass(frozen=True)
class RunPolicy:
    clean_pod_policy: str
    """`All`, `Running` or `None`: which pods the operator deletes when the job finishes."""
    backoff_limit: int | None = None
    """Pod restarts before the operator marks the job failed."""
    active_deadline_seconds: int | None = None
    """Wall-clock limit after which the operator fails the job."""
    ttl_seconds_after_finished: int | None = None
    """Delete the job this long after it finishes (GitOps re-creates it: `gitops-rerun-risk`)."""


@dataclass(frozen=True)
class PodSecurity:
    """Who the pods run as (the pod `securityContext`)."""

    run_as_user: int = default(JOB, "securityContext.runAsUser")
    """uid of every container; the trainer image's USER. 0 renders runAsNonRoot: false."""
    run_as_group: int = default(JOB, "securityContext.runAsGroup")
    """Primary gid of every container."""
    fs_group: int = default(JOB, "securityContext.fsGroup")
    """gid the kubelet gives mounted volumes: without it a new claim is root-owned and the
    non-root trainer's first checkpoint write fails with permission denied."""
    read_only_root_filesystem: bool = default(JOB, "securityContext.readOnlyRootFilesystem")
    """Every container's root filesystem read-only; what programs write goes to the job's
    volumes and the /tmp and $HOME emptyDirs (`render.pod.scratch`)."""


@dataclass(frozen=True)
class PodOverrides:
    """What a job adds to the pods trainops renders: the first-class pod fields, then the
    escape hatch (`podTemplate`, `replicaPodTemplates`), merged in that order
    (`trainops.render.overrides`). Each dict is a piece of a core PodTemplateSpec, already
    checked against the core schema of every target cluster's Kubernetes version."""

    image_pull_secrets: tuple[str, ...] = ()
    """Secrets the kubelet pulls images with (`imagePullSecrets`, by name)."""
    service_account_name: str | None = None
    """ServiceAccount of every pod; None: the namespace's default."""
    priority_class_name: str | None = None
    """PriorityClass of every pod; None: the cluster's default priority."""
    affinity: dict[str, Any] | None = None
    """Core `Affinity` of every pod."""
    labels: dict[str, str] = field(default_factory=dict)
    """Labels on every pod."""
    annotations: dict[str, str] = field(default_factory=dict)
    """Annotations on every pod."""
    volumes: tuple[dict[str, Any], ...] = ()
    """More pod volumes (core `Volume`)."""
    volume_mounts: tuple[dict[str, Any], ...] = ()
    """More mounts of the training container (core `VolumeMount`)."""
    sidecars: tuple[dict[str, Any], ...] = ()
    """Helper containers (core `Container`), rendered as native sidecars."""
    template: dict[str, Any] | None = None
    """The escape hatch for every replica type: a partial core PodTemplateSpec."""
    by_replica: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The escape hatch for one replica type (`Master`, `Worker`, ...), merged last."""


@dataclass(frozen=True)
class Target:
    """One cluster the job runs on, with what differs there."""

    cluster: str
    """Name of a cluster profile (`clusters/<name>.yaml`)."""
    gpu_product: str | None = None
    """GPU product name from the cluster profile, or its node label's value; defaults to its
    only product."""
    replicas: int | None = None
    """Pods on this cluster (default: the job's `replicas`)."""
    env: dict[str, str] = field(default_factory=dict)
    """Env on this cluster: replaces the job's variable of the same name, adds the others."""


@dataclass(frozen=True)
class TrainingJob:
    name: str
    """The job's name, equal to its file name; every rendered object derives from it."""
    namespace: str
    """Namespace the job runs in; every target cluster must allow it."""
    file: str
    """The jobs/*.yaml file it came from (findings and generated headers name it)."""
    framework: Literal["pytorch", "tensorflow", "mpi"]
    """`pytorch` (PyTorchJob), `tensorflow` (TFJob) or `mpi` (MPIJob)."""
    image: str
    """The training image, pinned by tag or digest."""
    command: tuple[str, ...]
    """The training program as run by hand: `python -m trainer` or `python train.py`; empty:
    the image's ENTRYPOINT runs with `args` (no torchrun is generated)."""
    args: tuple[str, ...]
    """The program's arguments, as strings."""
    replicas: int
    """Pods at the configured size (Master + Workers, or Workers of an elastic job)."""
    gpus_per_replica: int
    """GPUs per pod; also torchrun's processes per pod (`nprocPerNode`)."""
    cpu: str | None
    """CPU request per pod (a Kubernetes quantity); None: no request."""
    memory: str | None
    """Memory request and limit per pod (a Kubernetes quantity); None: neither."""
    elastic: Elastic | None
    """Elastic range and restarts (torchrun c10d rendezvous); None for a fixed size."""
    deepspeed: DeepSpeed | None
    """DeepSpeed settings; None for plain DDP."""
    volumes: tuple[Volume, ...]
    """Persistent volumes mounted into every training container."""
    data_sync: DataSync | None
    """An init container filling the dataset volume; None without one."""
    shared_memory: str
    """Size of the in-memory /dev/shm (DataLoader workers and NCCL use it)."""
    env: dict[str, str]
    """Plain env of the training container, values as written."""
    secret_env: tuple[SecretEnv, ...]
    """Env of the training container from Secrets (secretKeyRef only)."""
    metrics_port: int
    """Port the trainer serves Prometheus metrics on (LOCAL_RANK 0 of each pod)."""
    run_policy: RunPolicy
    """The operator's run policy: clean-up, restarts, deadline, TTL."""
    targets: tuple[Target, ...]
    """The clusters the job runs on, with what differs on each."""
    host_network: bool = default(JOB, "hostNetwork")
    """Pods on the host network (only where the cluster allows it)."""
    termination_grace_seconds: int = default(JOB, "terminationGracePeriodSeconds")
    """SIGTERM to SIGKILL; the trainer checkpoints in it (Kubernetes' 30 s default is too short)."""
    labels: dict[str, str] = field(default_factory=dict)
    """Labels added to every rendered object."""
    annotations: dict[str, str] = field(default_factory=dict)
    """Annotations added to the training job object."""
    security: PodSecurity = field(default_factory=PodSecurity)
    """The pod securityContext's user, group and volume group."""
    tensorflow: TensorFlow | None = None
    """TFJob roles; set exactly when `framework` is `tensorflow`."""
    mpi: Mpi | None = None
    """MPIJob settings; set exactly when `framework` is `mpi`."""
    pod: PodOverrides = field(default_factory=PodOverrides)
    """What the job adds to its pods: first-class pod fields and the escape hatch."""
    model: ModelSize | None = None
    """What the job trains (`model:`): the memory estimate and DeepSpeed's sizes."""
    notes: tuple[Problem, ...] = ()
    """What the loader changed and says so (file:line): a YAML 1.1 string such as `5e8` read
    as the number DeepSpeed wants (`spec/deepspeed_config.py`). `render` prints them, `validate`
    reports them as `spec` warnings."""

    def pods_on(self, target: Target | None) -> int:
        """Pods at the configured size on `target` (its `replicas`, else the job's)."""
        return (target.replicas if target and target.replicas else None) or self.replicas

    def replica_counts(self, target: Target | None) -> dict[str, int]:
        """Pods per replica type of the job's PyTorchJob/TFJob/MPIJob on `target` at the most it
        can have (an elastic job's Workers up to `maxReplicas`): the names its operator derives
        (`facts/derived_names.py`). tests/jobspec/test_consumer_names.py holds it to the
        rendered objects."""
        pods = self.pods_on(target)
        tf = self.tensorflow
        if tf is not None:
            counts = {"Chief": 1, "Worker": pods - 1} if tf.chief else {"Worker": pods}
            if tf.parameter_servers is not None:
                counts["PS"] = tf.parameter_servers.replicas
            if tf.evaluator is not None:
                counts["Evaluator"] = 1
        elif self.mpi is not None:
            counts = {"Launcher": 1, "Worker": pods}
        elif self.elastic is not None:
            counts = {"Worker": max(pods, self.elastic.max_replicas)}
        else:
            counts = {"Master": 1, "Worker": pods - 1}
        return {rtype: n for rtype, n in counts.items() if n > 0}

    def roles(self) -> tuple[Role, ...]:
        """The extra roles beside the training pods (parameter servers, Evaluator, Launcher)."""
        tf, mpi = self.tensorflow, self.mpi
        out = [tf.parameter_servers, tf.evaluator] if tf else []
        out += [mpi.launcher] if mpi else []
        return tuple(r for r in out if r is not None)

    def gpus_on(self, target: Target | None) -> int:
        """GPUs the job holds at its configured size on `target`, every role counted."""
        training = self.gpus_per_replica * self.pods_on(target)
        return training + sum(r.gpus * r.replicas for r in self.roles())

    def serves_trainer_metrics(self) -> bool:
        """Whether the pods run our trainer's metrics server (TRAINOPS_METRICS_PORT): not ranks
        of `mpi.rankProgram: executable` (all_reduce_perf, a binary), which serve nothing there,
        so no metrics port, Service, ServiceMonitor, monitoring ingress or alerts for them."""
        return self.mpi is None or self.mpi.rank_program != "executable"

    def slots(self) -> int:
        """Processes per training pod: torchrun's nprocPerNode, MPI's slotsPerWorker."""
        return max(self.gpus_per_replica, 1)

    def world_sizes(self, target: Target) -> range:
        """Every data-parallel world size the job can run at on `target`."""
        elastic = (self.elastic.min_replicas, self.elastic.max_replicas) if self.elastic else None
        return ds_facts.world_sizes(max(self.gpus_per_replica, 1), self.pods_on(target), elastic)

    def deepspeed_config(self) -> dict[str, Any] | None:
        """The DeepSpeed config the job runs with (None without DeepSpeed)."""
        ds = self.deepspeed
        if ds is None:
            return None
        hidden = self.model.hidden_size if self.model else None
        return ds_facts.build_config(
            ds.zero_stage,
            ds.precision,
            ds.micro_batch_per_gpu,
            ds.gradient_accumulation,
            ds.config,
            tuned=zero_tuning.generated(ds.zero_stage, hidden),
        )
