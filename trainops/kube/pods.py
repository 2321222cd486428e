"""A pod template and its containers as the kubelet will run them: argv (command + args),
env (with what `valueFrom` and `envFrom` provide), resources after defaulting, mounts, GPUs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from trainops.core.manifest import FieldPath as Path
from trainops.core.values import as_dict, as_list
from trainops.facts import gpus as gpu_facts
from trainops.facts.workloads import OTHER_ACCELERATOR
from trainops.kube.lazy import lazy


class GpuProduct(Protocol):
    @property
    def resource(self) -> str: ...


class DeclaresGpus(Protocol):
    """What the views need of a cluster profile (`trainops.jobspec.model.ClusterProfile`): the
    GPU products it declares. A protocol, so this layer stays below the spec."""

    @property
    def gpus(self) -> Sequence[GpuProduct]: ...


def gpu_products(cluster: DeclaresGpus | None) -> frozenset[str]:
    """The GPU resources a cluster profile declares (beyond the device plugins' well-known)."""
    return frozenset(g.resource for g in cluster.gpus) if cluster else frozenset()


def requests_accelerator(pod: PodTemplate, cluster: DeclaresGpus | None = None) -> bool:
    """Whether the pod gets an accelerator: a GPU, another device plugin's accelerator
    (Gaudi, Neuron, TPU), a resource whose name ends in a GPU model (`nvidia.com/a40`, as some
    clusters advertise them), or a dynamic resource claim (DRA), which we cannot see into."""
    if pod.gpus(cluster) or pod.spec.get("resourceClaims"):
        return True
    return any(
        OTHER_ACCELERATOR.match(str(name)) or str(name).startswith("nvidia.com/")
        for c in pod.containers(init=True)
        for name in c.effective_requests()
    )


def training_container_index(containers: list[Any], name: str) -> int:
    """Which container the operator configures (its port, for a PyTorchJob): the one named
    `name` (`pytorch`), else the first. Training Operator v1.9.4
    `pkg/apis/kubeflow.org/v1/defaulting_utils.go` getDefaultContainerIndex."""
    names = [as_dict(c).get("name") for c in containers]
    return names.index(name) if name in names else 0


@dataclass(frozen=True)
class EnvVar:
    name: str
    value: str | None
    """Literal value; None when it comes from `valueFrom`."""
    value_from: dict[str, Any] | None
    path: Path


@dataclass(frozen=True)
class Container:
    """One container of a pod template, paths relative to the object."""

    data: dict[str, Any]
    path: Path
    init: bool
    memo: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """What readers computed from `data` once (`trainops.kube.launch.launches`)."""

    @property
    def name(self) -> str:
        return str(self.data.get("name", ""))

    @property
    def image(self) -> str | None:
        image = self.data.get("image")
        return str(image) if image is not None else None

    @lazy
    def argv(self) -> list[tuple[str, Path]]:
        """command + args as the kubelet joins them, each word with its path."""
        words: list[tuple[str, Path]] = []
        for key in ("command", "args"):
            for i, word in enumerate(as_list(self.data.get(key))):
                words.append((str(word), (*self.path, key, i)))
        return words

    @lazy
    def env(self) -> dict[str, EnvVar]:
        result: dict[str, EnvVar] = {}
        for i, raw in enumerate(as_list(self.data.get("env"))):
            item = as_dict(raw)
            name = item.get("name")
            if not isinstance(name, str):
                continue
            value = item.get("value")
            result[name] = EnvVar(
                name,
                None if value is None else str(value),
                as_dict(item.get("valueFrom")) or None,
                (*self.path, "env", i),
            )
        return result

    @property
    def has_env_from(self) -> bool:
        return bool(as_list(self.data.get("envFrom")))

    @property
    def resources(self) -> dict[str, Any]:
        return as_dict(self.data.get("resources"))

    @property
    def limits(self) -> dict[str, Any]:
        return as_dict(self.resources.get("limits"))

    @property
    def requests(self) -> dict[str, Any]:
        return as_dict(self.resources.get("requests"))

    def effective_requests(self) -> dict[str, Any]:
        """Requests after API defaulting: a resource with only a limit requests its limit."""
        return {**self.limits, **self.requests}

    @property
    def volume_mounts(self) -> list[dict[str, Any]]:
        return [as_dict(m) for m in as_list(self.data.get("volumeMounts"))]

    @property
    def security_context(self) -> dict[str, Any]:
        return as_dict(self.data.get("securityContext"))

    def ports(self) -> list[dict[str, Any]]:
        return [as_dict(p) for p in as_list(self.data.get("ports"))]


@dataclass(frozen=True)
class PodTemplate:
    """A pod template inside an object: a replica spec, a task, or a workload's template."""

    template: dict[str, Any]
    path: Path
    """Path of the template (`metadata` + `spec`) inside the object."""
    replica_type: str | None = None
    """`Master`, `Worker`, `Launcher`, ... as written; None outside replica specs."""
    replicas: int | None = None
    """Pods created from this template (defaulted to 1 where the operator defaults it)."""
    restart_policy: str | None = None
    """Effective restart policy (replica spec's, else the pod's, else the operator default)."""
    restart_policy_path: Path = ()
    restart_policy_explicit: bool = False
    extra_labels: dict[str, str] = field(default_factory=dict)
    """Labels the controller adds to the pods (the operator's `training.kubeflow.org/*`)."""

    @lazy
    def spec(self) -> dict[str, Any]:
        return as_dict(self.template.get("spec"))

    @lazy
    def spec_path(self) -> Path:
        return (*self.path, "spec")

    @lazy
    def metadata(self) -> dict[str, Any]:
        return as_dict(self.template.get("metadata"))

    @lazy
    def labels(self) -> dict[str, str]:
        own = {str(k): str(v) for k, v in as_dict(self.metadata.get("labels")).items()}
        return {**own, **self.extra_labels}

    @lazy
    def annotations(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in as_dict(self.metadata.get("annotations")).items()}

    @property
    def rtype(self) -> str:
        """Lower-case replica type, `` outside replica specs."""
        return (self.replica_type or "").lower()

    def containers(self, init: bool = False) -> list[Container]:
        return self._with_init if init else self._containers

    @lazy
    def _containers(self) -> list[Container]:
        return [
            Container(as_dict(c), (*self.spec_path, "containers", i), False)
            for i, c in enumerate(as_list(self.spec.get("containers")))
        ]

    @lazy
    def _with_init(self) -> list[Container]:
        return self._containers + [
            Container(as_dict(c), (*self.spec_path, "initContainers", i), True)
            for i, c in enumerate(as_list(self.spec.get("initContainers")))
        ]

    @lazy
    def volumes(self) -> dict[str, tuple[dict[str, Any], Path]]:
        return {
            str(as_dict(v).get("name")): (as_dict(v), (*self.spec_path, "volumes", i))
            for i, v in enumerate(as_list(self.spec.get("volumes")))
        }

    @lazy
    def _gpu_counts(self) -> dict[frozenset[str], int]:
        return {}

    def gpus(self, cluster: DeclaresGpus | None = None) -> int:
        """GPUs one pod of this template gets (`trainops.facts.gpus.pod_gpus`), counted once
        per set of declared GPU resources: a dozen rules ask for every pod."""
        products = gpu_products(cluster)
        counts = self._gpu_counts
        if products not in counts:
            counts[products] = gpu_facts.pod_gpus(self.spec, products)
        return counts[products]

    @property
    def scheduler_name(self) -> str | None:
        name = self.spec.get("schedulerName")
        return str(name) if name is not None else None
