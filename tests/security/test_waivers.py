"""Issue 29.6: a waiver annotation in a manifest under validation silences a finding without
hiding it. Every output format lists the waived finding with its reason, none counts it,
and a manifest can never waive the rules that keep pods off the node and delivery inside
its fence (`pod-security`, `privileged`, `delivery-fence`): only the cluster profile can."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.tools import REPO, trainops, write_file

JOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: demo
  namespace: ml-train
  annotations:
    trainops.dev/waive.image-unpinned: "vendor ships :latest only"
    trainops.dev/waive.{unwaivable}: "needs the node"
spec:
  runPolicy: {{cleanPodPolicy: All}}
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: example/trainer:latest
              command: [python, train.py]
              securityContext: {{privileged: true}}
              resources:
                limits: {{memory: 8Gi, cpu: "2"}}
                requests: {{memory: 8Gi, cpu: "2"}}
"""


def _validate(tmp_path: Path, fmt: str, unwaivable: str = "privileged") -> tuple[int, str]:
    job = write_file(tmp_path, "job.yaml", JOB.format(unwaivable=unwaivable))
    result = trainops(tmp_path, "validate", "--manifests", str(job), "--format", fmt)
    assert "Traceback" not in result.stderr
    return result.returncode, result.stdout


def test_json_lists_the_waived_finding_and_refuses_the_security_waiver(tmp_path: Path) -> None:
    code, out = _validate(tmp_path, "json")
    report = json.loads(out)
    by_rule = {f["rule"]: f for f in report["findings"]}
    assert by_rule["image-unpinned"]["waived"] == (
        "trainops.dev/waive.image-unpinned: vendor ships :latest only"
    )
    assert "waived" not in by_rule["privileged"]  # not honoured ...
    assert "cannot be waived by a manifest" in by_rule["waiver-invalid"]["message"]  # ... said
    assert report["summary"]["waived"] == 1
    assert report["summary"]["errors"] == len(report["findings"]) - 1
    assert code == 1


@pytest.mark.parametrize("unwaivable", ["pod-security", "pod-security-baseline", "delivery-fence"])
def test_the_other_security_rules_cannot_be_waived_either(tmp_path: Path, unwaivable: str) -> None:
    report = json.loads(_validate(tmp_path, "json", unwaivable)[1])
    [invalid] = [f for f in report["findings"] if f["rule"] == "waiver-invalid"]
    assert f"`{unwaivable}` cannot be waived" in invalid["message"]


def test_sarif_carries_the_waiver_as_a_suppression(tmp_path: Path) -> None:
    """SARIF 2.1.0 section 3.35: `suppressions[].kind` "inSource" with a justification;
    GitHub code scanning reads a suppressed result as dismissed (docs: SARIF support for
    code scanning, `suppressions`)."""
    log = json.loads(_validate(tmp_path, "sarif")[1])
    [result] = [r for r in log["runs"][0]["results"] if r["ruleId"] == "image-unpinned"]
    assert result["suppressions"] == [
        {
            "kind": "inSource",
            "status": "accepted",
            "justification": "trainops.dev/waive.image-unpinned: vendor ships :latest only",
        }
    ]


def test_junit_shows_the_waived_finding_as_skipped(tmp_path: Path) -> None:
    root = ET.fromstring(_validate(tmp_path, "junit")[1])
    [case] = [c for c in root.iter("testcase") if "[image-unpinned]" in (c.get("name") or "")]
    skipped = case.find("skipped")
    assert skipped is not None and "vendor ships :latest only" in (skipped.get("message") or "")
    assert case.find("failure") is None
    assert root.find("testsuite").get("skipped") == "1"  # type: ignore[union-attr]


def test_github_and_text_name_the_waiver(tmp_path: Path) -> None:
    github = _validate(tmp_path, "github")[1]
    [line] = [x for x in github.splitlines() if "trainops image-unpinned" in x]
    assert line.startswith("::notice ") and "vendor ships :latest only" in line
    assert github.rstrip().endswith("1 waived")
    text = _validate(tmp_path, "text")[1]
    assert "waived  [image-unpinned]" in text and "vendor ships :latest only" in text
    assert text.rstrip().endswith("1 waived")


def test_html_report_lists_the_waived_finding(tmp_path: Path) -> None:
    _, out = _validate(tmp_path, "json")
    found = write_file(tmp_path, "findings.json", out)
    page_path = tmp_path / "r.html"
    result = trainops(REPO, "report", "--findings", str(found), "--out", str(page_path))
    assert result.returncode == 0, result.stderr
    page = page_path.read_text()
    assert '<span class="waived" id="count-waived">1 waived</span>' in page
    assert "vendor ships :latest only" in page
