"""Typed model of the inputs: `TrainingJob` (jobs/*.yaml), `ClusterProfile` (clusters/*.yaml).

Everything here is already checked: the loader (`trainops.spec.load`) validates
the YAML against `schemas/*.schema.json` and the cross-field rules, with file and
line, before building these objects. Field docs mirror the schema descriptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Transport = Literal["rdma", "tcp"]
SchedulerKind = Literal["default", "volcano", "kueue"]
DeliveryTool = Literal["argocd", "flux"]
Precision = Literal["bf16", "fp16", "fp32"]

# ---------------------------------------------------------------- cluster profile


@dataclass(frozen=True)
class Rdma:
    """RDMA (InfiniBand / RoCE) settings NCCL needs on this cluster."""

    hca: str
    """NCCL_IB_HCA: the HCA name prefix, e.g. `mlx5`."""
    gid_index: int
    """NCCL_IB_GID_INDEX: 3 is RoCE v2 on most ConnectX setups."""
    gdr_level: str
    """NCCL_NET_GDR_LEVEL: 0-5 or LOC/PIX/PXB/PHB/SYS (how far GPUDirect RDMA may reach)."""
    device_resource: str
    """Extended resource of the RDMA device plugin, e.g. `rdma/rdma_shared_device_a`."""
    device_count: int = 1
    """How many RDMA devices each pod requests."""
    multus_network: str | None = None
    """Multus NetworkAttachmentDefinition for the RDMA interface (pod annotation), if any."""


@dataclass(frozen=True)
class Network:
    transport: Transport
    """`rdma`: NCCL over InfiniBand/RoCE; `tcp`: NCCL sockets only (IB disabled)."""
    socket_interface: str
    """NCCL_SOCKET_IFNAME: interface NCCL bootstraps (and on tcp, transfers) over."""
    allow_host_network: bool = False
    """Whether jobs may use `hostNetwork: true` on this cluster."""
    rdma: Rdma | None = None
    """Present exactly when transport is `rdma`."""


@dataclass(frozen=True)
class GpuProduct:
    name: str
    """Short name jobs use in `targets[].gpuProduct`, e.g. `a100-80gb`."""
    resource: str
    """Extended resource name, e.g. `nvidia.com/gpu`."""
    per_node: int
    """GPUs on one node: a replica may not ask for more."""
    node_selector: dict[str, str]
    """Node labels selecting this product (GPU feature discovery's `nvidia.com/gpu.product`)."""
    tolerations: tuple[dict[str, Any], ...] = ()
    """Tolerations for the taints on these nodes."""


@dataclass(frozen=True)
class Scheduler:
    kind: SchedulerKind
    """`volcano` (gang scheduling via PodGroup), `kueue` (queueing via LocalQueue) or `default`."""
    queue: str | None = None
    """Volcano queue, or Kueue LocalQueue name."""
    priority_class: str | None = None
    """Volcano priority class for the job's PodGroup, if any."""


@dataclass(frozen=True)
class Storage:
    default_class: str
    """StorageClass used for new claims that name none."""
    classes: tuple[str, ...]
    """Every StorageClass jobs may ask for on this cluster."""


@dataclass(frozen=True)
class Delivery:
    """How the cluster syncs its overlay (Argo CD or Flux)."""

    tool: DeliveryTool
    destination_server: str = "https://kubernetes.default.svc"
    """Argo CD destination server (the cluster's API URL as registered in Argo CD)."""
    destination_name: str | None = None
    """Argo CD destination cluster name (instead of the server URL)."""
    self_heal: bool = False
    """Argo CD automated self-heal / Flux's periodic re-apply of drifted objects."""
    prune: bool = True
    """Delete objects that were removed from Git."""


@dataclass(frozen=True)
class ClusterProfile:
    name: str
    file: str
    """The clusters/*.yaml file it came from."""
    kubernetes_version: str
    """`major.minor`, selects the core JSON Schemas used for validation."""
    network: Network
    gpus: tuple[GpuProduct, ...]
    scheduler: Scheduler
    storage: Storage
    namespaces: tuple[str, ...]
    """Namespaces training jobs may use on this cluster."""
    delivery: Delivery
    crds: str | None = None
    """Optional directory of real CRD YAML to validate against instead of `schemas/`."""
    policy: dict[str, str] = field(default_factory=dict)
    """Per-rule severity on this cluster: rule slug -> `error`, `warning` or `off`."""
    context: str | None = None
    """Kubeconfig context that reaches this cluster (the cluster-facing commands use it;
    `--context` overrides it; None: the kubeconfig's current-context). Names a context in
    the user's own kubeconfig: credentials never live in the repository."""

    def gpu(self, name: str) -> GpuProduct | None:
        return next((g for g in self.gpus if g.name == name), None)


# ---------------------------------------------------------------- training job


@dataclass(frozen=True)
class Volume:
    """A persistent volume mounted into every training container."""

    name: str
    """Volume name inside the pod (`dataset`, `checkpoints`, ...)."""
    mount_path: str
    read_only: bool
    claim_name: str
    """Claim to mount: an existing one, or the one we create (`<job>-<name>`)."""
    create: bool
    """True when we render the PersistentVolumeClaim ourselves."""
    size: str | None = None
    """Requested size of a created claim, e.g. `500Gi`."""
    storage_class: str | None = None
    """StorageClass of a created claim; None means the cluster's default."""
    access_mode: str = "ReadWriteMany"
    """Access mode of a created claim."""


@dataclass(frozen=True)
class Elastic:
    min_replicas: int
    max_replicas: int
    max_restarts: int
    """torchrun's --max-restarts: group restarts before the job fails."""


@dataclass(frozen=True)
class DeepSpeed:
    zero_stage: int
    precision: Precision
    micro_batch_per_gpu: int | None
    gradient_accumulation: int | None
    config: dict[str, Any] | None
    """A full DeepSpeed config given by the user; batch keys are checked, not trusted."""
    config_flag: str
    """Flag the training program takes the config path with (ours: `--deepspeed-config`)."""


@dataclass(frozen=True)
class DataSync:
    """An init container that fills the dataset volume before training (e.g. `aws s3 sync`)."""

    image: str
    command: tuple[str, ...]
    volume: str
    """Which job volume it writes to (mounted read-write in the init container only)."""
    env: dict[str, str] = field(default_factory=dict)
    secret_env: tuple[SecretEnv, ...] = ()


@dataclass(frozen=True)
class SecretEnv:
    name: str
    secret: str
    key: str


@dataclass(frozen=True)
class RunPolicy:
    clean_pod_policy: str
    """`All`, `Running` or `None`: which pods the operator deletes when the job finishes."""
    backoff_limit: int | None = None
    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None


@dataclass(frozen=True)
class Target:
    """One cluster the job runs on, with what differs there."""

    cluster: str
    gpu_product: str | None = None
    """GPU product name from the cluster profile; defaults to its only product."""
    replicas: int | None = None
    """Pods on this cluster (default: the job's `replicas`)."""
    env: dict[str, str] = field(default_factory=dict)
    """Extra env on this cluster (added after the job's own)."""


@dataclass(frozen=True)
class TrainingJob:
    name: str
    namespace: str
    file: str
    framework: Literal["pytorch"]
    image: str
    command: tuple[str, ...]
    """The training program as run by hand: `python -m trainer` or `python train.py`."""
    args: tuple[str, ...]
    replicas: int
    gpus_per_replica: int
    cpu: str
    memory: str
    elastic: Elastic | None
    deepspeed: DeepSpeed | None
    volumes: tuple[Volume, ...]
    data_sync: DataSync | None
    shared_memory: str
    env: dict[str, str]
    secret_env: tuple[SecretEnv, ...]
    metrics_port: int
    run_policy: RunPolicy
    targets: tuple[Target, ...]
    host_network: bool = False
    termination_grace_seconds: int = 300
    """SIGTERM to SIGKILL; the trainer checkpoints in it (Kubernetes' 30 s default is too short)."""
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------- repository settings


@dataclass(frozen=True)
class RepoSettings:
    """Repository-wide delivery settings (`trainops.yaml` at the root; all optional)."""

    repo_url: str = "https://github.com/example/trainops.git"
    """Git URL Argo CD and Flux pull this repository from."""
    revision: str = "main"
    """Branch (or tag) the clusters follow."""
    argocd_namespace: str = "argocd"
    """Namespace Argo CD runs in (ApplicationSet, AppProject and argocd-cm live there)."""
    argocd_project: str = "training"
    """Name of the AppProject that confines the training applications."""
    flux_namespace: str = "flux-system"
    """Namespace Flux runs in (GitRepository and Kustomizations live there)."""


@dataclass(frozen=True)
class Repository:
    """Everything under one repo root, loaded and checked."""

    settings: RepoSettings
    jobs: tuple[TrainingJob, ...]
    """Sorted by name."""
    clusters: dict[str, ClusterProfile]
    """By name; iterate `sorted(clusters)` for stable output."""

    def delivered_by(self, tool: DeliveryTool) -> list[ClusterProfile]:
        """Clusters synced by `tool` (Argo CD or Flux), by name."""
        return [
            self.clusters[n]
            for n in sorted(self.clusters)
            if self.clusters[n].delivery.tool == tool
        ]
