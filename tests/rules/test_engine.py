"""Engine behaviour: waivers, cluster policy overrides, locations, docs and CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from tests.rules.conftest import make_cluster
from tests.rules.helpers import FIXTURES, manifests_from_file, manifests_from_text, run
from tests.tools import REPO, require_upstream
from trainops.cli import main
from trainops.rules import RULES, check
from trainops.rules.docs import as_markdown

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules.md"
UNPINNED = (FIXTURES / "image-unpinned" / "fail.yaml").read_text()


def _with_annotation(key: str, value: str) -> str:
    return UNPINNED.replace(
        "  namespace: ml-train\n",
        f'  namespace: ml-train\n  annotations:\n    {key}: "{value}"\n',
        1,
    )


def test_waiver_with_reason_silences_the_rule() -> None:
    """Silenced, not hidden (issue 29.6): the finding stays, marked with the waiver."""
    text = _with_annotation("trainops.dev/waive.image-unpinned", "vendor ships :latest only")
    findings = run(manifests_from_text(text))
    assert "waiver-invalid" not in {f.rule for f in findings}
    waived = [f for f in findings if f.rule == "image-unpinned"]
    assert waived and all(
        f.waived == "trainops.dev/waive.image-unpinned: vendor ships :latest only" for f in waived
    )


def test_waiver_without_reason_is_a_finding_and_waives_nothing() -> None:
    text = _with_annotation("trainops.dev/waive.image-unpinned", " ")
    rules = {f.rule for f in run(manifests_from_text(text))}
    assert {"image-unpinned", "waiver-invalid"} <= rules


def test_waiver_for_unknown_rule_is_a_finding() -> None:
    text = _with_annotation("trainops.dev/waive.image-unpined", "typo")
    findings = [f for f in run(manifests_from_text(text)) if f.rule == "waiver-invalid"]
    assert findings and "names no rule" in findings[0].message
    assert findings[0].line == 7  # the annotation key's line


def test_cluster_policy_overrides_severity_and_turns_rules_off() -> None:
    manifests = manifests_from_text(UNPINNED)
    warn = make_cluster(policy={"image-unpinned": "warning"})
    assert {f.severity for f in run(manifests, warn) if f.rule == "image-unpinned"} == {"warning"}
    off = make_cluster(policy={"image-unpinned": "off"})
    # A security rule switched off is still listed, waived by the policy (issue 29.7).
    found = [f for f in run(manifests, off) if f.rule == "image-unpinned"]
    assert found and all(f.waived and "policy of cluster" in f.waived for f in found)
    restarts = manifests_from_file(FIXTURES / "restart-policy-unsafe" / "fail.yaml")
    assert [f for f in run(restarts, make_cluster()) if f.rule == "restart-policy-unsafe"]
    quiet = make_cluster(policy={"restart-policy-unsafe": "off"})
    assert not [f for f in run(restarts, quiet) if f.rule == "restart-policy-unsafe"]


def test_findings_carry_object_and_cluster() -> None:
    finding = next(f for f in run(manifests_from_text(UNPINNED, "x.yaml"), make_cluster()))
    assert (finding.file, finding.kind, finding.name, finding.namespace, finding.cluster) == (
        "x.yaml",
        "PyTorchJob",
        "demo",
        "ml-train",
        "gpu-east",
    )


def test_cluster_rules_skip_without_cluster() -> None:
    manifests = manifests_from_file(FIXTURES / "namespace-not-allowed" / "fail.yaml")
    assert "namespace-not-allowed" not in {f.rule for f in run(manifests)}


def test_docs_rules_md_is_current() -> None:
    assert DOCS.read_text(encoding="utf-8") == as_markdown(), (
        "docs/rules.md is stale: run `python -m trainops rules --format markdown > docs/rules.md`"
    )


def test_every_rule_has_complete_metadata() -> None:
    for rule in RULES:
        assert rule.summary and rule.why and rule.fix and rule.example, rule.slug
        assert rule.slug == rule.slug.lower() and " " not in rule.slug


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_cli_lists_every_rule(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--format", fmt]) == 0
    out = capsys.readouterr().out
    for rule in RULES:
        assert rule.slug in out
    if fmt == "json":
        assert [r["rule"] for r in json.loads(out)["rules"]] == [r.slug for r in RULES]


def test_skipping_pods_only_rules_on_objects_without_pods_changes_no_finding() -> None:
    """`pods_only` is a speed-up, never a filter: with every rule run on every object (the
    flag cleared), each fixture, upstream example and shipped rendered file gives the same
    findings, with and without a cluster."""
    files = sorted(FIXTURES.rglob("*.yaml"))
    files += sorted((require_upstream() / "examples").rglob("*.yaml"))
    files += [p for d in ("base", "overlays") for p in sorted((REPO / d).rglob("*.yaml"))]
    unskipped = [dataclasses.replace(rule, pods_only=False) for rule in RULES]
    assert any(rule.pods_only for rule in RULES)
    cluster = make_cluster()
    for path in files:
        manifests = [m for m in manifests_from_file(path) if m.kind != "Kustomization"]
        for profile in (None, cluster):
            assert check(manifests, profile) == check(manifests, profile, unskipped), path
