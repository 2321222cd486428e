"""One job spec, two operators: a PyTorchJob on Training Operator v1 clusters, a TrainJob and
its runtime on Kubeflow Trainer v2 clusters — rendered with the CLI, built by the real
kustomize, read as plain YAML and compared with each other and with the specs (docs/trainer-v2.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.render.repos import RICH, build_overlay, read_yaml, render
from tests.tools import REPO, copy_inputs, require_kustomize, trainops, tree

V1, V2 = "onprem-a100", "onprem-h200"


def _one(objs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _env(container: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def _node_pod(runtime: dict[str, Any]) -> dict[str, Any]:
    jobs = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    (node,) = [j for j in jobs if j["name"] == "node"]
    return node["template"]["spec"]["template"]


def _patch_pod(trainjob: dict[str, Any]) -> dict[str, Any]:
    (patch,) = trainjob["spec"]["runtimePatches"]
    assert patch["manager"] == "trainops.dev/render"
    (node,) = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    return node["template"]["spec"]["template"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    require_kustomize()
    root = render(copy_inputs(REPO, tmp_path_factory.mktemp("repo")))
    return {c: build_overlay(root, c) for c in (V1, V2)}


def test_the_same_job_is_a_pytorchjob_on_v1_and_a_trainjob_on_v2(
    built: dict[str, list[dict[str, Any]]],
) -> None:
    spec = read_yaml(REPO / "jobs" / "resnet50-ddp.yaml")
    profiles = {c: read_yaml(REPO / "clusters" / f"{c}.yaml") for c in (V1, V2)}
    assert "operator" not in profiles[V1]  # the default: Training Operator v1
    assert profiles[V2]["operator"] == {"name": "trainer", "version": "2.3"}

    pytorchjob = _one(built[V1], "PyTorchJob", spec["name"])
    assert not [o for o in built[V1] if o["kind"] == "TrainJob"]
    trainjob = _one(built[V2], "TrainJob", spec["name"])
    assert not [o for o in built[V2] if o["kind"] == "PyTorchJob"]
    ref = trainjob["spec"]["runtimeRef"]
    runtime = _one(built[V2], ref["kind"], ref["name"])
    # dataSync and backoffLimit are what a TrainJob cannot say: the job has its own runtime.
    assert (ref["kind"], runtime["metadata"]["namespace"]) == ("TrainingRuntime", spec["namespace"])

    master = pytorchjob["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    v1_container = master["spec"]["containers"][0]
    trainer = trainjob["spec"]["trainer"]
    # The program, as written once in the spec, in both.
    for key in ("image", "command", "args"):
        assert trainer[key] == v1_container[key], key
    assert trainer["args"] == spec["args"]
    # Pods and processes per pod.
    assert (
        trainer["numNodes"]
        == spec["replicas"]
        == sum(r["replicas"] for r in pytorchjob["spec"]["pytorchReplicaSpecs"].values())
    )
    assert trainer["numProcPerNode"] == spec["gpusPerReplica"]
    assert str(trainer["numProcPerNode"]) == pytorchjob["spec"]["nprocPerNode"]
    # The job's env in the TrainJob; the cluster's NCCL env in the runtime.
    v1_env, v2_env = _env(v1_container), _env(trainer)
    for name, value in spec["env"].items():
        assert v1_env[name] == v2_env[name] == value
    assert not [n for n in v2_env if n.startswith("NCCL_") and n not in spec["env"]]
    (runtime_container,) = _node_pod(runtime)["spec"]["containers"]
    rdma = profiles[V2]["network"]["rdma"]
    assert _env(runtime_container)["NCCL_IB_HCA"] == rdma["hca"]
    assert (
        _env(runtime_container)["NCCL_SOCKET_IFNAME"] == profiles[V2]["network"]["socketInterface"]
    )
    assert "IPC_LOCK" in runtime_container["securityContext"]["capabilities"]["add"]
    assert trainer["resourcesPerNode"]["limits"][rdma["deviceResource"]] == 1
    # GPU product selector and tolerations: the runtime's, from the profile.
    (gpu,) = profiles[V2]["gpus"]
    assert _node_pod(runtime)["spec"]["nodeSelector"] == gpu["nodeSelector"]
    assert _node_pod(runtime)["spec"]["tolerations"] == gpu["tolerations"]
    # Volcano: gang scheduling and the queue in the runtime, where Trainer v2.3 reads the
    # queue (tests/conformance/test_trainer_v2.py follows its code); never on the TrainJob.
    assert runtime["spec"]["podGroupPolicy"] == {"volcano": {}}
    queue = profiles[V2]["scheduler"]["queue"]
    queue_key = "scheduling.volcano.sh/queue-name"
    assert runtime["spec"]["template"]["metadata"]["annotations"][queue_key] == queue
    assert queue_key not in trainjob["metadata"].get("annotations", {})
    # The pod's volumes, mounts and security context: the same, through the runtime patch.
    patch = _patch_pod(trainjob)
    assert patch["spec"]["volumes"] == master["spec"]["volumes"]
    assert patch["spec"]["securityContext"] == master["spec"]["securityContext"]
    assert patch["spec"]["containers"][0]["volumeMounts"] == v1_container["volumeMounts"]
    assert _node_pod(runtime)["spec"]["initContainers"] == master["spec"]["initContainers"]
    # No suspend, no TTL (a TrainJob has none): nothing that would re-run it under GitOps.
    assert "suspend" not in trainjob["spec"]
    # The metrics Service selects the pods JobSet labels with the TrainJob's name.
    service = _one(built[V2], "Service", f"{spec['name']}-metrics")
    assert service["spec"]["selector"] == {"jobset.sigs.k8s.io/jobset-name": spec["name"]}


def test_the_cluster_runtimes_cover_every_gpu_product(
    built: dict[str, list[dict[str, Any]]],
) -> None:
    profile = read_yaml(REPO / "clusters" / f"{V2}.yaml")
    runtimes = [o for o in built[V2] if o["kind"] == "ClusterTrainingRuntime"]
    assert sorted(r["metadata"]["name"] for r in runtimes) == sorted(
        f"trainops-torch-{g['name']}" for g in profile["gpus"]
    )
    for runtime in runtimes:
        assert "namespace" not in runtime["metadata"]
        assert runtime["spec"]["mlPolicy"]["torch"] == {}
    assert not [o for o in built[V1] if "TrainingRuntime" in o["kind"]]


def _variant(tmp_path: Path, job: str, edit: Any) -> Path:
    root = copy_inputs(REPO, tmp_path)
    path = root / "jobs" / f"{job}.yaml"
    data = yaml.safe_load(path.read_text())
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return root


def test_a_fixed_size_deepspeed_job_on_v2_references_the_cluster_runtime(tmp_path: Path) -> None:
    """No dataSync, no backoffLimit: the TrainJob stays small and references the cluster's
    ClusterTrainingRuntime; the hashed DeepSpeed ConfigMap name reaches its runtime patch."""
    require_kustomize()

    def fixed_on_v2(spec: dict[str, Any]) -> None:
        del spec["elastic"]
        spec["targets"] = [{"cluster": V2}]

    root = render(_variant(tmp_path, "llm-finetune", fixed_on_v2))
    objs = build_overlay(root, V2)
    trainjob = _one(objs, "TrainJob", "llm-finetune")
    assert trainjob["spec"]["runtimeRef"] == {
        "apiGroup": "trainer.kubeflow.org",
        "kind": "ClusterTrainingRuntime",
        "name": "trainops-torch-h200-141gb",
    }
    assert not [
        o for o in objs if o["kind"] == "TrainingRuntime" and "llm" in o["metadata"]["name"]
    ]
    (configmap,) = [  # not the Grafana dashboard (monitoring.md): the job's DeepSpeed config
        o for o in objs if o["kind"] == "ConfigMap" and "llm" in o["metadata"]["name"]
    ]
    assert configmap["metadata"]["name"].startswith("llm-finetune-deepspeed-")
    volumes = {v["name"]: v for v in _patch_pod(trainjob)["spec"]["volumes"]}
    assert volumes["deepspeed-config"]["configMap"]["name"] == configmap["metadata"]["name"]
    result = trainops(root, "validate", "--cluster", V2)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("edit", "line_key", "message"),
    [
        (
            lambda s: s["targets"].append({"cluster": V2}),
            "- cluster: onprem-h200",
            "job `llm-finetune` is elastic but cluster `onprem-h200` runs Kubeflow Trainer v2"
            " (2.3), which has no elastic training",
        ),
        (
            lambda s: (
                s.pop("elastic"),
                s["runPolicy"].update(ttlSecondsAfterFinished=3600),
                s["targets"].append({"cluster": V2}),
            ),
            "ttlSecondsAfterFinished: 3600",
            "a TrainJob has no TTL",
        ),
    ],
    ids=["elastic", "ttl"],
)
def test_what_v2_cannot_run_is_refused_with_file_and_line(
    tmp_path: Path, edit: Any, line_key: str, message: str
) -> None:
    root = _variant(tmp_path, "llm-finetune", edit)
    before = tree(root)
    result = trainops(root, "render")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = (root / "jobs" / "llm-finetune.yaml").read_text().splitlines()
    line = [text.strip() for text in lines].index(line_key) + 1
    assert f"jobs/llm-finetune.yaml:{line}:" in result.stderr
    assert message in result.stderr
    assert tree(root) == before  # nothing written


@pytest.mark.parametrize(
    ("operator", "message"),
    [
        ({"name": "trainer", "version": "2.2"}, "(supported: 2.3); earlier v2 releases"),
        ({"name": "training-operator", "version": "2.3"}, "for Kubeflow Trainer v2 write"),
        ({"name": "trainer", "version": "two"}, "`operator.version` must match"),
    ],
)
def test_operator_versions_are_checked(tmp_path: Path, operator: Any, message: str) -> None:
    root = copy_inputs(REPO, tmp_path)
    path = root / "clusters" / f"{V2}.yaml"
    data = yaml.safe_load(path.read_text())
    data["operator"] = operator
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = trainops(root, "render")
    assert result.returncode == 2
    assert f"clusters/{V2}.yaml:" in result.stderr and message in result.stderr


def test_on_a_kueue_v2_cluster_the_trainjob_has_the_queue_label_and_no_suspend(
    tmp_path: Path,
) -> None:
    """The rich fixture's `tcp-kueue-v2`: Kueue admits by the label and flips `suspend`
    itself; a CPU-only job references the CPU runtime, which has the TCP NCCL env and no GPU
    selector; Flux waits on the TrainJob's own health."""
    require_kustomize()
    root = render(copy_inputs(RICH, tmp_path))
    profile = read_yaml(root / "clusters" / "tcp-kueue-v2.yaml")
    objs = build_overlay(root, "tcp-kueue-v2")
    trainjob = _one(objs, "TrainJob", "cpu-only")
    queue = profile["scheduler"]["queue"]
    assert trainjob["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == queue
    assert "suspend" not in trainjob["spec"]
    assert "scheduling.volcano.sh/queue-name" not in trainjob["metadata"].get("annotations", {})
    assert trainjob["spec"]["runtimeRef"]["name"] == "trainops-torch-cpu"
    runtime = _one(objs, "ClusterTrainingRuntime", "trainops-torch-cpu")
    pod = _node_pod(runtime)
    assert "nodeSelector" not in pod["spec"] and "podGroupPolicy" not in runtime["spec"]
    assert _env(pod["spec"]["containers"][0]) == {
        "NCCL_IB_DISABLE": "1",
        "NCCL_SOCKET_IFNAME": profile["network"]["socketInterface"],
    }
    assert "nvidia.com/gpu" not in str(trainjob["spec"]["trainer"]["resourcesPerNode"])
    flux = read_yaml(root / "gitops" / "flux" / "tcp-kueue-v2" / "training.yaml")
    kinds = {e["kind"]: e for e in flux["spec"]["healthCheckExprs"]}
    assert kinds["TrainJob"]["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
