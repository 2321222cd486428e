"""`trainops diff` on a scratch git repository: real git, real renderer, real kustomize."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.tools import REPO, require_kustomize, require_tool
from trainops.cli import main
from trainops.diff import (
    COMMENT_MARKER,
    compare,
    gpu_count,
    object_key,
)
from trainops.jobspec.load import load_repository
from trainops.render import render_repository

JOB = "resnet50-ddp"


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def render_and_commit(root: Path, message: str) -> str:
    for rel, text in render_repository(load_repository(root)).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    require_tool("git")
    require_kustomize()
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copytree(REPO / "jobs", root / "jobs")
    shutil.copytree(REPO / "clusters", root / "clusters")
    shutil.copy(REPO / "trainops.yaml", root / "trainops.yaml")
    git(root, "init", "-q", "-b", "main")
    render_and_commit(root, "jobs and their rendered output")
    git(root, "checkout", "-q", "-b", "feature")
    return root


def set_replicas(root: Path, job: str, old: int, new: int) -> None:
    path = root / "jobs" / f"{job}.yaml"
    text = path.read_text()
    assert f"\nreplicas: {old}\n" in text
    path.write_text(text.replace(f"\nreplicas: {old}\n", f"\nreplicas: {new}\n"))


def run_diff(root: Path, capsys: pytest.CaptureFixture[str], *extra: str, rc: int = 0) -> str:
    capsys.readouterr()
    assert main(["--root", str(root), "diff", *extra]) == rc
    return capsys.readouterr().out


def test_changed_job_between_two_commits(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = next(j for j in load_repository(scratch).jobs if j.name == JOB)
    set_replicas(scratch, JOB, job.replicas, job.replicas + 2)
    render_and_commit(scratch, "two more workers")

    # Exit 1: a TrainJob's spec.trainer (numNodes) is immutable (below).
    out = run_diff(scratch, capsys, rc=1)  # default base: merge base with main
    profiles = load_repository(scratch).clusters
    clusters = sorted(t.cluster for t in job.targets)
    kinds = {c: "TrainJob" if profiles[c].operator.trainer_v2 else "PyTorchJob" for c in clusters}
    assert sorted(set(kinds.values())) == ["PyTorchJob", "TrainJob"]  # both operators
    delta = 2 * job.gpus_per_replica
    for cluster in clusters:
        head = f"cluster {cluster}: 0 added, 1 changed, 0 removed; GPUs "
        line = next(x for x in out.splitlines() if x.startswith(head))
        assert line.endswith(f"({delta:+d})")
        assert f"--- a/{cluster}/{kinds[cluster]}/{job.namespace}/{JOB}" in out
        assert f"+++ b/{cluster}/{kinds[cluster]}/{job.namespace}/{JOB}" in out
    # The Worker replica count (a TrainJob's numNodes) moved by two (and, under Volcano on v1,
    # the gang size with it; v2's PodGroup follows numNodes): nothing else in the job did.
    changed = [x for x in out.splitlines() if x[:1] in ("+", "-") and x[:3] not in ("---", "+++")]
    workers = job.replicas - 1
    expected = []
    for cluster in clusters:
        if kinds[cluster] == "TrainJob":
            expected += [f"-    numNodes: {job.replicas}", f"+    numNodes: {job.replicas + 2}"]
            continue
        expected += [f"-      replicas: {workers}", f"+      replicas: {workers + 2}"]
        if profiles[cluster].scheduler.kind == "volcano":
            expected += [
                f"-      minAvailable: {job.replicas}",
                f"+      minAvailable: {job.replicas + 2}",
            ]
    assert sorted(changed) == sorted(expected)
    # What it does to the running job, per cluster: the v1 job is updated in place (the
    # Training Operator accepts a new replica count), the TrainJob cannot be (spec.trainer).
    for cluster in clusters:
        group = "cannot update" if kinds[cluster] == "TrainJob" else "updates in place"
        assert f"    {group}: {kinds[cluster]} {job.namespace}/{JOB} (" in out, cluster
    markdown = run_diff(scratch, capsys, "--format", "markdown", rc=1)
    assert "> [!CAUTION]" in markdown and "spec.trainer.numNodes (refused by" in markdown


def test_uncommitted_edit_is_rendered_from_the_working_tree(
    scratch: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No `trainops render`, no commit: diff still shows what the change will deliver.
    job = next(j for j in load_repository(scratch).jobs if j.name == JOB)
    set_replicas(scratch, JOB, job.replicas, job.replicas + 1)
    out = run_diff(scratch, capsys, "--base", "main", rc=1)  # the TrainJob's numNodes
    assert f"({job.gpus_per_replica:+d})" in out


def test_removed_job_and_markdown(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (scratch / "jobs" / f"{JOB}.yaml").unlink()
    render_and_commit(scratch, "drop resnet")
    out = run_diff(scratch, capsys, "--format", "markdown")
    assert out.startswith(COMMENT_MARKER + "\n")
    assert "| cluster | added | changed | removed | GPUs (base → head) |" in out
    assert "+++ /dev/null" in out
    assert f"--- a/onprem-a100/PyTorchJob/ml-vision/{JOB}" in out
    assert f"--- a/onprem-a100/PersistentVolumeClaim/ml-vision/{JOB}-dataset" in out
    row = next(x for x in out.splitlines() if x.startswith("| `onprem-a100` |"))
    # Nothing added; changed only the namespace's alert rules, whose failed-job alert names
    # the jobs it watches (render/alerts.py): the job's own objects are removed.
    assert row.startswith("| `onprem-a100` | 0 | 1 |")
    changed = [x for x in out.splitlines() if x.startswith("+++ b/onprem-a100/")]
    assert changed == ["+++ b/onprem-a100/PrometheusRule/ml-vision/trainops-training"]
    assert "<details>" in out and "```diff" in out


def test_no_changes(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "no changes to the built manifests" in run_diff(scratch, capsys)


def test_unknown_ref_is_a_usage_error(scratch: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(scratch), "diff", "--base", "no-such-branch"]) == 2
    assert "unknown git ref `no-such-branch`" in capsys.readouterr().err


def test_generated_configmap_is_matched_across_hash_changes() -> None:
    old = {"kind": "ConfigMap", "metadata": {"name": "x-deepspeed-9m65fc9kd8", "namespace": "n"}}
    new = {"kind": "ConfigMap", "metadata": {"name": "x-deepspeed-b7f2kh4m5t", "namespace": "n"}}
    assert object_key(old) == object_key(new) == "ConfigMap/n/x-deepspeed"
    (d,) = compare({"c": {object_key(old): old}}, {"c": {object_key(new): new}})
    assert d.changed == ["ConfigMap/n/x-deepspeed"] and not d.added and not d.removed


def test_gpu_count_uses_replicas_and_limits() -> None:
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"template": {"spec": {"containers": [gpu_container(8)]}}},
                "Worker": {"replicas": 3, "template": {"spec": {"containers": [gpu_container(8)]}}},
            }
        },
    }
    service = {"apiVersion": "v1", "kind": "Service", "spec": {}}
    assert gpu_count([job, service]) == 32


def gpu_container(n: int) -> dict[str, object]:
    return {"name": "pytorch", "resources": {"limits": {"nvidia.com/gpu": n, "cpu": "4"}}}
