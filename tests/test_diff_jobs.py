"""`trainops diff`'s "Running jobs" (issue 34 item 2, issue 33 item 2): per cluster, what a
change creates, restarts, updates in place, cannot update and deletes, with GPUs, against a
base ref holding jobs that run or ended and a change that edits, renames, removes and adds
jobs and renames a cluster's queue. Real git, renderer and kustomize (tests/test_diff.py's
scratch repository). Which fields each consumer refuses: trainops/facts/lifecycle.py, checked
against the upstream CRDs in tests/conformance/test_lifecycle.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.test_diff import render_and_commit, run_diff, scratch  # noqa: F401 (fixture)
from trainops.cli import main
from trainops.facts.lifecycle import KUEUE_IMMUTABLE, immutable_fields
from trainops.kube.job_change import classify, dotted
from trainops.report import job_changes


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


def _change(root: Path) -> None:
    """One PR: resnet's learning rate, tf-distributed renamed (a restart), a new TF job, the
    other TF job removed, and onprem-a100's Volcano queue renamed (every kept v1 job there)."""
    jobs = root / "jobs"
    _edit(jobs / "resnet50-ddp.yaml", "--lr=0.01", "--lr=0.02")
    shutil.copy(jobs / "tf-distributed.yaml", jobs / "tf-extra.yaml")
    _edit(jobs / "tf-extra.yaml", "name: tf-distributed", "name: tf-extra")
    (jobs / "tensorflow-distributed.yaml").unlink()
    (jobs / "tf-distributed.yaml").rename(jobs / "tf-distributed-r2.yaml")
    _edit(jobs / "tf-distributed-r2.yaml", "name: tf-distributed", "name: tf-distributed-r2")
    clusters = root / "clusters"
    _edit(clusters / "onprem-a100.yaml", "queue: research", "queue: vision")
    _edit(clusters / "onprem-a100.yaml", "    research: {gpus: 64}", "    vision: {gpus: 64}")
    _edit(clusters / "onprem-a100" / "manifests" / "volcano.yaml", "name: research", "name: vision")


def _lines(out: str, cluster: str) -> list[str]:
    """The job lines of `cluster` in the text output's running-jobs section."""
    section = out.split("running jobs:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    start = next(i for i, line in enumerate(section) if line.startswith(f"  {cluster} ("))
    lines = []
    for line in section[start + 1 :]:
        if not line.startswith("    "):
            break
        lines.append(line.strip())
    return lines


def test_the_running_jobs_section(
    scratch: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    _change(scratch)
    render_and_commit(scratch, "the change")
    capsys.readouterr()
    assert main(["--root", str(scratch), "diff"]) == 1  # something cannot be updated
    out, err = capsys.readouterr()
    a100 = _lines(out, "onprem-a100")
    groups = {line.split(": ", 1)[0] for line in a100}
    assert groups == {"creates", "restarts", "updates in place", "cannot update", "deletes"}
    # The queue rename: the API server refuses a kept v1 job's new queue (CRD rule).
    queue = "spec.runPolicy.schedulingPolicy.queue (refused by the API server"
    assert any(x.startswith("cannot update: PyTorchJob ai-training/llm-finetune (") and queue in x
               for x in a100)  # fmt: skip
    assert any(x.startswith("cannot update: PyTorchJob ml-vision/resnet50-ddp (") for x in a100)
    # Renamed (a new run): the old run is deleted and the new one starts, with its GPUs.
    restart = next(x for x in a100 if x.startswith("restarts: "))
    assert restart.startswith(
        "restarts: TFJob ai-training/tf-distributed -> TFJob ai-training/tf-distributed-r2"
        " (32 GPUs); from jobs/tf-distributed-r2.yaml: the old run is deleted"
    )
    assert "creates: TFJob " in "\n".join(a100) and "/tf-extra (" in "\n".join(a100)
    assert any(x.startswith("deletes: TFJob ") and "/tensorflow-distributed (" in x for x in a100)
    # cloud-h100 keeps its queue: resnet's new learning rate updates the PyTorchJob in place.
    h100 = _lines(out, "cloud-h100")
    lr = next(x for x in h100 if "PyTorchJob ml-vision/resnet50-ddp" in x)
    assert lr.startswith("updates in place: PyTorchJob ml-vision/resnet50-ddp (")
    assert "changes spec.pytorchReplicaSpecs.Master.template.spec.containers[0].args[6]" in lr
    # Trainer v2: spec.trainer is immutable, the same edit cannot be applied to the TrainJob.
    (h200,) = _lines(out, "onprem-h200")
    assert h200.startswith("cannot update: TrainJob ml-vision/resnet50-ddp (")
    assert "spec.trainer.args[6] (refused by the API server" in h200
    assert "error: onprem-h200: TrainJob ml-vision/resnet50-ddp cannot be updated:" in err

    md = run_diff(scratch, capsys, "--format", "markdown", rc=1)
    assert "#### Running jobs" in md and "> [!CAUTION]" in md
    assert "| restarts | `TFJob ai-training/tf-distributed` → `TFJob ai-training/tf-" in md
    assert "| updates in place | `PyTorchJob ml-vision/resnet50-ddp` | " in md


def test_a_change_that_only_adds_is_accepted(
    scratch: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    jobs = scratch / "jobs"
    shutil.copy(jobs / "tf-distributed.yaml", jobs / "tf-more.yaml")
    _edit(jobs / "tf-more.yaml", "name: tf-distributed", "name: tf-more")
    render_and_commit(scratch, "one more job")
    out = run_diff(scratch, capsys)
    assert "creates: TFJob ai-training/tf-more (32 GPUs): its pods start" in out
    assert "  onprem-h200 (argocd): no job changes" in out


def _job(queue: str, label: str = "a", suspended: bool = False) -> dict[str, object]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "j", "namespace": "n",
                     "labels": {"kueue.x-k8s.io/queue-name": label}},
        "spec": {"runPolicy": {"schedulingPolicy": {"queue": queue}, "suspend": suspended}},
        "status": {"conditions": [{"type": "Running", "status": "True"}]},
    }  # fmt: skip


def test_classify() -> None:
    """The refused fields, by path: the queue (CRD), Kueue's label only on Kueue clusters,
    a queue set where none was (no transition rule fires), status never."""
    assert classify(_job("q"), _job("q"), kueue=True).changed == ()
    queue = classify(_job("q"), _job("r"), kueue=False)
    assert [dotted(r.path) for r in queue.refused] == ["spec.runPolicy.schedulingPolicy.queue"]
    label = classify(_job("q", "a"), _job("q", "b"), kueue=True)
    assert [r.rule for r in label.refused] == [KUEUE_IMMUTABLE]
    assert classify(_job("q", "a"), _job("q", "b"), kueue=False).applies
    unset = _job("q")
    unset["spec"] = {"runPolicy": {}}
    assert classify(unset, _job("r"), kueue=False).applies
    assert dotted(("metadata", "labels", "kueue.x-k8s.io/queue-name")) == (
        'metadata.labels["kueue.x-k8s.io/queue-name"]'
    )
    assert immutable_fields("kubeflow.org/v2beta1", "MPIJob", kueue=False) == ()


def test_groups_in_both_formats() -> None:
    """A restart is a job removed and one added alike (names aside), same kind and namespace;
    otherwise a create and a delete."""

    def job(name: str, args: list[str]) -> dict[str, object]:
        return {"apiVersion": "kubeflow.org/v1", "kind": "TFJob",
                "metadata": {"name": name, "namespace": "n",
                             "annotations": {job_changes.SOURCE_ANNOTATION: f"jobs/{name}.yaml"}},
                "spec": {"image": "img:1", "replicas": 2, "args": [*args, name]}}  # fmt: skip

    same = [f"--flag-{i}" for i in range(20)]
    other = [f"--other-{i}" for i in range(20)]
    base = {"a": job("a", same), "b": job("b", [f"--b-{i}" for i in range(20)])}
    head = {"a2": job("a2", [*same, "--one-more"]), "c": job("c", other)}
    cluster = job_changes.cluster_jobs("x", "flux", base, head, kueue=False)
    assert [e.job for e in cluster.groups[job_changes.RESTARTS]] == ["TFJob n/a2"]
    assert [e.job for e in cluster.groups[job_changes.CREATES]] == ["TFJob n/c"]
    assert [e.job for e in cluster.groups[job_changes.DELETES]] == ["TFJob n/b"]
    assert job_changes.refused([cluster]) == []
    assert "| deletes | `TFJob n/b` | 0 |" in job_changes.format_markdown([cluster])
