"""How the rules see manifests: the way the Training Operator (and the kubelet) will.

`Object` wraps one manifest and exposes its pod templates (the replica specs of a
PyTorchJob/TFJob/MPIJob/..., a Volcano Job's tasks, a Deployment's template, a
Pod's own spec) with the replica type, count and restart policy the operator
applies, and each container's argv (command + args together), env and
resources. `Context` holds the whole manifest set (ConfigMaps, Services,
PersistentVolumeClaims for cross-object rules) and the cluster profile.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Generic, TypeVar

from trainops.core.manifest import FieldPath as Path
from trainops.core.manifest import Manifest
from trainops.facts import gpus as gpu_facts
from trainops.facts.kubeflow import (
    KUBEFLOW_GROUP,
    KUBEFLOW_REPLICA_KEYS,
    LEADER_REPLICA_TYPES,
    default_restart_policy,
)
from trainops.spec.model import ClusterProfile

VOLCANO_JOB_GROUP = "batch.volcano.sh"

# Workload kinds of core Kubernetes whose pod template sits at a fixed path.
CORE_TEMPLATE_PATHS: dict[str, Path] = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


def gpu_products(cluster: ClusterProfile | None) -> frozenset[str]:
    """The GPU resources a cluster profile declares (beyond the device plugins' well-known)."""
    return frozenset(g.resource for g in cluster.gpus) if cluster else frozenset()


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int | None:
    """An int from YAML (`8` or `"8"`); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


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

    @property
    def name(self) -> str:
        return str(self.data.get("name", ""))

    @property
    def image(self) -> str | None:
        image = self.data.get("image")
        return str(image) if image is not None else None

    @cached_property
    def argv(self) -> list[tuple[str, Path]]:
        """command + args as the kubelet joins them, each word with its path."""
        words: list[tuple[str, Path]] = []
        for key in ("command", "args"):
            for i, word in enumerate(as_list(self.data.get(key))):
                words.append((str(word), (*self.path, key, i)))
        return words

    @cached_property
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

    @property
    def spec(self) -> dict[str, Any]:
        return as_dict(self.template.get("spec"))

    @property
    def spec_path(self) -> Path:
        return (*self.path, "spec")

    @property
    def metadata(self) -> dict[str, Any]:
        return as_dict(self.template.get("metadata"))

    @property
    def labels(self) -> dict[str, str]:
        own = {str(k): str(v) for k, v in as_dict(self.metadata.get("labels")).items()}
        return {**own, **self.extra_labels}

    @property
    def annotations(self) -> dict[str, str]:
        return {str(k): str(v) for k, v in as_dict(self.metadata.get("annotations")).items()}

    @property
    def rtype(self) -> str:
        """Lower-case replica type, `` outside replica specs."""
        return (self.replica_type or "").lower()

    def containers(self, init: bool = False) -> list[Container]:
        result = [
            Container(as_dict(c), (*self.spec_path, "containers", i), False)
            for i, c in enumerate(as_list(self.spec.get("containers")))
        ]
        if init:
            result += [
                Container(as_dict(c), (*self.spec_path, "initContainers", i), True)
                for i, c in enumerate(as_list(self.spec.get("initContainers")))
            ]
        return result

    @property
    def volumes(self) -> dict[str, tuple[dict[str, Any], Path]]:
        return {
            str(as_dict(v).get("name")): (as_dict(v), (*self.spec_path, "volumes", i))
            for i, v in enumerate(as_list(self.spec.get("volumes")))
        }

    def gpus(self, cluster: ClusterProfile | None = None) -> int:
        """GPUs one pod of this template gets (`trainops.facts.gpus.pod_gpus`)."""
        return gpu_facts.pod_gpus(self.spec, gpu_products(cluster))

    @property
    def scheduler_name(self) -> str | None:
        name = self.spec.get("schedulerName")
        return str(name) if name is not None else None


@dataclass
class Object:
    """One manifest as the rules read it."""

    manifest: Manifest

    @property
    def data(self) -> dict[str, Any]:
        return self.manifest.data

    @property
    def kind(self) -> str:
        return self.manifest.kind

    @property
    def group(self) -> str:
        return self.manifest.group

    @property
    def name(self) -> str:
        return self.manifest.name or ""

    @property
    def namespace(self) -> str | None:
        return self.manifest.namespace

    @property
    def spec(self) -> dict[str, Any]:
        return as_dict(self.data.get("spec"))

    @property
    def annotations(self) -> dict[str, str]:
        meta = self.manifest.metadata
        return {str(k): str(v) for k, v in as_dict(meta.get("annotations")).items()}

    @property
    def is_kubeflow_job(self) -> bool:
        return self.group == KUBEFLOW_GROUP and self.kind in KUBEFLOW_REPLICA_KEYS

    @property
    def is_volcano_job(self) -> bool:
        return self.group == VOLCANO_JOB_GROUP and self.kind == "Job"

    @property
    def is_training_job(self) -> bool:
        """A distributed training job: a Kubeflow job or a Volcano Job."""
        return self.is_kubeflow_job or self.is_volcano_job

    @property
    def replica_key(self) -> str:
        return KUBEFLOW_REPLICA_KEYS.get(self.kind, "")

    @property
    def elastic_policy(self) -> dict[str, Any] | None:
        if self.kind != "PyTorchJob" or not self.is_kubeflow_job:
            return None
        policy = self.spec.get("elasticPolicy")
        return policy if isinstance(policy, dict) else None

    @property
    def run_policy(self) -> dict[str, Any]:
        """`spec.runPolicy` (v1 and v2beta1); older MPIJob manifests put its fields in `spec`."""
        return as_dict(self.spec.get("runPolicy"))

    @cached_property
    def pods(self) -> list[PodTemplate]:
        if self.is_kubeflow_job:
            return self._replica_pods()
        if self.is_volcano_job:
            return self._volcano_pods()
        if self.group == "" and self.kind == "Pod":
            spec = self.spec
            return [
                PodTemplate(
                    {"metadata": self.manifest.metadata, "spec": spec},
                    (),
                    replicas=1,
                    restart_policy=str(spec.get("restartPolicy", "Always")),
                    restart_policy_path=("spec", "restartPolicy"),
                    restart_policy_explicit="restartPolicy" in spec,
                )
            ]
        path = CORE_TEMPLATE_PATHS.get(self.kind)
        if path is None or self.group not in {"apps", "batch"}:
            return []
        node: Any = self.data
        for part in path:
            node = as_dict(node).get(str(part))
        template = as_dict(node)
        if not template:
            return []
        spec = as_dict(template.get("spec"))
        replicas = as_int(self.spec.get("replicas"))
        if self.kind == "Job":
            replicas = as_int(self.spec.get("parallelism")) or 1
        return [
            PodTemplate(
                template,
                path,
                replicas=replicas if replicas is not None else 1,
                restart_policy=str(spec.get("restartPolicy", "Always")),
                restart_policy_path=(*path, "spec", "restartPolicy"),
                restart_policy_explicit="restartPolicy" in spec,
            )
        ]

    def _replica_pods(self) -> list[PodTemplate]:
        key = self.replica_key
        pods = []
        for rtype, raw in sorted(as_dict(self.spec.get(key)).items()):
            spec = as_dict(raw)
            template = as_dict(spec.get("template"))
            replicas = as_int(spec.get("replicas"))
            explicit = spec.get("restartPolicy")
            labels = {
                "training.kubeflow.org/job-name": self.name,
                "training.kubeflow.org/operator-name": f"{self.kind.lower()}-controller",
                "training.kubeflow.org/replica-type": str(rtype).lower(),
            }
            if str(rtype).lower() in LEADER_REPLICA_TYPES:
                labels["training.kubeflow.org/job-role"] = "master"
            pods.append(
                PodTemplate(
                    template,
                    ("spec", key, str(rtype), "template"),
                    replica_type=str(rtype),
                    replicas=1 if replicas is None else replicas,
                    restart_policy=str(explicit)
                    if explicit
                    else default_restart_policy(self.manifest.api_version, self.kind, str(rtype)),
                    restart_policy_path=("spec", key, str(rtype), "restartPolicy"),
                    restart_policy_explicit=bool(explicit),
                    extra_labels=labels,
                )
            )
        return pods

    def _volcano_pods(self) -> list[PodTemplate]:
        pods = []
        for i, raw in enumerate(as_list(self.spec.get("tasks"))):
            task = as_dict(raw)
            template = as_dict(task.get("template"))
            spec = as_dict(template.get("spec"))
            replicas = as_int(task.get("replicas"))
            pods.append(
                PodTemplate(
                    template,
                    ("spec", "tasks", i, "template"),
                    replica_type=str(task.get("name", f"task-{i}")),
                    replicas=1 if replicas is None else replicas,
                    restart_policy=str(spec.get("restartPolicy", "Always")),
                    restart_policy_path=("spec", "tasks", i, "template", "spec", "restartPolicy"),
                    restart_policy_explicit="restartPolicy" in spec,
                    extra_labels={"volcano.sh/job-name": self.name},
                )
            )
        return pods

    def pod_count(self) -> int:
        return sum(p.replicas or 0 for p in self.pods)

    def replica(self, rtype: str) -> PodTemplate | None:
        return next((p for p in self.pods if p.rtype == rtype.lower()), None)


def same_namespace(a: str | None, b: str | None) -> bool:
    """Two objects share a namespace (an unset one is whatever the apply targets)."""
    return a is None or b is None or a == b


T = TypeVar("T")


class LabelIndex(Generic[T]):
    """Items with their labels, indexed by (key, value) label pairs.

    A selector lookup then starts from the items carrying its rarest required label
    instead of scanning every item: rules that resolve selectors per object (a
    Service's pods, a ServiceMonitor's Services) stay linear on large repositories.
    """

    def __init__(self, entries: Iterable[tuple[T, dict[str, str]]]) -> None:
        self.entries = list(entries)
        self._positions: dict[tuple[str, str], list[int]] = {}
        for i, (_, labels) in enumerate(self.entries):
            for pair in labels.items():
                self._positions.setdefault(pair, []).append(i)

    def candidates(self, required: dict[str, str]) -> list[tuple[T, dict[str, str]]]:
        """Entries, in order, that may carry all `required` labels (a superset: check them)."""
        if not required:
            return self.entries
        rarest = min((self._positions.get(pair, []) for pair in required.items()), key=len)
        return [self.entries[i] for i in rarest]


@dataclass
class Context:
    """The manifest set and the cluster: what a check may look up besides its object.

    Lookups go through indexes built on first use (the manifest set does not change
    while rules run), so a check that looks something up for every object stays linear.
    """

    objects: list[Object]
    cluster: ClusterProfile | None = None
    rule_slugs: frozenset[str] = frozenset()
    """Every rule the engine knows (a waiver must name one)."""

    @cached_property
    def _by_kind(self) -> dict[str, list[Object]]:
        index: dict[str, list[Object]] = {}
        for obj in self.objects:
            index.setdefault(obj.kind, []).append(obj)
        return index

    @cached_property
    def _by_kind_name(self) -> dict[tuple[str, str], list[Object]]:
        index: dict[tuple[str, str], list[Object]] = {}
        for obj in self.objects:
            index.setdefault((obj.kind, obj.name), []).append(obj)
        return index

    @cached_property
    def labelled_pods(self) -> LabelIndex[tuple[Object, PodTemplate]]:
        """Every pod template of every object with the labels its pods carry, in object order."""
        return LabelIndex(((obj, pod), pod.labels) for obj in self.objects for pod in obj.pods)

    @cached_property
    def labelled_services(self) -> LabelIndex[Object]:
        """Core Services with their own (metadata) labels, in object order."""
        return LabelIndex(
            (svc, {str(k): str(v) for k, v in as_dict(svc.manifest.metadata.get("labels")).items()})
            for svc in self.of_kind("Service", "")
        )

    def of_kind(self, kind: str, group: str | None = None) -> Iterator[Object]:
        for obj in self._by_kind.get(kind, []):
            if group is None or obj.group == group:
                yield obj

    def find(self, kind: str, name: str, namespace: str | None) -> Object | None:
        for obj in self._by_kind_name.get((kind, name), []):
            if same_namespace(obj.namespace, namespace):
                return obj
        return None
