"""Typed model of a cluster profile (clusters/*.yaml): `ClusterProfile` and its parts.

Already checked when built (`trainops.jobspec.cluster`); defaults are the schema's own
(`trainops.jobspec.schemas.default`), never restated here. `trainops.jobspec.model` re-exports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from trainops.facts import capacity as capacity_facts
from trainops.facts import schedulers as scheduler_facts
from trainops.facts.pod_fence import PodFence
from trainops.facts.trainer import TRAINER
from trainops.jobspec.schemas import CLUSTER, default

Transport = Literal["rdma", "tcp"]
SchedulerKind = Literal["default", "volcano", "kueue"]
DeliveryTool = Literal["argocd", "flux"]
OperatorName = Literal["training-operator", "trainer"]


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
    device_count: int = default(CLUSTER, "network.rdma.deviceCount")
    """How many RDMA devices each pod requests."""
    multus_network: str | None = None
    """Multus NetworkAttachmentDefinition for the RDMA interface (pod annotation), if any."""


@dataclass(frozen=True)
class Network:
    transport: Transport
    """`rdma`: NCCL over InfiniBand/RoCE; `tcp`: NCCL sockets only (IB disabled)."""
    socket_interface: str
    """NCCL_SOCKET_IFNAME: interface NCCL bootstraps (and on tcp, transfers) over."""
    allow_host_network: bool = default(CLUSTER, "network.allowHostNetwork")
    """Whether jobs may use `hostNetwork: true` on this cluster."""
    rdma: Rdma | None = None
    """Present exactly when transport is `rdma`."""

    @property
    def is_rdma(self) -> bool:
        """NCCL over InfiniBand/RoCE (`transport: rdma`, with `rdma` set); else TCP sockets.
        Every reader asks this, so the transport's spelling lives here and in the loader."""
        return self.transport == "rdma"


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
class Operator:
    """Which Kubeflow operator runs the cluster's training jobs."""

    name: OperatorName
    """`training-operator` (v1: PyTorchJob) or `trainer` (v2: TrainJob + runtimes)."""
    version: str
    """Its release, `major.minor[.patch]`."""

    @property
    def trainer_v2(self) -> bool:
        return self.name == TRAINER


@dataclass(frozen=True)
class Installed:
    """What the cluster runs besides the training operator, at which release
    (`installed:`): which jobs Kueue manages, which MPIJob API the cluster serves."""

    kueue_version: str = default(CLUSTER, "installed.kueue.version")
    """Kueue's release, `0.minor[.patch]` (read where the scheduler is Kueue)."""
    kueue_integrations: frozenset[str] | None = None
    """Kueue's enabled `integrations.frameworks` as declared; None: the release's default."""
    mpi_jobs: Literal["mpi-operator", "training-operator"] = default(CLUSTER, "installed.mpiJobs")
    """Who serves `mpijobs.kubeflow.org`: the MPI Operator (v2beta1) or the Training
    Operator (v1)."""

    @property
    def kueue_minor(self) -> tuple[int, int]:
        major, minor = self.kueue_version.split(".")[:2]
        return int(major), int(minor)

    @property
    def kueue_frameworks(self) -> frozenset[str]:
        """The job integrations Kueue manages here: as declared, else the release's default."""
        if self.kueue_integrations is not None:
            return self.kueue_integrations
        return scheduler_facts.kueue_default_integrations(self.kueue_minor)


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
    """`argocd` or `flux`."""
    destination_server: str = default(CLUSTER, "delivery.server")
    """Argo CD destination server (the cluster's API URL as registered in Argo CD)."""
    destination_name: str | None = None
    """Argo CD destination cluster name (instead of the server URL)."""
    self_heal: bool = default(CLUSTER, "delivery.selfHeal")
    """Argo CD automated self-heal / Flux's periodic re-apply of drifted objects."""
    prune: bool = default(CLUSTER, "delivery.prune")
    """Delete objects that were removed from Git."""


@dataclass(frozen=True)
class Capacity:
    """What a cluster has (`capacity:`), for `trainops capacity`, `gang-unschedulable` and the
    report; a product or queue missing here is one they cannot judge, not one that fits."""

    nodes: dict[str, int] = field(default_factory=dict)
    """Nodes per GPU product name (GPUs = nodes x the product's `per_node`)."""
    queue_gpus: dict[str, int] = field(default_factory=dict)
    """Nominal GPU quota per queue name (Kueue LocalQueue's ClusterQueue, Volcano queue)."""


@dataclass(frozen=True)
class PodSecurityLevel:
    """The Pod Security Standards level the cluster's training namespaces enforce."""

    level: Literal["baseline", "restricted", "privileged"] = default(CLUSTER, "podSecurity.level")
    """The namespaces' enforce label: `restricted`, `baseline` or `privileged`
    (https://kubernetes.io/docs/concepts/security/pod-security-standards/)."""
    allow_capabilities: tuple[str, ...] = ()
    """What a `privileged` namespace is for: capabilities beyond baseline (RDMA's IPC_LOCK)."""
    allow_host_paths: tuple[str, ...] = ()
    """What a `privileged` namespace is for: hostPath directories (and everything under them)."""


@dataclass(frozen=True)
class ProvidedByPlatform:
    """Platform objects the profile names that the platform installs outside this repository
    (`providedByPlatform`); everything else it names comes from `clusters/<name>/manifests/`."""

    queues: tuple[str, ...] = ()
    """`scheduler.queue` names: a Volcano Queue, or a Kueue LocalQueue in each namespace."""
    networks: tuple[str, ...] = ()
    """`network.rdma.multusNetwork` names: a NetworkAttachmentDefinition in each namespace."""
    priority_classes: tuple[str, ...] = ()
    """`scheduler.priorityClass` names: a PriorityClass."""


@dataclass(frozen=True)
class Monitoring:
    """How training is watched on this cluster (`monitoring:`, docs/monitoring.md)."""

    dashboard_namespace: str
    """The training namespace holding the dashboard ConfigMap (default: the first one)."""
    alerts: bool = default(CLUSTER, "monitoring.alerts")
    """Render the training alerts as a PrometheusRule per training namespace with jobs."""
    prometheus_labels: dict[str, str] = field(default_factory=dict)
    """Labels the cluster's Prometheus selects ServiceMonitors and PrometheusRules by (its
    `serviceMonitorSelector` and `ruleSelector`; kube-prometheus-stack: `release`)."""
    rule_labels: dict[str, str] = field(default_factory=dict)
    """Labels on the PrometheusRules only, beside `prometheus_labels`."""
    stalled_minutes: float = default(CLUSTER, "monitoring.stalledMinutes")
    """Minutes without a completed optimizer step before TrainingStalled fires (a fraction
    allowed: a local test's 15 s)."""
    restarts_per_hour: int = default(CLUSTER, "monitoring.restartsPerHour")
    """Elastic restarts within an hour that fire TrainingRestarting."""
    gpu_utilization_below: float = default(CLUSTER, "monitoring.gpuUtilizationBelow")
    """Mean GPU utilisation (percent) below which, for 30 minutes, TrainingGpuUnderutilized
    fires."""
    dashboard: Literal["configmap", "grafanaOperator", "none"] = default(
        CLUSTER, "monitoring.dashboard"
    )
    """`configmap` (the Grafana sidecar's labelled ConfigMap), `grafanaOperator` (a
    GrafanaDashboard) or `none`."""
    grafana_instance_selector: dict[str, str] = field(default_factory=dict)
    """`grafanaOperator`: the labels of the Grafana instances that import the dashboard."""
    prometheus_url: str | None = None
    """Where `trainops top` queries Prometheus: a URL, or an API server service-proxy path."""
    nccl_tests_image: str | None = None
    """`trainops preflight`: the nccl-tests image (all_reduce_perf with MPI, sshd)."""
    min_bus_bandwidth_gbps: float | None = None
    """`trainops preflight`: all_reduce_perf's bus bandwidth (GB/s) at its largest message must
    reach this."""


@dataclass(frozen=True)
class Notification:
    """Where the cluster's sync and job-failure notifications go (`notifications[]`)."""

    name: str
    """Unique in the profile: names the Flux Provider/Alert or the Argo CD service."""
    type: Literal["slack", "webhook", "github"]
    """Slack channel, generic webhook, or GitHub commit status."""
    secret: str
    """Flux: the Secret (in the Flux namespace) with `token`/`address`; Argo CD: the key of
    `argocd-notifications-secret`. Named only: never rendered."""
    channel: str | None = None
    """`slack`: the channel."""
    events: tuple[str, ...] = ()
    """`slack`/`webhook`: `sync-failed`, `job-failed`."""
    repository: str | None = None
    """`github`: the repository whose commit statuses are set; None: the repository's."""
    github_app: tuple[int, int] | None = None
    """`github` on Argo CD: (appID, installationID) of the GitHub App."""


@dataclass(frozen=True)
class ClusterProfile:
    name: str
    """The profile's name, equal to its file name; jobs name it in `targets[].cluster`."""
    file: str
    """The clusters/*.yaml file it came from."""
    kubernetes_version: str
    """`major.minor`, selects the core JSON Schemas used for validation."""
    network: Network
    """How pods talk: RDMA or TCP, the socket interface, hostNetwork."""
    gpus: tuple[GpuProduct, ...]
    """The GPU products of this cluster, each with its node selector and tolerations."""
    scheduler: Scheduler
    """Who places the pods: Volcano (gang), Kueue (queueing) or kube-scheduler."""
    storage: Storage
    """Storage classes for the claims jobs create."""
    namespaces: tuple[str, ...]
    """Namespaces training jobs may use on this cluster."""
    delivery: Delivery
    """How the overlay reaches the cluster (Argo CD or Flux)."""
    operator: Operator = field(default_factory=lambda: Operator(**default(CLUSTER, "operator")))
    """The Kubeflow operator of this cluster: jobs render to PyTorchJob (v1) or TrainJob (v2)."""
    crds: str | None = None
    """Optional directory of real CRD YAML to validate against instead of `schemas/`."""
    policy: dict[str, str] = field(default_factory=dict)
    """Per-rule severity on this cluster: rule slug -> `error`, `warning` or `off`."""
    context: str | None = None
    """Kubeconfig context that reaches this cluster (the cluster-facing commands use it;
    `--context` overrides it; None: the kubeconfig's current-context). Names a context in
    the user's own kubeconfig: credentials never live in the repository."""
    capacity: Capacity = field(default_factory=Capacity)
    """Declared nodes per GPU product and GPU quota per queue (empty: not declared)."""
    pod_security: PodSecurityLevel = field(default_factory=PodSecurityLevel)
    """The Pod Security level (and declared exceptions) the `pod-security` rule checks."""
    monitoring_namespace: str = default(CLUSTER, "monitoringNamespace")
    """Where the Prometheus scraping the jobs runs: the only namespace the jobs'
    NetworkPolicy admits to the metrics port."""
    provided_by_platform: ProvidedByPlatform = field(default_factory=ProvidedByPlatform)
    """The queues, networks and priority classes the platform installs (not delivered here)."""
    job_access: PodFence = field(default_factory=PodFence)
    """What job pods may ask for beyond what trainops renders (`jobAccess` with the
    profile's own scheduler, priority class and GPU tolerations): `facts/pod_fence.py`."""
    installed: Installed = field(default_factory=Installed)
    """Kueue's release and integrations, and who serves MPIJob (validation follows it)."""
    monitoring: Monitoring | None = None
    """Alerts, dashboard and the Prometheus of `trainops top` (None: built without a loader,
    as some tests do: read it through `watch`)."""
    notifications: tuple[Notification, ...] = ()
    """Where sync and job-failure notifications go (Flux Provider/Alert, Argo CD services)."""

    @property
    def watch(self) -> Monitoring:
        """The monitoring settings, the schema's defaults where the profile has none."""
        return self.monitoring or Monitoring(dashboard_namespace=self.namespaces[0])

    def gpu(self, name: str) -> GpuProduct | None:
        """The product `name` names: its short name, or (what `trainops build` and
        `kubectl get nodes` show) the one value of its node labels, e.g.
        `NVIDIA-H100-80GB-HBM3`; None when it names none, or several."""
        found = next((g for g in self.gpus if g.name == name), None)
        labelled = [g for g in self.gpus if name in g.node_selector.values()]
        return found or (labelled[0] if len(labelled) == 1 else None)

    def capacity_products(self) -> tuple[capacity_facts.Product, ...]:
        """The GPU products with their declared nodes (None where not declared)."""
        return tuple(
            capacity_facts.Product(
                g.name, g.resource, g.per_node, g.node_selector, self.capacity.nodes.get(g.name)
            )
            for g in self.gpus
        )


# ---------------------------------------------------------------- training job
