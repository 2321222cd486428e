"""One manifest as the Training Operator (or the controller that owns it) reads it: its pod
templates with replica type, count and the restart policy the operator applies — replica specs
of the Kubeflow kinds, a Volcano Job's tasks, a core workload's template, a Pod's own spec."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from trainops.core.manifest import FieldPath as Path
from trainops.core.manifest import Manifest
from trainops.facts.kubeflow import (
    KUBEFLOW_GROUP,
    KUBEFLOW_REPLICA_KEYS,
    LEADER_REPLICA_TYPES,
    default_restart_policy,
)
from trainops.facts.schedulers import VOLCANO_JOB_GROUP
from trainops.facts.trainer import TRAINER_GROUP, TRAINJOB
from trainops.rules.pods import PodTemplate
from trainops.rules.trainjob import node_pod
from trainops.rules.trainjob import source_path as trainjob_source_path
from trainops.rules.values import as_dict, as_int, as_list

# Workload kinds of core Kubernetes whose pod template sits at a fixed path.
CORE_TEMPLATE_PATHS: dict[str, Path] = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
}


@dataclass
class Object:
    """One manifest as the rules read it."""

    manifest: Manifest
    runtime: Object | None = None
    """A TrainJob's (Cluster)TrainingRuntime, when the manifest set has it (`Context` links
    it before any rule reads `pods`)."""

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
    def is_trainjob(self) -> bool:
        """A Kubeflow Trainer v2 TrainJob."""
        return self.group == TRAINER_GROUP and self.kind == TRAINJOB

    @property
    def is_training_job(self) -> bool:
        """A distributed training job: a Kubeflow job, a Volcano Job or a TrainJob."""
        return self.is_kubeflow_job or self.is_volcano_job or self.is_trainjob

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
        if self.is_trainjob:
            return [node_pod(self.data, self.runtime.data if self.runtime else None)]
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

    def source_path(self, path: tuple[str | int, ...]) -> tuple[str | int, ...]:
        """Where `path` (of this object, or of a pod the rules read from it) was written."""
        if self.is_trainjob and self.pods:
            return trainjob_source_path(path, self.pods[0])
        return path

    def pod_count(self) -> int:
        return sum(p.replicas or 0 for p in self.pods)

    def replica(self, rtype: str) -> PodTemplate | None:
        return next((p for p in self.pods if p.rtype == rtype.lower()), None)
