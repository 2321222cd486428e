"""Issue 29.7: a security rule a cluster profile's `policy` switches off says so in every
run's summary, in every format (text, json, SARIF, JUnit, GitHub, the HTML report, the PR
comment), whether or not anything breaks it. Before, it went silent when nothing broke it:
the switch was visible only in the profile."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.test_diff import git, render_and_commit
from tests.tools import REPO, copy_inputs, require_kustomize, require_tool, trainops

CLUSTER = "onprem-a100"
OFF = f"pod-fence ({CLUSTER})"
# A manifest with no pod: the rule has nothing to say but that it is off.
CLEAN = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ml-vision}\ndata: {a: b}\n"


def _switch_off(root: Path) -> None:
    profile = root / "clusters" / f"{CLUSTER}.yaml"
    text = profile.read_text()
    assert "\npolicy:" not in text
    profile.write_text(text + "policy:\n  pod-fence: off\n")


@pytest.fixture
def root(scratch: Path) -> Path:
    _switch_off(scratch)
    return scratch


def _validate(root: Path, fmt: str) -> str:
    clean = root / "clean.yaml"
    clean.write_text(CLEAN)
    result = trainops(
        root, "validate", "--manifests", str(clean), "--cluster", CLUSTER, "--format", fmt
    )
    assert "Traceback" not in result.stderr
    return result.stdout


def test_json_names_the_rule_in_the_summary_and_as_a_waived_finding(root: Path) -> None:
    report = json.loads(_validate(root, "json"))
    assert report["summary"]["rulesOff"] == [OFF]
    [notice] = [f for f in report["findings"] if f.get("switchedOff")]
    assert notice["rule"] == "pod-fence" and notice["file"] == f"clusters/{CLUSTER}.yaml"
    assert notice["waived"] == f"policy of cluster {CLUSTER}: pod-fence: off"
    assert report["findings"] == [notice]
    assert report["summary"]["errors"] == 0


def test_text_and_github_say_it_in_the_summary_line(root: Path) -> None:
    for fmt in ("text", "github"):
        last = _validate(root, fmt).rstrip().splitlines()[-1]
        assert last.endswith(f"security rules off by cluster policy: {OFF}"), (fmt, last)
    github = _validate(root, "github")
    assert any(x.startswith("::notice ") and "trainops pod-fence" in x for x in github.splitlines())


def test_sarif_carries_it_as_a_run_property_and_a_suppressed_result(root: Path) -> None:
    run = json.loads(_validate(root, "sarif"))["runs"][0]
    assert run["properties"]["rulesOff"] == [OFF]
    [result] = [r for r in run["results"] if r["ruleId"] == "pod-fence"]
    assert result["suppressions"][0]["kind"] == "inSource"


def test_junit_carries_it_as_a_suite_property_and_a_skipped_case(root: Path) -> None:
    suite = ET.fromstring(_validate(root, "junit")).find("testsuite")
    assert suite is not None
    values = [
        p.get("value") for p in suite.iter("property") if p.get("name") == "security-rule-off"
    ]
    assert values == [OFF]
    [case] = [c for c in suite.iter("testcase") if "[pod-fence]" in (c.get("name") or "")]
    assert case.find("skipped") is not None


def test_the_html_report_says_it(root: Path, tmp_path: Path) -> None:
    found = tmp_path / "findings.json"
    found.write_text(_validate(root, "json"))
    page = tmp_path / "r.html"
    result = trainops(root, "report", "--findings", str(found), "--out", str(page))
    assert result.returncode == 0, result.stderr
    assert f'id="rules-off">security rules off by cluster policy: {OFF}</span>' in (
        page.read_text()
    )


@pytest.mark.slow
def test_a_repository_run_says_it_with_nothing_breaking_the_rule(root: Path) -> None:
    result = trainops(root, "validate", "--cluster", CLUSTER, "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["summary"]["rulesOff"] == [OFF]
    assert report["summary"]["errors"] == 0


@pytest.mark.slow
def test_the_pr_comment_says_it(tmp_path: Path) -> None:
    require_tool("git")
    require_kustomize()
    root = copy_inputs(REPO, tmp_path / "repo")
    git(root, "init", "-q", "-b", "main")
    render_and_commit(root, "the shipped jobs")
    git(root, "checkout", "-q", "-b", "feature")
    _switch_off(root)
    render_and_commit(root, "pod-fence off")
    result = trainops(root, "diff", "--base", "main", "--format", "markdown")
    assert result.returncode == 0, result.stderr
    assert "Security rules switched off by cluster policy" in result.stdout
    assert f"`{OFF}`" in result.stdout
