"""Which job specs `--changed` checks at the door (`trainops.jobspec.checked`, issue 39): the
changed ones and every spec on a cluster the change reaches; the others are loaded for their
names, targets and kinds and not checked again. Real git and kustomize on a scratch copy of
the shipped repository (tests/validate/changed_repo.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.validate.changed_repo import edit_yaml, git, scratch_repo, validate_json
from trainops.cli import main
from trainops.jobspec.load import load_repository
from trainops.validate import changed_files, changes

# Only resnet50-ddp runs on onprem-h200; every shipped job runs on onprem-a100.
LONE_CLUSTER = "onprem-h200"
TEMPLATE = "tf-distributed"
# A spec the schema accepts and its own checks refuse (the torch rendezvous port).
REFUSED_PORT = 29500


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return scratch_repo(tmp_path / "repo")


def commit_refused_job(repo: Path, clusters: list[str]) -> Path:
    """Commit a job whose spec its own checks refuse (a base that skipped CI), on `clusters`."""
    spec = yaml.safe_load((repo / "jobs" / f"{TEMPLATE}.yaml").read_text())
    spec.update(name="left-alone", metricsPort=REFUSED_PORT)
    spec["targets"] = [{"cluster": c} for c in clusters]
    path = repo / "jobs" / "left-alone.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a refused job")
    return path


def touch_profile(repo: Path, cluster: str) -> None:
    with (repo / "clusters" / f"{cluster}.yaml").open("a") as f:
        f.write("# a comment is a change\n")


def test_an_unchanged_spec_on_clusters_no_change_reaches_is_not_checked_again(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commit_refused_job(repo, ["onprem-a100"])
    touch_profile(repo, LONE_CLUSTER)
    code, report, err = validate_json(repo, capsys, "--changed", "--base", "HEAD")
    assert code == 0, err
    assert report["summary"]["errors"] == 0
    assert "job spec(s) loaded, not checked again: unchanged, on clusters no change reaches" in err


def test_the_whole_validate_refuses_what_changed_left_unchecked(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commit_refused_job(repo, ["onprem-a100"])
    code, report, _ = validate_json(repo, capsys)
    assert code == 2
    assert any(
        f["file"] == "jobs/left-alone.yaml" and str(REFUSED_PORT) in f["message"]
        for f in report["findings"]
    )


def test_an_unchanged_spec_on_a_reached_cluster_is_checked(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commit_refused_job(repo, [LONE_CLUSTER])
    touch_profile(repo, LONE_CLUSTER)
    code, report, _ = validate_json(repo, capsys, "--changed", "--base", "HEAD")
    assert code == 2
    assert [f["file"] for f in report["findings"]] == ["jobs/left-alone.yaml"]


def test_a_changed_spec_is_checked_wherever_it_runs(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = commit_refused_job(repo, ["onprem-a100"])
    edit_yaml(path, replicas=3)
    code, report, _ = validate_json(repo, capsys, "--changed", "--base", "HEAD")
    assert code == 2
    assert {f["file"] for f in report["findings"]} == {"jobs/left-alone.yaml"}


def test_render_check_changed_leaves_the_same_specs_unchecked(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commit_refused_job(repo, ["onprem-a100"])
    touch_profile(repo, LONE_CLUSTER)
    capsys.readouterr()
    code = main(["--root", str(repo), "render", "--check", "--changed", "--base", "HEAD"])
    err = capsys.readouterr().err
    assert code in (0, 1), err  # not 2: the refused spec is not checked again
    assert str(REFUSED_PORT) not in err


def _writer_and_reader(repo: Path) -> None:
    """Two jobs on cloud-h100 that meet through a claim (the context case)."""
    spec = yaml.safe_load((repo / "jobs" / f"{TEMPLATE}.yaml").read_text())
    spec["targets"] = [{"cluster": "cloud-h100"}]
    for name in ("writer", "reader"):
        (repo / "jobs" / f"{name}.yaml").write_text(yaml.safe_dump({**spec, "name": name}))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "two jobs")
    edit_yaml(repo / "jobs" / "reader.yaml", replicas=3)


CHANGES = {
    "a job": lambda r: edit_yaml(r / "jobs" / "resnet50-ddp.yaml", replicas=2),
    "a new job": lambda r: (r / "jobs" / "fresh.yaml").write_text(
        (r / "jobs" / f"{TEMPLATE}.yaml").read_text().replace(f"name: {TEMPLATE}", "name: fresh")
    ),
    "a removed job": lambda r: (r / "jobs" / "resnet50-ddp.yaml").unlink(),
    "a profile": lambda r: touch_profile(r, LONE_CLUSTER),
    "platform objects": lambda r: (
        (r / "clusters" / "cloud-h100" / "manifests" / "kueue.yaml").open("a").write("# changed\n")
    ),
    "the settings": lambda r: (r / "trainops.yaml").open("a").write("\n"),
    "the renderer": lambda r: (
        (r / "trainops" / "x.py").parent.mkdir(parents=True)
        or (r / "trainops" / "x.py").write_text("\n")
    ),
    "docs": lambda r: (r / "docs").mkdir() or (r / "docs" / "x.md").write_text("x\n"),
    "two jobs meeting": _writer_and_reader,
}


@pytest.mark.parametrize("what", sorted(CHANGES))
def test_every_job_a_scope_builds_is_checked_at_the_door(repo: Path, what: str) -> None:
    """The promise the loader relies on: `--changed` builds only jobs whose spec it checked,
    and checks everything exactly when its scope is everything."""
    CHANGES[what](repo)
    change = changed_files.change_from(repo, "HEAD")
    specs = changed_files.specs_checked(change)
    repo_model = load_repository(repo)
    scope = changes.affected(repo, repo_model, change)
    assert (specs is None) == (scope.everything is not None), what
    if specs is None:
        return
    by_name = {job.name: job for job in repo_model.jobs}
    built = {name for jobs in scope.clusters().values() for name in jobs if name in by_name}
    for name in built:
        job = by_name[name]
        assert specs.checks(job.file, (t.cluster for t in job.targets)), (what, name)
