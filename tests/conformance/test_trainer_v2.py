"""Kubeflow Trainer v2.3.0 reads our TrainJobs and runtimes: its admission webhook and its
volcano and coscheduling plugins, ported small from github.com/kubeflow/trainer at v2.3.0:

- `pkg/webhooks/trainjob_webhook.go` ValidateCreate -> `pkg/runtime/core/trainingruntime.go`
  and `clustertrainingruntime.go` ValidateObjects: the referenced runtime must exist ("must
  be created before the TrainJob is created"), then the plugins' `Validate`;
- `pkg/runtime/framework/plugins/torch/torch.go` Validate: no reserved torchrun env
  (`constants.TorchRunReservedEnvNames`) in `trainer.env`;
- `pkg/runtime/core/trainingruntime.go` newRuntimeInfo: the annotations the plugins see are the
  runtime's `spec.template.metadata.annotations`, then each runtime patch's
  `trainingRuntimeSpec.template.metadata.annotations` over them; never the TrainJob's own;
- `pkg/runtime/framework/plugins/volcano/volcano.go` Validate (a queue annotation, if set,
  is not empty; every replicated job's `priorityClassName` in the merged runtime names a
  PriorityClass that exists, unless it is `system-cluster-critical` or
  `system-node-critical`, which ends the check) and Build: the PodGroup's `minMember` is the
  sum of the pod sets' counts (the trainer step's count is `numNodes`), its queue the
  `scheduling.volcano.sh/queue-name` annotation, else unset, which the PodGroup CRD defaults
  to `default` and Volcano's PodGroup webhook then moves to the namespace's queue
  (`volcano_port.py`);
- `pkg/runtime/framework/plugins/coscheduling/coscheduling.go`: only for a runtime with
  `podGroupPolicy.coscheduling`, which needs the scheduler-plugins scheduler no profile runs;
- the runtime patches: how they merge into the node pod and what the jobset plugin refuses
  (`trainer_merge.py`).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance import volcano_port
from tests.conformance.built_repos import IDS, Overlay, overlay, scheduler
from tests.conformance.trainer_merge import node_pod, patch_errors, strategic_merge
from tests.render.repos import RICH, read_yaml

pytestmark = pytest.mark.slow

QUEUE_ANNOTATION = volcano_port.QUEUE_ANNOTATION  # volcanov1beta1.QueueNameAnnotationKey
VOLCANO_DEFAULT_QUEUE = volcano_port.DEFAULT_QUEUE
SYSTEM_PRIORITY_CLASSES = ("system-cluster-critical", "system-node-critical")
TORCHRUN_RESERVED_ENV = {
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
}
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"


def _get(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = (obj or {}).get(key)
    return obj


def runtime_of(overlay: Overlay, trainjob: dict[str, Any]) -> dict[str, Any] | None:
    """ValidateObjects' lookup: a TrainingRuntime in the TrainJob's namespace, or a
    ClusterTrainingRuntime, by `runtimeRef.name` and kind."""
    ref = trainjob["spec"]["runtimeRef"]
    if ref.get("kind", "ClusterTrainingRuntime") == "TrainingRuntime":
        return overlay.find("TrainingRuntime", ref["name"], trainjob["metadata"]["namespace"])
    return overlay.find("ClusterTrainingRuntime", ref["name"])


def runtime_annotations(trainjob: dict[str, Any], runtime: dict[str, Any]) -> dict[str, str]:
    """newRuntimeInfo's propagationAnnotations."""
    annotations = dict(_get(runtime, "spec", "template", "metadata", "annotations") or {})
    for patch in trainjob["spec"].get("runtimePatches") or []:
        over = _get(patch, "trainingRuntimeSpec", "template", "metadata", "annotations") or {}
        annotations.update(over)
    return annotations


def priority_class_errors(
    runtime: dict[str, Any], trainjob: dict[str, Any], existing: set[str]
) -> list[str]:
    """volcano.go Validate's priority-class check over the merged runtime's replicated jobs
    (the node job's pod with the runtime patches merged)."""
    errors = []
    for job in _get(runtime, "spec", "template", "spec", "replicatedJobs") or []:
        template = _get(job, "template", "spec", "template") or {}
        if job.get("name") == "node":
            template = node_pod(runtime, trainjob)
        name = _get(template, "spec", "priorityClassName")
        if name is None:
            continue
        if name in SYSTEM_PRIORITY_CLASSES:
            return errors
        if name not in existing:
            errors.append(
                f"spec.templateSpec.priorityClassName: PriorityClass {name!r} doesn't exist"
            )
    return errors


def cluster_priority_classes(overlay: Overlay) -> set[str]:
    """The PriorityClasses the cluster has: delivered with the overlay, or the platform's."""
    provided = (overlay.profile.get("providedByPlatform") or {}).get("priorityClasses") or []
    return {o["metadata"]["name"] for o in overlay.of_kind("PriorityClass")} | set(provided)


def webhook_errors(overlay: Overlay, trainjob: dict[str, Any]) -> list[str]:
    runtime = runtime_of(overlay, trainjob)
    if runtime is None:
        return ["spec.runtimeRef: specified trainingRuntime must be created before the TrainJob"]
    errors = []
    if _get(runtime, "spec", "mlPolicy", "torch") is not None:
        env = {e["name"] for e in _get(trainjob, "spec", "trainer", "env") or []}
        if env & TORCHRUN_RESERVED_ENV:
            errors.append(
                f"spec.trainer.env: must not have reserved envs {env & TORCHRUN_RESERVED_ENV}"
            )
    if _get(runtime, "spec", "podGroupPolicy", "volcano") is not None:
        annotations = runtime_annotations(trainjob, runtime)
        if annotations.get(QUEUE_ANNOTATION, None) == "":
            errors.append("Volcano queue name must not be empty")
        errors += priority_class_errors(runtime, trainjob, cluster_priority_classes(overlay))
    return errors + patch_errors(runtime, trainjob)


def volcano_podgroup(
    trainjob: dict[str, Any], runtime: dict[str, Any], namespace: dict[str, str] | None = None
) -> dict[str, Any] | None:
    """volcano.go Build (the PodGroup the Trainer creates; None: the plugin is off), its queue
    as Volcano admits it in a namespace with these annotations."""
    if _get(runtime, "spec", "podGroupPolicy", "volcano") is None:
        return None
    members = 0
    for job in _get(runtime, "spec", "template", "spec", "replicatedJobs") or []:
        count = _get(job, "template", "spec", "parallelism") or 1
        if _get(job, "template", "metadata", "labels", ANCESTOR_LABEL) == "trainer":
            ml_nodes = _get(runtime, "spec", "mlPolicy", "numNodes") or 1
            count = _get(trainjob, "spec", "trainer", "numNodes") or ml_nodes
        members += count
    queue = runtime_annotations(trainjob, runtime).get(QUEUE_ANNOTATION)
    return {"minMember": members, "queue": volcano_port.admitted_queue(queue, namespace)}


def test_the_test_repositories_have_trainer_v2_clusters_under_each_scheduler() -> None:
    built = [overlay(i) for i in IDS]
    names = {scheduler(o).get("name", "default") for o in built if any(o.of_kind("TrainJob"))}
    assert {"volcano", "kueue"} <= names, names


@pytest.mark.parametrize("overlay_id", IDS)
def test_the_trainer_webhook_admits_every_trainjob(overlay_id: str) -> None:
    built = overlay(overlay_id)
    for trainjob in built.of_kind("TrainJob"):
        assert webhook_errors(built, trainjob) == [], trainjob["metadata"]["name"]


@pytest.mark.parametrize("overlay_id", IDS)
def test_the_volcano_podgroup_lands_in_the_profiles_queue_with_every_node(
    overlay_id: str,
) -> None:
    """Issue 23 item 2: the queue was written on the TrainJob's metadata, which v2.3 never
    reads, so the PodGroup went to Volcano's `default` queue."""
    built = overlay(overlay_id)
    sched = scheduler(built)
    for trainjob in built.of_kind("TrainJob"):
        runtime = runtime_of(built, trainjob)
        assert runtime is not None
        podgroup = volcano_podgroup(trainjob, runtime)
        if sched.get("name") != "volcano":
            assert podgroup is None, "a PodGroup on a cluster without Volcano never schedules"
            continue
        queue = sched.get("queue", VOLCANO_DEFAULT_QUEUE)
        assert podgroup == {
            "minMember": trainjob["spec"]["trainer"]["numNodes"],
            "queue": queue,
        }, trainjob["metadata"]["name"]
        # A named queue stays; `default` would follow the namespace's annotation.
        annotated = volcano_podgroup(trainjob, runtime, {QUEUE_ANNOTATION: "ns-queue"})
        moved = queue if queue != VOLCANO_DEFAULT_QUEUE else "ns-queue"
        assert annotated is not None and annotated["queue"] == moved


@pytest.mark.parametrize("overlay_id", IDS)
def test_no_runtime_asks_for_the_coscheduling_plugin(overlay_id: str) -> None:
    """The coscheduling plugin makes scheduler-plugins PodGroups: no profile runs that
    scheduler, so such a runtime's pods would wait for a scheduler that is not there."""
    for runtime in overlay(overlay_id).of_kind("ClusterTrainingRuntime", "TrainingRuntime"):
        assert _get(runtime, "spec", "podGroupPolicy", "coscheduling") is None


def test_the_port_reads_the_queue_where_the_trainer_does() -> None:
    """The port itself: a queue on the TrainJob's metadata is ignored, a runtime patch's wins."""
    node = {"template": {"metadata": {"labels": {ANCESTOR_LABEL: "trainer"}}}}
    runtime = {
        "spec": {
            "podGroupPolicy": {"volcano": {}},
            "template": {
                "metadata": {"annotations": {QUEUE_ANNOTATION: "runtime-q"}},
                "spec": {"replicatedJobs": [node, {"name": "init"}]},
            },
        }
    }
    trainjob: dict[str, Any] = {
        "metadata": {"annotations": {QUEUE_ANNOTATION: "ignored"}},
        "spec": {"trainer": {"numNodes": 3}},
    }
    assert volcano_podgroup(trainjob, runtime) == {"minMember": 4, "queue": "runtime-q"}
    trainjob["spec"]["runtimePatches"] = [
        {
            "trainingRuntimeSpec": {
                "template": {"metadata": {"annotations": {QUEUE_ANNOTATION: "p"}}}
            }
        }
    ]
    assert volcano_podgroup(trainjob, runtime)["queue"] == "p"  # type: ignore[index]


@pytest.mark.parametrize("overlay_id", IDS)
def test_no_node_pod_the_trainer_builds_mounts_a_token(overlay_id: str) -> None:
    """Issue 29.4: the runtime's pod, with every runtime patch merged as the Trainer does,
    keeps `automountServiceAccountToken: false` (a patch cannot set it)."""
    built = overlay(overlay_id)
    for trainjob in built.of_kind("TrainJob"):
        runtime = runtime_of(built, trainjob)
        assert runtime is not None
        pod = node_pod(runtime, trainjob)
        assert pod["spec"]["automountServiceAccountToken"] is False, trainjob["metadata"]


def test_the_escape_hatch_reaches_the_node_pod_the_trainer_builds() -> None:
    """Issue 29.4: `podTemplate` and the first-class pod fields were dropped on the way to a
    TrainJob. Expectations from the job spec and the profile as written: each field is on
    the node pod the Trainer merges, the profile's GPU toleration kept beside the job's (a
    patch's tolerations replace the runtime's), the hatch's env over the job's."""
    spec = read_yaml(RICH / "jobs" / "v2-hatch.yaml")
    built = overlay(f"rich/{spec['targets'][0]['cluster']}")
    trainjob = built.find("TrainJob", spec["name"], spec["namespace"])
    assert trainjob is not None
    runtime = runtime_of(built, trainjob)
    assert runtime is not None
    pod = node_pod(runtime, trainjob)
    meta, pod_spec = pod["metadata"], pod["spec"]
    hatch = spec["podTemplate"]
    assert {**spec["podLabels"], **hatch["metadata"]["labels"]}.items() <= meta["labels"].items()
    assert spec["podAnnotations"].items() <= meta["annotations"].items()
    assert pod_spec["serviceAccountName"] == spec["serviceAccountName"]
    assert pod_spec["automountServiceAccountToken"] is False
    assert pod_spec["imagePullSecrets"] == [{"name": n} for n in spec["imagePullSecrets"]]
    assert pod_spec["affinity"] == spec["affinity"]
    (gpu,) = built.profile["gpus"]
    assert pod_spec["nodeSelector"] == {**gpu["nodeSelector"], **hatch["spec"]["nodeSelector"]}
    assert pod_spec["tolerations"] == gpu["tolerations"] + hatch["spec"]["tolerations"]
    assert pod_spec["securityContext"]["supplementalGroups"] == [2000]
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    assert all(v in pod_spec["volumes"] for v in spec["extraVolumes"])
    (node,) = [c for c in pod_spec["containers"] if c["name"] == "node"]
    assert all(m in node["volumeMounts"] for m in spec["extraVolumeMounts"])
    (asked,) = hatch["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in node["env"]}
    assert {e["name"]: e["value"] for e in asked["env"]}.items() <= env.items()
    assert node["resources"]["limits"]["memory"] == asked["resources"]["limits"]["memory"]
    assert node["securityContext"]["runAsNonRoot"] is True
    assert node["securityContext"]["readOnlyRootFilesystem"] is True, "the runtime's is kept"


def test_the_port_merges_as_strategic_merge_patch_does() -> None:
    """The port itself: tolerations (no patch strategy) are replaced, volumes merge by name
    and a same-named one takes the patch's source (retainKeys), env merges by name."""
    pod = {
        "spec": {
            "tolerations": [{"key": "gpu"}],
            "volumes": [{"name": "a", "emptyDir": {}}],
            "containers": [{"name": "node", "env": [{"name": "X", "value": "1"}]}],
        }
    }
    patch = {
        "spec": {
            "tolerations": [{"key": "mine"}],
            "volumes": [{"name": "a", "configMap": {"name": "c"}}, {"name": "b"}],
            "containers": [{"name": "node", "env": [{"name": "Y", "value": "2"}]}],
        }
    }
    merged = strategic_merge(pod, patch, {"$ref": "#/$defs/io.k8s.api.core.v1.PodTemplateSpec"})
    assert merged["spec"]["tolerations"] == [{"key": "mine"}]
    assert merged["spec"]["volumes"] == [{"name": "a", "configMap": {"name": "c"}}, {"name": "b"}]
    assert [e["name"] for e in merged["spec"]["containers"][0]["env"]] == ["X", "Y"]
