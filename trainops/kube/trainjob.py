"""A Kubeflow Trainer v2 TrainJob as the rules read it: the pod its training nodes run.

A TrainJob alone has no pod template: the Trainer builds one from the runtime it references
(the `node` replicated job of the runtime's JobSet template), the TrainJob's runtime patches
(pod metadata, volumes, mounts, node selectors, ...) and `spec.trainer` (image, command,
args, env, resources of the `node` container; numNodes pods). `node_pod` does the same merge,
so every pod rule (GPU, NCCL, DeepSpeed, images, secrets) reads a TrainJob + runtime pair as
the pods that will run. Findings on the node container's image, command, args, env and
resources point at the TrainJob's `trainer` fields they came from (`source_path`); others
at the `trainer:` block (the merged pod exists in no file). Without its runtime in the
manifest set, the pod is the TrainJob's part alone.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from trainops.core.values import as_dict, as_int, as_list
from trainops.facts.trainer import (
    CLUSTER_TRAINING_RUNTIME,
    INITIALIZERS,
    JOBSET_NAME_LABEL,
    NODE_CONTAINER,
    NODE_JOB,
    TRAINER_GROUP,
    TRAINING_RUNTIME,
)
from trainops.kube.pods import PodTemplate

# Where findings on the merged pod point: the TrainJob's `trainer:` block.
TRAINER_PATH = ("spec", "trainer")
# The node container's fields that come from `spec.trainer`, and the trainer field each is.
TRAINER_FIELDS = {
    "image": "image",
    "command": "command",
    "args": "args",
    "env": "env",
    "resources": "resourcesPerNode",
}
# JobSet defaults a pod template's restartPolicy to OnFailure when the runtime sets none.
DEFAULT_RESTART_POLICY = "OnFailure"


def runtime_ref(trainjob: dict[str, Any]) -> tuple[str, str, str | None]:
    """(kind, name, namespace) of the runtime a TrainJob references, as the Trainer looks it up:
    `runtimeRef.kind` defaults to ClusterTrainingRuntime (the CRD's default, Trainer v2.3.0
    `trainer.kubeflow.org_trainjobs.yaml`); a TrainingRuntime lives in the TrainJob's namespace,
    a ClusterTrainingRuntime in none (namespace None)."""
    ref = as_dict(as_dict(trainjob.get("spec")).get("runtimeRef"))
    kind = str(ref.get("kind", CLUSTER_TRAINING_RUNTIME))
    namespace = as_dict(trainjob.get("metadata")).get("namespace")
    scoped = str(namespace) if kind == TRAINING_RUNTIME and namespace is not None else None
    return kind, str(ref.get("name", "")), scoped


def is_runtime_for(ref: tuple[str, str, str | None], obj: dict[str, Any]) -> bool:
    """Whether `obj` is the runtime `ref` (from `runtime_ref`) names; a namespaced runtime
    without a namespace (a kustomize base before its overlay sets one) matches any."""
    kind, name, namespace = ref
    meta = as_dict(obj.get("metadata"))
    found = meta.get("namespace")
    return (
        str(obj.get("apiVersion", "")).partition("/")[0] == TRAINER_GROUP
        and obj.get("kind") == kind
        and str(meta.get("name", "")) == name
        and (namespace is None or found is None or str(found) == namespace)
    )


def find_runtime(
    trainjob: dict[str, Any], objects: Iterable[dict[str, Any]]
) -> dict[str, Any] | None:
    """The (Cluster)TrainingRuntime among `objects` that the TrainJob references, or None."""
    ref = runtime_ref(trainjob)
    return next((o for o in objects if is_runtime_for(ref, o)), None)


def _replicated_jobs(runtime: dict[str, Any] | None) -> list[Any]:
    template = as_dict(as_dict(as_dict(runtime).get("spec")).get("template"))
    return as_list(as_dict(template.get("spec")).get("replicatedJobs"))


def _replicated_job(runtime: dict[str, Any] | None, name: str) -> dict[str, Any]:
    for job in _replicated_jobs(runtime):
        if as_dict(job).get("name") == name:
            return as_dict(job)
    return {}


def _by_name(items: list[Any], updates: list[Any], merge: bool) -> list[Any]:
    """Upsert `updates` into `items` by `name` (merging the mappings when `merge`)."""
    out = [copy.deepcopy(as_dict(i)) for i in items]
    for update in updates:
        upd = as_dict(update)
        found = next((i for i in out if i.get("name") == upd.get("name")), None)
        if found is None:
            out.append(copy.deepcopy(upd))
        elif merge:
            _merge_container(found, upd)
        else:
            found.clear()
            found.update(copy.deepcopy(upd))
    return out


def _merge_container(container: dict[str, Any], patch: dict[str, Any]) -> None:
    for key in ("env", "volumeMounts"):
        if key in patch:
            container[key] = _by_name(as_list(container.get(key)), as_list(patch[key]), False)
    if "securityContext" in patch:
        container["securityContext"] = copy.deepcopy(patch["securityContext"])


def _apply_patch(pod: dict[str, Any], patch: dict[str, Any]) -> None:
    meta, spec = pod.setdefault("metadata", {}), pod.setdefault("spec", {})
    for key in ("labels", "annotations"):
        if key in as_dict(patch.get("metadata")):
            meta[key] = {**as_dict(meta.get(key)), **as_dict(patch["metadata"][key])}
    for key, value in as_dict(patch.get("spec")).items():
        if key in ("containers", "initContainers"):
            spec[key] = _by_name(as_list(spec.get(key)), as_list(value), True)
        elif key == "volumes":
            spec[key] = _by_name(as_list(spec.get(key)), as_list(value), False)
        elif key == "nodeSelector":
            spec[key] = {**as_dict(spec.get(key)), **as_dict(value)}
        else:  # tolerations too: an atomic list, the patch's replaces the runtime's
            spec[key] = copy.deepcopy(value)


def _apply_trainer(pod: dict[str, Any], trainer: dict[str, Any]) -> None:
    containers = as_list(pod.setdefault("spec", {}).setdefault("containers", []))
    node = next((c for c in containers if as_dict(c).get("name") == NODE_CONTAINER), None)
    if node is None:
        node = {"name": NODE_CONTAINER}
        containers.append(node)
    for key in ("image", "command", "args"):
        if key in trainer:
            node[key] = copy.deepcopy(trainer[key])
    if "env" in trainer:
        # The TrainJob's env first (it wins), then the runtime's other variables.
        own = [copy.deepcopy(as_dict(e)) for e in as_list(trainer["env"])]
        names = {e.get("name") for e in own}
        node["env"] = own + [
            e for e in as_list(node.get("env")) if as_dict(e).get("name") not in names
        ]
    if "resourcesPerNode" in trainer:
        node["resources"] = _merge_resources(
            as_dict(node.get("resources")), as_dict(trainer["resourcesPerNode"])
        )


def _merge_resources(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Trainer v2.3 MergeResourceRequirements (`pkg/util/trainingruntime`): `resourcesPerNode`
    over the runtime's resources, limits and requests key by key, claims by name."""
    out = copy.deepcopy(base)
    for key in ("limits", "requests"):
        if key in over:
            out[key] = {**as_dict(base.get(key)), **copy.deepcopy(as_dict(over[key]))}
    if "claims" in over:
        claims = {str(as_dict(c).get("name")): as_dict(c) for c in as_list(base.get("claims"))}
        for claim in map(as_dict, as_list(over["claims"])):
            name = str(claim.get("name"))
            claims[name] = {**claims.get(name, {}), **claim}
        out["claims"] = copy.deepcopy(list(claims.values()))
    return out


def _patched(trainjob: dict[str, Any], runtime: dict[str, Any] | None, name: str) -> dict[str, Any]:
    """The pod template of the runtime's replicated job `name` with the TrainJob's runtime
    patches aimed at it applied in order."""
    job = _replicated_job(runtime, name)
    pod = copy.deepcopy(as_dict(as_dict(job.get("template")).get("spec")).get("template") or {})
    for patch in _patch_templates(trainjob):
        for rjob in as_list(as_dict(patch.get("spec")).get("replicatedJobs")):
            if as_dict(rjob).get("name") == name:
                rtemplate = as_dict(as_dict(rjob).get("template"))
                _apply_patch(pod, as_dict(as_dict(rtemplate.get("spec")).get("template")))
    return pod


def _patch_templates(trainjob: dict[str, Any]) -> list[dict[str, Any]]:
    """Each runtime patch's JobSet template (`trainingRuntimeSpec.template`)."""
    patches = as_list(as_dict(trainjob.get("spec")).get("runtimePatches"))
    return [
        as_dict(as_dict(as_dict(p).get("trainingRuntimeSpec")).get("template")) for p in patches
    ]


def other_pods(trainjob: dict[str, Any], runtime: dict[str, Any] | None) -> list[PodTemplate]:
    """The TrainJob's pods beside its nodes' (issue 35.5): each other replicated job of its
    runtime (the dataset and model initializers, an MPI launcher) and each one a runtime patch
    aims at, patched; an initializer's container reads the Secret the TrainJob's
    `spec.initializer.<dataset|model>.secretRef` names (the Trainer adds it as `envFrom`)."""
    names = [str(as_dict(j).get("name")) for j in _replicated_jobs(runtime)]
    for patch in _patch_templates(trainjob):
        names += [str(as_dict(j).get("name")) for j in
                  as_list(as_dict(patch.get("spec")).get("replicatedJobs"))]  # fmt: skip
    initializer = as_dict(as_dict(trainjob.get("spec")).get("initializer"))
    names += [job for job, key in INITIALIZERS.items() if key in initializer]
    pods = []
    for name in sorted(set(names) - {NODE_JOB}):
        pod = _patched(trainjob, runtime, name)
        secret = as_dict(as_dict(initializer.get(INITIALIZERS.get(name, ""))).get("secretRef"))
        path: tuple[str | int, ...] = ("spec", "runtimePatches")
        if secret:
            path = ("spec", "initializer", INITIALIZERS[name])
            containers = as_list(pod.setdefault("spec", {}).setdefault("containers", []))
            container = next((c for c in containers if as_dict(c).get("name") == name), None)
            if container is None:
                container = {"name": name}
                containers.append(container)
            container["envFrom"] = [*as_list(container.get("envFrom")), {"secretRef": secret}]
        pods.append(_support_pod(pod, path, name))
    return pods


def _support_pod(pod: dict[str, Any], path: tuple[str | int, ...], name: str) -> PodTemplate:
    restart = as_dict(pod.get("spec")).get("restartPolicy")
    return PodTemplate(
        pod,
        path,
        replica_type=name,
        replicas=1,
        restart_policy=str(restart or DEFAULT_RESTART_POLICY),
        restart_policy_path=path,
        restart_policy_explicit=restart is not None,
    )


def node_pod(trainjob: dict[str, Any], runtime: dict[str, Any] | None) -> PodTemplate:
    """The pod template of the TrainJob's training nodes, merged as the Trainer does."""
    spec = as_dict(trainjob.get("spec"))
    pod = _patched(trainjob, runtime, NODE_JOB)
    trainer = as_dict(spec.get("trainer"))
    _apply_trainer(pod, trainer)
    ml_policy = as_dict(as_dict(as_dict(runtime).get("spec")).get("mlPolicy"))
    nodes = as_int(trainer.get("numNodes")) or as_int(ml_policy.get("numNodes")) or 1
    restart = as_dict(pod.get("spec")).get("restartPolicy")
    name = str(as_dict(trainjob.get("metadata")).get("name", ""))
    return PodTemplate(
        pod,
        TRAINER_PATH,
        replica_type=NODE_JOB,
        replicas=nodes,
        restart_policy=str(restart or DEFAULT_RESTART_POLICY),
        restart_policy_path=("spec", "runtimeRef"),
        restart_policy_explicit=restart is not None,
        extra_labels={JOBSET_NAME_LABEL: name},
    )


def source_path(path: tuple[str | int, ...], pod: PodTemplate) -> tuple[str | int, ...]:
    """Where in the TrainJob a path of its merged node pod was written, when it was."""
    prefix = (*pod.spec_path, "containers")
    if len(path) < len(prefix) + 2 or tuple(path[: len(prefix)]) != prefix:
        return path
    index, key, rest = path[len(prefix)], path[len(prefix) + 1], path[len(prefix) + 2 :]
    containers = as_list(pod.spec.get("containers"))
    is_node = isinstance(index, int) and index < len(containers)
    is_node = is_node and as_dict(containers[int(index)]).get("name") == NODE_CONTAINER
    if not is_node or key not in TRAINER_FIELDS:
        return path
    return (*TRAINER_PATH, TRAINER_FIELDS[str(key)], *rest)
