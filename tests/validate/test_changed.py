"""`validate --changed` and `render --check --changed`: what a change reaches, on a scratch git
repository of the shipped jobs (real git, real kustomize); the property test against a full
validate on random edits is test_changed_property.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.validate.changed_repo import edit_yaml, git, scratch_repo, validate_json
from trainops.cli import main
from trainops.jobspec.load import load_repository
from trainops.validate import changed_files, changes

JOB = "resnet50-ddp"
JOB_CLUSTERS = {"onprem-a100", "cloud-h100", "onprem-h200"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return scratch_repo(tmp_path / "repo")


def scope_of(root: Path) -> changes.Scope:
    return changes.affected(root, load_repository(root), changed_files.change_from(root, "main"))


def jobs_on(root: Path, cluster: str) -> set[str]:
    return {
        job.name
        for job in load_repository(root).jobs
        if cluster in {t.cluster for t in job.targets}
    }


def test_one_job_reaches_that_job_on_each_of_its_clusters_and_gitops(repo: Path) -> None:
    edit_yaml(repo / "jobs" / f"{JOB}.yaml", replicas=2)
    scope = scope_of(repo)
    assert scope.everything is None
    assert scope.checked == {cluster: {JOB} for cluster in JOB_CLUSTERS}
    assert scope.gitops  # the AppProject's and Flux RBAC's kinds come from every job


def test_untracked_new_job_is_part_of_the_change(repo: Path) -> None:
    spec = yaml.safe_load((repo / "jobs" / f"{JOB}.yaml").read_text())
    spec.update(name="brand-new", targets=[{"cluster": "cloud-h100"}])
    (repo / "jobs" / "brand-new.yaml").write_text(yaml.safe_dump(spec))
    assert scope_of(repo).checked == {"cloud-h100": {"brand-new"}}


def test_removed_job_leaves_its_clusters_with_platform_and_no_job(repo: Path) -> None:
    (repo / "jobs" / f"{JOB}.yaml").unlink()
    scope = scope_of(repo)
    assert scope.checked == {cluster: set() for cluster in JOB_CLUSTERS}
    assert scope.touched == {cluster: {JOB} for cluster in JOB_CLUSTERS}


@pytest.mark.parametrize(
    "path", ["clusters/cloud-h100.yaml", "clusters/cloud-h100/manifests/kueue.yaml"]
)
def test_profile_or_platform_reaches_every_job_on_that_cluster(repo: Path, path: str) -> None:
    with (repo / path).open("a") as f:
        f.write("# a comment is a change\n")
    scope = scope_of(repo)
    assert scope.checked == {"cloud-h100": jobs_on(repo, "cloud-h100")}


@pytest.mark.parametrize("path", ["trainops.yaml", "trainops/render/pod.py", "setup.cfg"])
def test_settings_code_or_unknown_path_widen_to_everything(repo: Path, path: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    with (repo / path).open("a") as f:
        f.write("\n")
    assert scope_of(repo).everything is not None


def test_docs_reach_nothing_and_validate_checks_nothing(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "note.md").write_text("hello\n")
    code, report, err = validate_json(repo, capsys, "--changed", "--base", "main")
    assert code == 0 and report["summary"]["resources"] == 0
    assert "skipped docs/note.md: nothing built reads it" in err


def share_claim(repo: Path, cluster: str, claim: str, created_by: str) -> None:
    """Let jobs on `cluster` mount job `created_by`'s claim: the profile's
    `jobAccess.sharedClaims` naming its creator (the pod fence refuses it otherwise)."""
    path = repo / "clusters" / f"{cluster}.yaml"
    profile = yaml.safe_load(path.read_text())
    shared = profile.setdefault("jobAccess", {}).setdefault("sharedClaims", [])
    shared.append({"name": claim, "writable": True, "createdBy": created_by})
    path.write_text(yaml.safe_dump(profile))


def test_a_job_naming_another_jobs_claim_gets_it_as_context(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The single-node-claim rule finds `writer-scratch` (ReadWriteOnce) through the manifest
    set: without the writer's objects, the reader's finding would vanish. And the writer's own
    findings stay out (it is context, not changed)."""
    spec = yaml.safe_load((repo / "jobs" / f"{JOB}.yaml").read_text())
    spec["targets"] = [{"cluster": "cloud-h100"}]
    writer = {**spec, "name": "writer", "replicas": 1}
    writer["volumes"] = {
        **spec["volumes"],
        "scratch": {"mountPath": "/scratch", "size": "1Gi", "accessMode": "ReadWriteOnce"},
    }
    reader = {**spec, "name": "reader", "replicas": 2}
    reader["volumes"] = {**spec["volumes"], "scratch": {"mountPath": "/scratch"}}
    reader["volumes"]["scratch"]["claimName"] = "writer-scratch"
    share_claim(repo, "cloud-h100", "writer-scratch", "writer")
    for job in (writer, reader):
        (repo / "jobs" / f"{job['name']}.yaml").write_text(yaml.safe_dump(job))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "writer and reader")
    edit_yaml(repo / "jobs" / "reader.yaml", replicas=3)

    scope = changes.affected(repo, load_repository(repo), changed_files.change_from(repo, "HEAD"))
    assert scope.checked == {"cloud-h100": {"reader"}}
    # resnet50-ddp too: the copied spec still names it (`--checkpoint-dir=.../resnet50-ddp`).
    assert scope.context == {"cloud-h100": {"writer", JOB}}
    _, full, _ = validate_json(repo, capsys)
    _, changed, _ = validate_json(repo, capsys, "--changed", "--base", "HEAD")
    # Each finding on the reader's objects is told at its spec's line.
    on_reader = [f for f in full["findings"] if f["file"] == "jobs/reader.yaml"]
    assert any(f["rule"] == "claim-single-node" for f in on_reader), on_reader
    assert changed["findings"] == [
        f for f in full["findings"] if f["cluster"] == "cloud-h100" and f in on_reader
    ]


def test_changing_a_job_rechecks_the_jobs_that_name_it(repo: Path) -> None:
    spec = yaml.safe_load((repo / "jobs" / f"{JOB}.yaml").read_text())
    spec.update(name="follower", targets=[{"cluster": "cloud-h100"}])
    spec["volumes"]["dataset"] = {"mountPath": "/data", "claimName": f"{JOB}-dataset"}
    share_claim(repo, "cloud-h100", f"{JOB}-dataset", JOB)
    (repo / "jobs" / "follower.yaml").write_text(yaml.safe_dump(spec))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "follower")
    edit_yaml(repo / "jobs" / f"{JOB}.yaml", replicas=2)
    scope = changes.affected(repo, load_repository(repo), changed_files.change_from(repo, "HEAD"))
    assert scope.checked["cloud-h100"] == {JOB, "follower"}
    assert scope.checked["onprem-a100"] == {JOB}


def test_bad_base_is_one_line_and_exit_2(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(repo), "validate", "--changed", "--base", "no-such-ref"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        "error: --base: unknown git ref `no-such-ref`: pass a branch, tag or commit"
    ]


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "--base", "main"],
        ["validate", "--changed", "--manifests", "x.yaml"],
        ["render", "--changed"],
    ],
)
def test_misused_options_are_usage_errors(
    repo: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(["--root", str(repo), *argv]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_render_check_changed_finds_stale_output_of_the_changed_job(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_yaml(repo / "jobs" / f"{JOB}.yaml", replicas=2)
    assert main(["--root", str(repo), "render", "--check", "--changed", "--base", "main"]) == 1
    err = capsys.readouterr().err
    assert f"base/{JOB}/pytorchjob.yaml: stale" in err
    assert f"overlays/cloud-h100/{JOB}/" not in err or "stale" in err


def test_render_check_changed_finds_a_hand_edited_generated_file(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = repo / "overlays" / "cloud-h100" / "llm-finetune" / "kustomization.yaml"
    edited.write_text(edited.read_text() + "# edited by hand\n")
    leftover = repo / "base" / "gone-job" / "kustomization.yaml"
    leftover.parent.mkdir()
    leftover.write_text("resources: []\n")
    assert main(["--root", str(repo), "render", "--check", "--changed", "--base", "main"]) == 1
    err = capsys.readouterr().err
    assert "overlays/cloud-h100/llm-finetune/kustomization.yaml: stale" in err
    assert "base/gone-job/kustomization.yaml: extra" in err


def test_render_check_changed_finds_a_removed_jobs_leftovers(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo / "jobs" / f"{JOB}.yaml").unlink()
    assert main(["--root", str(repo), "render", "--check", "--changed", "--base", "main"]) == 1
    err = capsys.readouterr().err
    assert f"base/{JOB}/kustomization.yaml: extra" in err
    assert f"overlays/cloud-h100/{JOB}/kustomization.yaml: extra" in err
    assert "overlays/cloud-h100/_jobs/kustomization.yaml: stale" in err


def test_render_check_changed_is_clean_on_a_rendered_change(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edit_yaml(repo / "jobs" / f"{JOB}.yaml", replicas=2)
    assert main(["--root", str(repo), "render"]) == 0
    assert main(["--root", str(repo), "render", "--check", "--changed", "--base", "main"]) == 0
