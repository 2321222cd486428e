"""One manifest as the Training Operator (or the controller that owns it) reads it: its pod
templates with replica type, count and the restart policy the operator applies — replica specs
of the Kubeflow kinds (removed API versions too, as far as they can be read), a Volcano Job's
tasks, a JobSet's replicated Jobs, a core workload's template, a Pod's own spec.

`training_pods` says which of them run training, so that every rule about training pods runs
on every such template, whatever owns it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainops.core.manifest import FieldPath as Path
from trainops.core.manifest import Manifest
from trainops.core.values import as_dict, as_int, as_list
from trainops.facts.kubeflow import (
    KUBEFLOW_GROUP,
    KUBEFLOW_REPLICA_KEYS,
    LEADER_REPLICA_TYPES,
    TRAINING_CONTAINER,
    default_restart_policy,
)
from trainops.facts.kubeflow import elastic_range as operator_elastic_range
from trainops.facts.kubernetes_schemas import POD_FREE_KINDS
from trainops.facts.schedulers import VOLCANO_JOB_GROUP
from trainops.facts.trainer import RUNTIME_KINDS, TRAINER_GROUP, TRAINJOB
from trainops.facts.workloads import (
    INDEXED,
    JOB_NAME_LABELS,
    JOBSET_GROUP,
)
from trainops.kube.launch import launches, trains
from trainops.kube.lazy import lazy
from trainops.kube.pods import (
    Container,
    PodTemplate,
    requests_accelerator,
    training_container_index,
)
from trainops.kube.templates import (
    job_parallelism,
    pod_template_paths,
    replicated_job_pods,
    template_at,
    workload_pods,
)
from trainops.kube.trainjob import node_pod, other_pods
from trainops.kube.trainjob import source_path as trainjob_source_path

# Kinds whose pods run to completion: one that holds an accelerator is a training pod.
BATCH_KINDS = frozenset({"Job", "CronJob", "Pod"})

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

    @lazy
    def kind(self) -> str:
        return self.manifest.kind

    @lazy
    def group(self) -> str:
        return self.manifest.group

    @lazy
    def name(self) -> str:
        return self.manifest.name or ""

    @lazy
    def namespace(self) -> str | None:
        return self.manifest.namespace

    @lazy
    def spec(self) -> dict[str, Any]:
        return as_dict(self.data.get("spec"))

    @lazy
    def annotations(self) -> dict[str, str]:
        meta = self.manifest.metadata
        return {str(k): str(v) for k, v in as_dict(meta.get("annotations")).items()}

    @lazy
    def is_kubeflow_job(self) -> bool:
        return self.group == KUBEFLOW_GROUP and self.kind in KUBEFLOW_REPLICA_KEYS

    @property
    def is_volcano_job(self) -> bool:
        return self.group == VOLCANO_JOB_GROUP and self.kind == "Job"

    @property
    def is_jobset(self) -> bool:
        return self.group == JOBSET_GROUP and self.kind == "JobSet"

    @property
    def is_trainjob(self) -> bool:
        """A Kubeflow Trainer v2 TrainJob."""
        return self.group == TRAINER_GROUP and self.kind == TRAINJOB

    @property
    def is_training_job(self) -> bool:
        """A distributed training job: a Kubeflow job, a Volcano Job or a TrainJob."""
        return self.is_kubeflow_job or self.is_volcano_job or self.is_trainjob

    @property
    def is_indexed_job(self) -> bool:
        return (
            self.group == "batch"
            and self.kind == "Job"
            and self.spec.get("completionMode") == INDEXED
        )

    @lazy
    def training_pods(self) -> list[PodTemplate]:
        """The pod templates that run training: every pod of a Kubeflow job, a Volcano Job or
        a JobSet; the pods of a batch Job, CronJob or bare Pod that ask for an accelerator or
        start a distributed launcher (torchrun, deepspeed, mpirun, horovodrun) or a known
        trainer (`accelerate launch`, ...); and the pods of any other workload (a
        LeaderWorkerSet, StatefulSet, Deployment) that start one. An accelerator alone does
        not make a long-running workload's pod a training pod: inference servers hold GPUs."""
        if self.is_training_job or self.is_jobset:
            return self.pods
        if self.kind in BATCH_KINDS:
            return [p for p in self.pods if requests_accelerator(p) or launches_training(p)]
        return [p for p in self.pods if launches_training(p)]

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
    def elastic_range(self) -> tuple[int, int] | None:
        """[min, max] pods of an elastic PyTorchJob, defaulted as the operator does
        (`trainops.facts.kubeflow.elastic_range`); None for any other object."""
        return None if self.elastic_policy is None else operator_elastic_range(self.spec)

    @property
    def run_policy(self) -> dict[str, Any]:
        """`spec.runPolicy` (v1 and v2beta1); older MPIJob manifests put its fields in `spec`."""
        return as_dict(self.spec.get("runPolicy"))

    @lazy
    def all_pods(self) -> list[PodTemplate]:
        """Every pod template the object makes a controller create: `pods`, a TrainJob's
        other replicated jobs (initializers), a Trainer runtime's own, or in a kind trainops
        does not read, whatever is shaped like one (`unread_pod_templates`). What the fences
        hold (Pod Security, `pod-fence`; issue 35.5): rules about training read `pods`."""
        if self.is_trainjob:
            return [*self.pods, *other_pods(self.data, self.runtime.data if self.runtime else None)]
        if self.pods:
            return self.pods
        if self.group == TRAINER_GROUP and self.kind in RUNTIME_KINDS:
            template = as_dict(self.spec.get("template"))
            jobs = as_dict(template.get("spec")).get("replicatedJobs")
            return replicated_job_pods(jobs, ("spec", "template", "spec", "replicatedJobs"), "")
        return [template_at(self.data, path) for path in self.unread_pod_templates]

    @lazy
    def unread_pod_templates(self) -> list[Path]:
        """Where an object of a kind trainops does not read holds pod templates (a CRD's
        schema, thousands of nodes describing them, holds none: not walked)."""
        known = self.pods or self.is_trainjob or self.kind in RUNTIME_KINDS
        schema = self.kind == "CustomResourceDefinition"
        none = (self.group, self.kind) in POD_FREE_KINDS
        return [] if known or schema or none else pod_template_paths(self.data)

    @lazy
    def pods(self) -> list[PodTemplate]:
        if (self.group, self.kind) in POD_FREE_KINDS:
            return []
        if self.is_kubeflow_job:
            return self._replica_pods()
        if self.is_volcano_job:
            return self._volcano_pods()
        if self.is_trainjob:
            return [node_pod(self.data, self.runtime.data if self.runtime else None)]
        if self.is_jobset:
            return self._jobset_pods()
        if self.group == KUBEFLOW_GROUP and self.kind in {"MPIJob", "TFJob"}:
            return self._legacy_kubeflow_pods()
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
            return workload_pods(self.kind, self.group, self.data)
        node: Any = self.data
        for part in path:
            node = as_dict(node).get(str(part))
        template = as_dict(node)
        if not template:
            return []
        spec = as_dict(template.get("spec"))
        replicas = as_int(self.spec.get("replicas"))
        labels: dict[str, str] = {}
        if self.kind == "Job":
            replicas = job_parallelism(self.spec)
            labels = dict.fromkeys(JOB_NAME_LABELS, self.name) if self.name else {}
        return [
            PodTemplate(
                template,
                path,
                replicas=replicas if replicas is not None else 1,
                restart_policy=str(spec.get("restartPolicy", "Always")),
                restart_policy_path=(*path, "spec", "restartPolicy"),
                restart_policy_explicit="restartPolicy" in spec,
                extra_labels=labels,
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

    def _jobset_pods(self) -> list[PodTemplate]:
        """Each replicated Job's pod template: `replicas` Jobs of `parallelism` pods each."""
        return replicated_job_pods(
            self.spec.get("replicatedJobs"), ("spec", "replicatedJobs"), self.name
        )

    def _legacy_kubeflow_pods(self) -> list[PodTemplate]:
        """Removed API shapes, read as far as they go: MPIJob v1alpha1's single `template`
        (the worker pods; the operator generated the launcher) and TFJob v1alpha1's
        `replicaSpecs` list of `tfReplicaType`s."""
        pods = []
        if isinstance(self.spec.get("template"), dict):
            spec = as_dict(as_dict(self.spec["template"]).get("spec"))
            replicas = as_int(self.spec.get("replicas"))
            pods.append(
                PodTemplate(
                    as_dict(self.spec["template"]),
                    ("spec", "template"),
                    replica_type="Worker",
                    replicas=1 if replicas is None else replicas,
                    restart_policy=str(spec.get("restartPolicy", "Never")),
                    restart_policy_path=("spec", "template", "spec", "restartPolicy"),
                    restart_policy_explicit="restartPolicy" in spec,
                )
            )
        for i, raw in enumerate(as_list(self.spec.get("replicaSpecs"))):
            replica = as_dict(raw)
            spec = as_dict(as_dict(replica.get("template")).get("spec"))
            replicas = as_int(replica.get("replicas"))
            pods.append(
                PodTemplate(
                    as_dict(replica.get("template")),
                    ("spec", "replicaSpecs", i, "template"),
                    replica_type=str(replica.get("tfReplicaType", f"replica-{i}")).title(),
                    replicas=1 if replicas is None else replicas,
                    restart_policy=str(spec.get("restartPolicy", "Never")),
                    restart_policy_path=("spec", "replicaSpecs", i, "template", "spec"),
                    restart_policy_explicit="restartPolicy" in spec,
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

    def training_container(self, pod: PodTemplate) -> Container | None:
        """The container of `pod` that trains: the one the job's controller configures
        (`trainops.facts.kubeflow.TRAINING_CONTAINER`), else the first; None without any."""
        containers = pod.containers()
        if not containers:
            return None
        name = TRAINING_CONTAINER.get(self.kind, "")
        return containers[training_container_index([c.data for c in containers], name)]

    def replica(self, rtype: str) -> PodTemplate | None:
        return next((p for p in self.pods if p.rtype == rtype.lower()), None)


def launches_training(pod: PodTemplate) -> bool:
    """A pod one of whose containers starts a distributed launcher or a known trainer."""
    return any(trains(launch) for c in pod.containers() for launch in launches(c))


def runs_training(pod: PodTemplate) -> bool:
    """A pod that asks for an accelerator (a GPU, Gaudi, Neuron, TPU, or a DRA claim) or
    starts a distributed launcher or a known trainer."""
    return requests_accelerator(pod) or launches_training(pod)
