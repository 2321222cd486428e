"""Pod templates beyond the ones training reads (issue 35.5): every pod template of every kind
trainops knows is held to the fences (Pod Security, `pod-fence`), and in a kind it does not
know, whatever is shaped like a pod template is found and held to them too.

- `workload_pods`: core and add-on workloads whose template sits at a known path: a
  ReplicationController (`spec.template`), a core PodTemplate (`template`), a
  LeaderWorkerSet (`spec.leaderWorkerTemplate`: a leader and `size - 1` workers per group,
  the leader's template defaulting to the workers'), a KubeRay RayCluster or RayJob (the
  head, each worker group, a RayJob's submitter).
- `replicated_job_pods`: each replicated Job's pod template of a JobSet-shaped list (a
  JobSet's own, a Trainer (Cluster)TrainingRuntime's `spec.template.spec.replicatedJobs`).
- `pod_template_paths`: where mappings shaped like a pod template (a `spec` whose
  `containers` is a list of mappings) sit in an object of a kind trainops does not read.
"""

from __future__ import annotations

from typing import Any

from trainops.core.manifest import FieldPath as Path
from trainops.core.values import as_dict, as_int, as_list
from trainops.facts.workloads import (
    JOBSET_NAME_LABEL,
    JOBSET_REPLICATED_JOB_LABEL,
    LWS_GROUP,
    LWS_NAME_LABEL,
    RAY_CLUSTER_LABEL,
    RAY_GROUP,
)
from trainops.kube.pods import PodTemplate

LWS_TEMPLATE: Path = ("spec", "leaderWorkerTemplate")


def _pod(
    template: Any,
    path: Path,
    replicas: int,
    rtype: str | None = None,
    labels: dict[str, str] | None = None,
) -> PodTemplate:
    spec = as_dict(as_dict(template).get("spec"))
    return PodTemplate(
        as_dict(template),
        path,
        replica_type=rtype,
        replicas=replicas,
        restart_policy=str(spec.get("restartPolicy", "Always")),
        restart_policy_path=(*path, "spec", "restartPolicy"),
        restart_policy_explicit="restartPolicy" in spec,
        extra_labels=labels or {},
    )


def workload_pods(kind: str, group: str, data: dict[str, Any]) -> list[PodTemplate]:
    """The pod templates of a ReplicationController, a core PodTemplate, a LeaderWorkerSet,
    a RayCluster or a RayJob; [] for any other kind."""
    if group == RAY_GROUP and kind in {"RayCluster", "RayJob"}:
        return ray_pods(kind, data)
    spec = as_dict(data.get("spec"))
    replicas = as_int(spec.get("replicas"))
    groups = 1 if replicas is None else replicas
    if group == "" and kind == "ReplicationController" and as_dict(spec.get("template")):
        return [_pod(spec["template"], ("spec", "template"), groups)]
    if group == "" and kind == "PodTemplate" and as_dict(data.get("template")):
        return [_pod(data["template"], ("template",), 1)]
    if group != LWS_GROUP or kind != "LeaderWorkerSet":
        return []
    lws = as_dict(spec.get("leaderWorkerTemplate"))
    # The LWS controller labels every pod of the set with its name (pkg/utils/pod).
    labels = {LWS_NAME_LABEL: str(as_dict(data.get("metadata")).get("name", ""))}
    size = as_int(lws.get("size"))
    workers = max(0, (1 if size is None else size) - 1) * groups
    pods = []
    if as_dict(lws.get("leaderTemplate")):
        path: Path = (*LWS_TEMPLATE, "leaderTemplate")
        pods.append(_pod(lws["leaderTemplate"], path, groups, "leader", labels))
        groups = 0  # the leaders have their own template
    if as_dict(lws.get("workerTemplate")):
        path = (*LWS_TEMPLATE, "workerTemplate")
        pods.append(_pod(lws["workerTemplate"], path, workers + groups, "worker", labels))
    return pods


def ray_pods(kind: str, data: dict[str, Any]) -> list[PodTemplate]:
    """A RayCluster's head and worker groups; a RayJob's (`spec.rayClusterSpec`, the cluster
    it creates, named by the operator) and its submitter pod."""
    spec = as_dict(data.get("spec"))
    prefix: Path = ("spec",)
    labels: dict[str, str] = {}
    pods = []
    if kind == "RayJob":
        if as_dict(spec.get("submitterPodTemplate")):
            path: Path = ("spec", "submitterPodTemplate")
            pods.append(_pod(spec["submitterPodTemplate"], path, 1, "submitter"))
        spec, prefix = as_dict(spec.get("rayClusterSpec")), ("spec", "rayClusterSpec")
    else:
        labels = {RAY_CLUSTER_LABEL: str(as_dict(data.get("metadata")).get("name", ""))}
    head = as_dict(as_dict(spec.get("headGroupSpec")).get("template"))
    if head:
        pods.append(_pod(head, (*prefix, "headGroupSpec", "template"), 1, "head", labels))
    for i, raw in enumerate(as_list(spec.get("workerGroupSpecs"))):
        group = as_dict(raw)
        if not as_dict(group.get("template")):
            continue
        count = (as_int(group.get("replicas")) or 0) * (as_int(group.get("numOfHosts")) or 1)
        path = (*prefix, "workerGroupSpecs", i, "template")
        name = str(group.get("groupName", f"group-{i}"))
        pods.append(_pod(group["template"], path, count, name, labels))
    return pods


def replicated_job_pods(jobs: Any, prefix: Path, owner: str) -> list[PodTemplate]:
    """Each replicated Job's pod template (`replicas` Jobs of `parallelism` pods each) of the
    list `jobs` at `prefix`; `owner` names the JobSet its pods are labelled with."""
    pods = []
    for i, raw in enumerate(as_list(jobs)):
        rjob = as_dict(raw)
        job_spec = as_dict(as_dict(rjob.get("template")).get("spec"))
        template = as_dict(job_spec.get("template"))
        spec = as_dict(template.get("spec"))
        path: Path = (*prefix, i, "template", "spec", "template")
        count = as_int(rjob.get("replicas"))
        name = str(rjob.get("name", f"job-{i}"))
        pods.append(
            PodTemplate(
                template,
                path,
                replica_type=name,
                replicas=(1 if count is None else count) * job_parallelism(job_spec),
                restart_policy=str(spec.get("restartPolicy", "Always")),
                restart_policy_path=(*path, "spec", "restartPolicy"),
                restart_policy_explicit="restartPolicy" in spec,
                extra_labels={JOBSET_NAME_LABEL: owner, JOBSET_REPLICATED_JOB_LABEL: name},
            )
        )
    return pods


def job_parallelism(job_spec: dict[str, Any]) -> int:
    """Pods a batch/v1 Job runs at once: `parallelism` (default 1), at most `completions`."""
    parallelism = as_int(job_spec.get("parallelism"))
    completions = as_int(job_spec.get("completions"))
    count = 1 if parallelism is None else parallelism
    return min(count, completions) if completions is not None else count


def _is_pod_spec(node: dict[str, Any]) -> bool:
    containers = node.get("containers")
    return (
        isinstance(containers, list)
        and bool(containers)
        and all(isinstance(c, dict) for c in containers)
    )


def pod_template_paths(data: dict[str, Any]) -> list[Path]:
    """Paths of the pod templates (the mapping holding `spec.containers`) anywhere in `data`,
    outermost first; a pod spec not under a `spec` key (`predictor: {containers: ...}`) is its
    own template's path. Iterative: depth is bounded by the YAML reader, not the stack."""
    found: list[Path] = []
    stack: list[tuple[Path, Any]] = [((), data)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            if _is_pod_spec(node) and path[:2] != ("metadata",):
                found.append(path[:-1] if path and path[-1] == "spec" else path)
                continue
            stack.extend(((*path, str(k)), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend(((*path, i), v) for i, v in enumerate(node))
    return sorted(found, key=lambda p: (len(p), [str(x) for x in p]))


def template_at(data: dict[str, Any], path: Path) -> PodTemplate:
    """The pod template at `path` (from `pod_template_paths`), one pod: nothing says how many."""
    node: Any = data
    for part in path:
        node = node[part]
    template = node if _is_pod_spec(as_dict(as_dict(node).get("spec"))) else {"spec": node}
    return _pod(template, path, 1)
