"""GitHub workflows and pre-commit hooks: schema-valid, pinned, least privilege, real commands."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, require_tool
from trainops.cli import COMMANDS, build_parser

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.y*ml"))
FULL_SHA_WITH_VERSION = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+\.\d+\.\d+$")


def check_jsonschema() -> str:
    """The check-jsonschema console script of this interpreter's environment, else PATH."""
    beside = Path(sys.executable).parent / "check-jsonschema"
    return str(beside) if beside.exists() else require_tool("check-jsonschema")


def validate_workflow(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [check_jsonschema(), "--builtin-schema", "vendor.github-workflows", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )


def load(path: Path) -> dict[Any, Any]:
    data: dict[Any, Any] = yaml.safe_load(path.read_text())
    return data


def test_there_is_a_workflow() -> None:
    assert [p.name for p in WORKFLOWS] == ["ci.yml"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_matches_the_github_schema(path: Path) -> None:
    proc = validate_workflow(path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_schema_check_rejects_a_broken_workflow(tmp_path: Path) -> None:
    broken = load(WORKFLOWS[0])
    broken["jobs"]["validate"]["permissions"]["contents"] = "readwrite"
    path = tmp_path / "broken.yml"
    path.write_text(yaml.safe_dump(broken))
    assert validate_workflow(path).returncode != 0


SETUP_ACTION = REPO / ".github" / "actions" / "setup" / "action.yml"


@pytest.mark.parametrize("path", [*WORKFLOWS, SETUP_ACTION], ids=lambda p: p.name)
def test_actions_are_pinned_to_full_commit_shas(path: Path) -> None:
    """Third-party actions by full commit SHA; our own composite action by its path."""
    uses = [
        line.split("uses:", 1)[1].strip()
        for line in path.read_text().splitlines()
        if line.strip().startswith(("uses:", "- uses:"))
    ]
    assert uses
    for ref in uses:
        if ref.startswith("./"):
            assert (REPO / ref / "action.yml").is_file(), ref
        else:
            assert FULL_SHA_WITH_VERSION.match(ref), ref


def test_setup_action_matches_the_github_schema() -> None:
    proc = subprocess.run(
        [check_jsonschema(), "--builtin-schema", "vendor.github-actions", str(SETUP_ACTION)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_job_installs_through_the_setup_action() -> None:
    """One installer, not a copy per job: no job downloads kustomize or sets up Python itself."""
    text = WORKFLOWS[0].read_text()
    assert "setup-python" not in text and "kustomize.tgz" not in text
    jobs = load(WORKFLOWS[0])["jobs"]
    for name in ("validate", "test", "wheel", "diff"):
        steps = [s.get("uses", "") for s in jobs[name]["steps"]]
        assert "./.github/actions/setup" in steps, name


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_least_privilege_permissions(path: Path) -> None:
    workflow = load(path)
    assert workflow["permissions"] == {}
    for name, job in workflow["jobs"].items():
        permissions = job.get("permissions")
        assert isinstance(permissions, dict), f"job {name} must state its permissions"
        writes = {k for k, v in permissions.items() if v == "write"}
        assert writes <= {"security-events", "pull-requests", "packages"}, name
    jobs = workflow["jobs"]
    assert jobs["image"]["permissions"].get("packages") == "write"
    assert "packages" not in jobs["validate"]["permissions"]
    assert "pull-requests" not in jobs["image"]["permissions"]


def test_tools_are_pinned_and_checksummed() -> None:
    action = load(SETUP_ACTION)
    install = next(s for s in action["runs"]["steps"] if "kustomize" in s.get("name", ""))
    env = install["env"]
    for tool in ("KUSTOMIZE", "KUBECONFORM"):
        assert re.fullmatch(r"\d+\.\d+\.\d+", env[f"{tool}_VERSION"])
        assert re.fullmatch(r"[0-9a-f]{64}", env[f"{tool}_SHA256"])
    assert install["run"].count("sha256sum --check --strict") == 2


def test_pr_and_main_jobs() -> None:
    jobs = load(WORKFLOWS[0])["jobs"]
    assert jobs["diff"]["if"] == "github.event_name == 'pull_request'"
    assert "refs/heads/main" in jobs["image"]["if"]
    assert set(jobs["image"]["needs"]) == {"validate", "test"}
    build = next(s for s in jobs["image"]["steps"] if "build-push-action" in s.get("uses", ""))
    assert build["with"]["file"] == "trainer/Dockerfile"
    runs = " ".join(s.get("run", "") for s in jobs["test"]["steps"])
    assert "make test" in runs


def trainops_commands() -> list[tuple[str, list[str]]]:
    """Every `trainops ...` / `python -m trainops ...` invocation in workflows and hooks."""
    found: list[tuple[str, list[str]]] = []
    sources = [*WORKFLOWS, REPO / ".pre-commit-hooks.yaml", REPO / ".pre-commit-config.yaml"]
    for path in sources:
        for line in path.read_text().splitlines():
            match = re.search(r"(?:^|[\s:])(?:trainops|python -m trainops)\s+([a-z].*)$", line)
            if not match or line.lstrip(" -").startswith(("#", "name:", "description:")):
                continue
            words = shlex.split(match.group(1).split(">")[0].split("||")[0])
            found.append((path.name, [w for w in words if not w.startswith("$")]))
    return found


@pytest.mark.parametrize(
    ("source", "argv"), trainops_commands(), ids=lambda v: v if isinstance(v, str) else " ".join(v)
)
def test_commands_exist_with_those_options(source: str, argv: list[str]) -> None:
    assert argv[0] in COMMANDS, f"{source}: `trainops {argv[0]}` is not a trainops command"
    if argv[-1] == "--base":
        argv = [*argv, "origin/main"]
    if argv[-1] == "--manifests":
        argv = [*argv, "x.yaml"]
    build_parser().parse_args(argv)  # exits (fails the test) on an unknown option


def test_kubeconform_runs_through_trainops_schema_layout() -> None:
    """Pointed at `schemas/crds` as committed, kubeconform cannot resolve the core definitions
    (tests/validate/test_kubeconform_layout.py): the workflow must use `--kubeconform`."""
    text = WORKFLOWS[0].read_text()
    assert "-schema-location" not in text
    validate_args = [argv for _, argv in trainops_commands() if argv[0] == "validate"]
    assert any("--kubeconform" in argv for argv in validate_args)
    assert any("--manifests" in argv and "--kubeconform" in argv for argv in validate_args)


def test_commands_found() -> None:
    commands = {argv[0] for _, argv in trainops_commands()}
    assert {"render", "validate", "diff"} <= commands


def test_pre_commit_hooks() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    ids = [h["id"] for h in hooks]
    assert len(ids) == len(set(ids))
    for hook in hooks:
        assert {"id", "name", "entry", "language"} <= set(hook)
        assert hook["entry"].startswith("trainops ")
        assert hook["language"] == "python"
    by_id = {h["id"]: h for h in hooks}
    assert by_id["trainops-render-check"]["entry"] == "trainops render --check"
    assert by_id["trainops-render-check"]["pass_filenames"] is False


def test_pre_commit_config_pins_revisions() -> None:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    for repo in config["repos"]:
        if repo["repo"] != "local":
            assert re.fullmatch(r"v?\d+\.\d+\.\d+", repo["rev"]), repo
    pyproject = (REPO / "pyproject.toml").read_text()
    ruff = next(r for r in config["repos"] if "ruff" in r["repo"])
    assert f'"ruff=={ruff["rev"].lstrip("v")}"' in pyproject


def test_pre_commit_config_and_hooks_validate() -> None:
    """The real `pre-commit validate-config` / `validate-manifest` accept our files."""
    exe = require_tool("pre-commit")
    for args in (
        ["validate-config", ".pre-commit-config.yaml"],
        ["validate-manifest", ".pre-commit-hooks.yaml"],
    ):
        proc = subprocess.run([exe, *args], cwd=REPO, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_pull_requests_validate_what_they_change_and_main_everything() -> None:
    """Issue 28: on a pull request the validate job passes `--changed --base <the PR's base
    sha>` to render --check and validate (with the history that sha needs); on a push the
    scope step leaves it empty, so main validates everything."""
    job = load(WORKFLOWS[0])["jobs"]["validate"]
    checkout = next(s for s in job["steps"] if "actions/checkout" in s.get("uses", ""))
    assert checkout["with"]["fetch-depth"] == 0
    scope = next(s for s in job["steps"] if s.get("id") == "scope")
    assert scope["env"]["BASE_SHA"] == "${{ github.event.pull_request.base.sha }}"
    script = scope["run"]
    pr_branch, _, push_branch = script.partition("else")
    assert '"$EVENT" = pull_request' in pr_branch and "--changed --base $BASE_SHA" in pr_branch
    assert "changed=" in push_branch and "--changed" not in push_branch
    uses_scope = [
        s["run"] for s in job["steps"] if "steps.scope.outputs.changed" in str(s.get("env", {}))
    ]
    assert any(r.startswith("trainops render --check $CHANGED") for r in uses_scope)
    assert any("trainops validate $CHANGED --format sarif" in r for r in uses_scope)
    assert any("trainops validate $CHANGED --format github" in r for r in uses_scope)
