"""`trainops doctor` against the API emulator (kmock on 127.0.0.1, not a real cluster).

The emulator holds a platform that meets everything clusters/cloud-h100.yaml assumes
(responses/platform.yaml: the operators', Kueue's, Flux's and the GPU Operator's objects as
their installers write them, four H100 nodes, the delivery account's rights); each other test
breaks one thing and checks that exactly that check fails, with what to do, and exit 1.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.conftest import response, run_cli
from trainops.cluster.emulator import ApiEmulator
from trainops.cluster.emulator_thread import RunningEmulator

# Kinds the doctor reads that the other commands do not (the Kubernetes API reference), and
# Kueue v0.19's Workload version (kueue.x-k8s.io/v1beta2, served since v0.15).
DOCTOR_KINDS = {
    ("apps/v1", "Deployment"): ("deployments", True),
    ("apps/v1", "DaemonSet"): ("daemonsets", True),
    ("apps/v1", "StatefulSet"): ("statefulsets", True),
    ("v1", "Node"): ("nodes", False),
    ("kueue.x-k8s.io/v1beta2", "Workload"): ("workloads", True),
}
DELIVERY = "system:serviceaccount:flux-system:trainops-delivery"
Breaker = Callable[[dict[str, Any]], None]


def _platform(api: RunningEmulator, change: Breaker | None = None) -> None:
    state = response("platform", "")
    nodes = []
    for name in state["nodes"]:
        node = copy.deepcopy(state["node"])
        node["metadata"]["name"] = name
        nodes.append(node)
    state["objects"] += nodes
    if change is not None:
        change(state)

    def install(e: ApiEmulator) -> None:
        for (api_version, kind), (plural, namespaced) in DOCTOR_KINDS.items():
            e.declare(api_version, kind, plural, namespaced)
        for obj in state["objects"]:
            e.add(obj)
        e.server_version = state["version"]
        e.grants = state["grants"]
        e.impersonators = {"alice"}

    api.call(install)


def _doctor(capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path, *extra: str) -> Any:
    return run_cli(
        capsys, "--root", str(repo), "doctor", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig), *extra,
    )  # fmt: skip


def test_a_platform_that_meets_the_profile_passes_every_check(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _platform(api)
    code, out, err = _doctor(capsys, repo, kubeconfig)
    assert code == 0, out + err
    lines = out.splitlines()
    assert all(line.startswith("ok    ") for line in lines[:-1]), out
    names = [line[6:].split(":", 1)[0] for line in lines[:-1]]
    assert names[0] == "server version"
    assert "crd PyTorchJob (kubeflow.org/v1)" in names
    assert "crd MPIJob (kubeflow.org/v2beta1)" in names
    assert "crd PrometheusRule (monitoring.coreos.com/v1)" in names
    assert "crd Workload (kueue.x-k8s.io/v1beta2)" in names
    for name in ("operator training-operator", "operator mpi-operator",
                 "operator kueue-controller-manager", "kueue integrations", "gpu h100-80gb",
                 "dcgm-exporter", "delivery flux", "delivery account in namespace ml-vision",
                 "delivery account in namespace ai-training",
                 "delivery account in cluster scope"):  # fmt: skip
        assert name in names, name
    assert lines[-1] == (
        f"OK: {len(lines) - 1} checks on cluster cloud-h100 (context trainops-test), 0 failed"
    )
    code, out, _ = _doctor(capsys, repo, kubeconfig, "-o", "json")
    report = json.loads(out)
    assert code == 0 and report["summary"] == {"ok": len(lines) - 1, "failed": 0, "skipped": 0}
    assert report["checks"][0]["check"] == "server version"


def _object(state: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    return next(o for o in state["objects"] if o["kind"] == kind and o["metadata"]["name"] == name)


def _without(kind: str, name: str) -> Breaker:
    def change(state: dict[str, Any]) -> None:
        state["objects"].remove(_object(state, kind, name))

    return change


def _args(name: str, args: list[str]) -> Breaker:
    def change(state: dict[str, Any]) -> None:
        _object(state, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]["args"] = (
            args
        )

    return change


def _version(state: dict[str, Any]) -> None:
    state["version"] = {"major": "1", "minor": "29", "gitVersion": "v1.29.10-gke.1227000"}


def _kueue_without_pytorchjob(state: dict[str, Any]) -> None:
    cm = _object(state, "ConfigMap", "kueue-manager-config")
    key = "controller_manager_config.yaml"
    cm["data"][key] = cm["data"][key].replace('  - "kubeflow.org/pytorchjob"\n', "")


def _unlabelled_node(state: dict[str, Any]) -> None:
    node = _object(state, "Node", "gpu-h100-3")
    del node["metadata"]["labels"]["nvidia.com/gpu.product"]


def _no_device_plugin(state: dict[str, Any]) -> None:
    node = _object(state, "Node", "gpu-h100-2")
    del node["status"]["allocatable"]["nvidia.com/gpu"]


def _dcgm_not_ready(state: dict[str, Any]) -> None:
    _object(state, "DaemonSet", "nvidia-dcgm-exporter")["status"]["numberReady"] = 3


def _no_patch_on_pytorchjobs(state: dict[str, Any]) -> None:
    rules = state["grants"][DELIVERY]
    rules[0]["apiGroups"].remove("kubeflow.org")
    verbs = ["create", "delete", "get", "list", "watch"]
    rules.append({"namespaces": ["ml-vision", "ai-training"], "apiGroups": ["kubeflow.org"],
                  "resources": ["*"], "verbs": verbs})  # fmt: skip


def _no_servicemonitor_crd(state: dict[str, Any]) -> None:
    pass  # the CRD is removed from discovery below


BROKEN: dict[str, tuple[Breaker, str, str]] = {
    "server older than the profile": (
        _version,
        "server version",
        "the API server runs v1.29.10-gke.1227000, the profile says kubernetesVersion 1.31",
    ),
    "training operator missing": (
        _without("Deployment", "training-operator"),
        "operator training-operator",
        "no Deployment training-operator in any namespace: nothing runs PyTorchJob, TFJob here",
    ),
    "training operator without the pytorchjob scheme": (
        _args("training-operator", ["--enable-scheme=tfjob"]),
        "operator training-operator",
        "kubeflow/training-operator (1/1 ready): --enable-scheme leaves out pytorchjob",
    ),
    "mpi operator not ready": (
        lambda s: _object(s, "Deployment", "mpi-operator")["status"].update(readyReplicas=0),
        "operator mpi-operator",
        "mpi-operator/mpi-operator (0/1 ready): not ready",
    ),
    "kueue at another release than the profile's": (
        lambda s: _object(s, "Deployment", "kueue-controller-manager")["spec"]["template"]["spec"][
            "containers"
        ][0].update(image="registry.k8s.io/kueue/kueue:v0.18.1"),
        "operator kueue-controller-manager",
        "it runs Kueue 0.18 (registry.k8s.io/kueue/kueue:v0.18.1), the profile says"
        ' `installed.kueue.version: "0.19"`',
    ),
    "kueue without the pytorchjob integration": (
        _kueue_without_pytorchjob,
        "kueue integrations",
        "ConfigMap kueue-system/kueue-manager-config does not enable kubeflow.org/pytorchjob",
    ),
    "a gpu node without the product label": (
        _unlabelled_node,
        "gpu h100-80gb",
        "3 nodes have nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3,"
        " `capacity.nodes.h100-80gb` declares 4",
    ),
    "a gpu node without the device plugin": (
        _no_device_plugin,
        "gpu h100-80gb",
        "1 of 4 nodes with nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 have 0 allocatable"
        " nvidia.com/gpu, not 8 (gpu-h100-2)",
    ),
    "dcgm exporter missing": (
        _without("DaemonSet", "nvidia-dcgm-exporter"),
        "dcgm-exporter",
        "no DCGM exporter DaemonSet",
    ),
    "dcgm exporter not ready": (
        _dcgm_not_ready,
        "dcgm-exporter",
        "DaemonSet gpu-operator/nvidia-dcgm-exporter: 3/4 ready",
    ),
    "flux missing": (
        _without("Deployment", "kustomize-controller"),
        "delivery flux",
        "no Deployment kustomize-controller in any namespace",
    ),
    "delivery account may not patch pytorchjobs": (
        _no_patch_on_pytorchjobs,
        "delivery account in namespace",
        f"{DELIVERY} may not patch mpijobs.kubeflow.org; patch pytorchjobs.kubeflow.org; patch"
        " tfjobs.kubeflow.org: the sync fails there",
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_broken_assumption_fails_its_own_check(
    case: str,
    api: RunningEmulator,
    repo: Path,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    change, check, message = BROKEN[case]
    _platform(api, change)
    code, out, err = _doctor(capsys, repo, kubeconfig)
    assert code == 1, out + err
    failed = [line for line in out.splitlines() if line.startswith("FAIL  ")]
    assert failed and all(line.startswith(f"FAIL  {check}") for line in failed), out
    assert message in failed[0], failed[0]


def test_a_crd_the_cluster_does_not_serve_fails_its_line_and_the_rest_run(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _platform(api)
    api.call(
        lambda e: e.resources.pop(next(r for r in e.resources if r.plural == "servicemonitors"))
    )
    code, out, _ = _doctor(capsys, repo, kubeconfig, "--format", "json")
    assert code == 1
    report = json.loads(out)
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert [c["check"] for c in failed] == ["crd ServiceMonitor (monitoring.coreos.com/v1)"]
    assert failed[0]["message"].endswith(
        "does not serve ServiceMonitor (monitoring.coreos.com/v1): its CRD is not installed;"
        " install the Prometheus Operator"
    )
    assert report["summary"]["failed"] == 1 and report["summary"]["ok"] > 10


def test_a_check_rbac_forbids_is_skipped_with_the_reason(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without `impersonate`, the delivery account's rights cannot be asked: skip, not ok."""
    _platform(api)
    api.call(lambda e: setattr(e, "impersonators", set()))
    code, out, _ = _doctor(capsys, repo, kubeconfig)
    assert code == 0, out
    skipped = [line for line in out.splitlines() if line.startswith("skip  ")]
    assert len(skipped) == 1, out
    assert skipped[0].startswith(f"skip  delivery account {DELIVERY}: could not check: 403")
    assert "cannot impersonate" in skipped[0]


def test_the_platform_fixture_is_what_its_installers_write() -> None:
    """The recorded objects keep the installers' names the doctor looks for."""
    state = yaml.safe_load((Path(__file__).parent / "responses" / "platform.yaml").read_text())
    names = {(o["kind"], o["metadata"]["name"]) for o in state["objects"]}
    assert ("Deployment", "training-operator") in names
    assert ("ConfigMap", "kueue-manager-config") in names


ARGOCD = "system:serviceaccount:trainops-delivery:trainops-delivery"


def _onprem(state: dict[str, Any]) -> None:
    """The same platform for clusters/onprem-a100.yaml: Volcano (the Training Operator's
    gang flag), A100 nodes with the RDMA shared device plugin's resource, Argo CD applying as
    the delivery account (argocd-cm's sync impersonation, Argo CD v2.13+)."""
    operator = _object(state, "Deployment", "training-operator")
    operator["spec"]["template"]["spec"]["containers"][0]["args"] = [
        "--enable-scheme=pytorchjob", "--enable-scheme=tfjob", "--gang-scheduler-name=volcano"
    ]  # fmt: skip
    mpi = _object(state, "Deployment", "mpi-operator")
    mpi["spec"]["template"]["spec"]["containers"][0]["args"].append("--gang-scheduling=volcano")
    for name in ("kueue-controller-manager", "kustomize-controller"):
        state["objects"].remove(_object(state, "Deployment", name))
    state["objects"].remove(_object(state, "ConfigMap", "kueue-manager-config"))
    nodes = [o for o in state["objects"] if o["kind"] == "Node"]
    for i, first in enumerate(nodes * 2):  # 8 x a100-80gb, as capacity.nodes declares
        node = copy.deepcopy(first)
        node["metadata"]["name"] = f"gpu-a100-{i}"
        node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB"
        node["status"]["allocatable"]["rdma/rdma_shared_device_a"] = "1k"
        state["objects"].append(node)
    for i in range(2):  # 2 x a100-40gb
        node = copy.deepcopy(nodes[0])
        node["metadata"]["name"] = f"gpu-a100-40-{i}"
        node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-40GB"
        node["status"]["allocatable"]["rdma/rdma_shared_device_a"] = "1k"
        state["objects"].append(node)
    for node in nodes:
        state["objects"].remove(node)
    _object(state, "DaemonSet", "nvidia-dcgm-exporter")["status"].update(
        desiredNumberScheduled=10, numberReady=10, currentNumberScheduled=10
    )
    state["objects"] += state["argocd"]
    grants = state["grants"].pop(DELIVERY)
    grants[0]["apiGroups"] += ["k8s.cni.cncf.io"]
    grants[1] = {"namespaces": [], "apiGroups": ["scheduling.k8s.io", "scheduling.volcano.sh"],
                 "resources": ["*"], "verbs": ["*"]}  # fmt: skip
    state["grants"][ARGOCD] = grants
    state["version"] = {"major": "1", "minor": "30", "gitVersion": "v1.30.6"}


ONPREM: dict[str, tuple[Breaker | None, str, str]] = {
    "as the profile assumes": (None, "", ""),
    "no volcano gang flag": (
        _args("training-operator", ["--enable-scheme=pytorchjob", "--enable-scheme=tfjob"]),
        "operator training-operator", "no --gang-scheduler-name=volcano: the operator creates no"
        " PodGroup",
    ),
    "no rdma device plugin on a node": (
        lambda s: _object(s, "Node", "gpu-a100-5")["status"]["allocatable"].pop(
            "rdma/rdma_shared_device_a"),
        "rdma rdma/rdma_shared_device_a", "1 of 10 GPU nodes have no allocatable"
        " rdma/rdma_shared_device_a (gpu-a100-5)",
    ),
    "argocd without sync impersonation": (
        lambda s: _object(s, "ConfigMap", "argocd-cm").update(data={}),
        "delivery argocd", "argocd/argocd-cm does not set"
        ' `application.sync.impersonation.enabled: "true"`',
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(ONPREM))
def test_volcano_rdma_and_argocd_assumptions(
    case: str,
    api: RunningEmulator,
    repo: Path,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    profile = repo / "clusters" / "onprem-a100.yaml"
    profile.write_text(profile.read_text(encoding="utf-8") + "context: trainops-test\n")
    change, check, message = ONPREM[case]

    def both(state: dict[str, Any]) -> None:
        _onprem(state)
        if change is not None:
            change(state)

    _platform(api, both)
    code, out, err = run_cli(
        capsys, "--root", str(repo), "doctor", "--cluster", "onprem-a100",
        "--kubeconfig", str(kubeconfig),
    )  # fmt: skip
    failed = [line for line in out.splitlines() if line.startswith("FAIL  ")]
    if change is None:
        assert (code, failed) == (0, []), out + err
        assert "ok    crd PodGroup (scheduling.volcano.sh/v1beta1): served (Volcano)" in out
        assert "ok    rdma rdma/rdma_shared_device_a: allocatable on all 10 GPU nodes" in out
        assert "ok    delivery argocd: StatefulSet argocd/argocd-application-controller" in out
        return
    assert code == 1, out + err
    assert len(failed) == 1 and failed[0].startswith(f"FAIL  {check}:"), out
    assert message in failed[0], failed[0]
