"""`trainops live-diff` against the API emulator (kmock on 127.0.0.1, not a real cluster).

The live objects carry what a real cluster adds by itself (uid, resourceVersion, managed
fields, Flux's labels, Kueue's `suspend`, Service and PVC defaults, canonicalised
quantities, status): the diff must ignore all of it and show only what differs for real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cluster.conftest import built, live, response, run_cli
from trainops.cluster.emulator_thread import RunningEmulator


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
    total = len(built(repo))
    assert err == (
        f"0 of {total} objects differ between Git and cluster cloud-h100 (context trainops-test)\n"
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
    assert f"2 of {len(built(repo))} objects differ" in err
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


def test_a_kind_the_cluster_does_not_serve_is_named_and_the_rest_compared(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A cluster without the Prometheus Operator: on main, exit 2 and no diff at all."""
    for m in built(repo):
        if m.kind == "ServiceMonitor":
            continue  # the cluster cannot hold them
        obj = live(m.data, uid=f"uid-{m.kind}-{m.name}")
        if m.kind == "PyTorchJob" and m.name == "resnet50-ddp":
            obj["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 1
        api.add(obj)
    api.call(
        lambda e: e.resources.pop(next(r for r in e.resources if r.plural == "servicemonitors"))
    )
    code, out, err = _live_diff(capsys, repo, kubeconfig)
    assert code == 1
    # The rest is compared: the hand-scaled job is a diff.
    assert "--- live/cloud-h100 PyTorchJob ml-vision/resnet50-ddp\n" in out
    assert "ServiceMonitor" not in out
    monitors = [m for m in built(repo) if m.kind == "ServiceMonitor"]
    lines = err.splitlines()
    assert lines[: len(monitors)] == [
        f"not compared: ServiceMonitor {m.namespace}/{m.name} ({m.file}): {api.url} (context"
        " trainops-test) does not serve ServiceMonitor (monitoring.coreos.com/v1): its CRD is"
        " not installed; install the Prometheus Operator"
        for m in sorted(monitors, key=lambda m: (m.file or "", m.namespace or "", m.name or ""))
    ]
    compared = len(built(repo)) - len(monitors)
    assert lines[-1] == (
        f"1 of {compared} compared object differs between Git and cluster cloud-h100 (context"
        f" trainops-test); {len(monitors)} not compared (kind not served)"
    )


def _v2_repo(repo: Path) -> Path:
    profile = repo / "clusters" / "onprem-h200.yaml"
    profile.write_text(profile.read_text(encoding="utf-8") + "context: trainops-test\n")
    return repo


def _deploy_v2(api: RunningEmulator, repo: Path, image: str | None = None) -> None:
    """The onprem-h200 overlay as the cluster holds it: the Trainer's webhook stamped `time`
    on our runtime patch, and Kueue added a patch of its own (a list map keyed by manager)."""
    for m in built(repo, "onprem-h200"):
        obj = live(m.data, uid=f"uid-{m.kind}-{m.name}")
        if m.kind == "TrainJob":
            obj["status"] = response("trainjob-status", "running")
            obj["spec"]["runtimePatches"][0]["time"] = "2026-11-23T08:00:01Z"
            kueue = {
                "manager": "kueue.x-k8s.io/manager",
                "time": "2026-11-23T08:00:02Z",
                "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [
                    {"name": "node", "template": {"spec": {"template": {"spec": {
                        "nodeSelector": {"cloud.example/flavor": "h200"}}}}}}
                ]}}},
            }  # fmt: skip
            obj["spec"]["runtimePatches"].insert(0, kueue)
            if image:
                obj["spec"]["trainer"]["image"] = image
        api.add(obj)


def test_trainjob_webhook_time_and_other_managers_patches_are_not_drift(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _deploy_v2(api, _v2_repo(repo))
    code, out, err = run_cli(
        capsys, "--root", str(repo), "live-diff", "--cluster", "onprem-h200",
        "--kubeconfig", str(kubeconfig),
    )  # fmt: skip
    assert (code, out) == (0, ""), out
    assert err.startswith("0 of ")
    # `status` reads the same TrainJob: running from its JobSet's Jobs, in sync with Git.
    code, out, err = run_cli(
        capsys, "--root", str(repo), "status", "--cluster", "onprem-h200",
        "--kubeconfig", str(kubeconfig),
        "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    row = next(j for j in json.loads(out)["jobs"] if j["name"] == "resnet50-ddp")
    assert (row["kind"], row["phase"], row["gpus"], row["git"]) == (
        "TrainJob", "Running", 4, "in sync"
    )  # fmt: skip


def test_a_changed_trainjob_is_drift(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _deploy_v2(api, _v2_repo(repo), image="ghcr.io/example/trainops-trainer:0.0.9")
    code, out, err = run_cli(
        capsys, "--root", str(repo), "live-diff", "--cluster", "onprem-h200",
        "--kubeconfig", str(kubeconfig),
    )  # fmt: skip
    assert code == 1
    assert "1 of " in err
    assert "--- live/onprem-h200 TrainJob ml-vision/resnet50-ddp\n" in out
    assert "+++ git/base/resnet50-ddp/trainer-v2/trainjob.yaml TrainJob" in out
    assert "-    image: ghcr.io/example/trainops-trainer:0.0.9\n" in out
    assert "kueue" not in out and "time:" not in out
