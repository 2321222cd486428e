"""`trainops live-diff` against the API emulator (kmock on 127.0.0.1, not a real cluster).

The live objects carry what a real cluster adds by itself (uid, resourceVersion, managed
fields, Flux's labels, Kueue's `suspend`, Service and PVC defaults, canonicalised
quantities, status): the diff must ignore all of it and show only what differs for real.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.conftest import built, live, response, run_cli
from tests.cluster.emulator import RunningEmulator


def _deploy_all(api: RunningEmulator, repo: Path) -> None:
    for m in built(repo):
        status = response("pytorchjob-status", "running") if m.kind == "PyTorchJob" else None
        api.add(live(m.data, status, uid=f"uid-{m.kind}-{m.name}"))


def _live_diff(
    capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path
) -> tuple[int, str, str]:
    return run_cli(
        capsys, "--root", str(repo), "live-diff", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig),
    )  # fmt: skip


def test_in_sync_cluster_has_no_diff_despite_server_defaults(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _deploy_all(api, repo)
    code, out, err = _live_diff(capsys, repo, kubeconfig)
    assert (code, out) == (0, ""), out
    assert (
        err == "0 of 11 objects differ between Git and cluster cloud-h100 (context trainops-test)\n"
    )


def test_changed_field_and_missing_object_are_a_unified_diff_and_exit_1(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for m in built(repo):
        if m.kind == "ServiceMonitor" and m.name == "llm-finetune":
            continue  # not on the cluster
        obj = live(m.data, uid=f"uid-{m.kind}-{m.name}")
        if m.kind == "PyTorchJob" and m.name == "resnet50-ddp":
            obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 1  # scaled by hand
        api.add(obj)
    code, out, err = _live_diff(capsys, repo, kubeconfig)
    assert code == 1
    assert "2 of 11 objects differ" in err
    assert (
        "--- live/cloud-h100 PyTorchJob ml-vision/resnet50-ddp\n"
        "+++ git/base/resnet50-ddp/pytorchjob.yaml PyTorchJob ml-vision/resnet50-ddp\n"
    ) in out
    assert "-      replicas: 1\n+      replicas: 3\n" in out
    assert (
        "--- live/cloud-h100 ServiceMonitor ai-training/llm-finetune (not on the cluster)\n"
        "+++ git/base/llm-finetune/servicemonitor.yaml ServiceMonitor ai-training/llm-finetune\n"
    ) in out
    assert "+kind: ServiceMonitor\n" in out
    # Nothing the server stamped shows up.
    for stamp in ("resourceVersion", "managedFields", "uid", "suspend", "clusterIPs", "status"):
        assert stamp not in out


def test_live_diff_names_a_missing_crd(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.call(
        lambda e: e.resources.pop(next(r for r in e.resources if r.plural == "servicemonitors"))
    )
    code, out, err = _live_diff(capsys, repo, kubeconfig)
    assert (code, out) == (2, "")
    assert err == (
        f"error: {api.url} (context trainops-test) does not serve ServiceMonitor"
        " (monitoring.coreos.com/v1): its CRD is not installed; install the Prometheus"
        " Operator\n"
    )
