"""Every rule has a manifest that trips it and one that does not, found by naming convention:
`fixtures/<slug>/pass*.yaml` and `fixtures/<slug>/fail*.yaml` (Polaris' success/failure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rules.helpers import FIXTURES, manifests_from_file, run
from trainops.core.findings import Severity
from trainops.jobspec.model import ClusterProfile
from trainops.rules import RULES, RULES_BY_SLUG

# Fail fixtures that trip a rule's milder variant, and the severities their findings have;
# the findings of every other fail fixture have the rule's default severity.
MILDER: dict[str, set[Severity]] = {
    "kueue-api-version/fail-deprecated-v1beta1.yaml": {Severity.WARNING},
    "rdma-incomplete/fail-ib-default.yaml": {Severity.WARNING},
    "rdma-incomplete/fail-ipc-lock-uneven.yaml": {Severity.WARNING},
    "resources-unbounded/fail-besteffort-launcher.yaml": {Severity.WARNING},
    "trainjob-foreign-fields/fail-suspend.yaml": {Severity.WARNING},
}


def _cases(prefix: str) -> list[Path]:
    return sorted(FIXTURES.glob(f"*/{prefix}*.yaml"))


def test_every_rule_has_a_pass_and_a_fail_fixture() -> None:
    missing = [
        f"{rule.slug}/{kind}*.yaml"
        for rule in RULES
        for kind in ("pass", "fail")
        if not list((FIXTURES / rule.slug).glob(f"{kind}*.yaml"))
    ]
    assert not missing, f"rules without fixtures: {missing}"


def test_every_fixture_directory_names_a_rule() -> None:
    strays = [d.name for d in FIXTURES.iterdir() if d.is_dir() and d.name not in RULES_BY_SLUG]
    assert not strays


@pytest.mark.parametrize("path", _cases("fail"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_fail_fixture_trips_its_rule(path: Path, cluster: ClusterProfile) -> None:
    slug = path.parent.name
    findings = [f for f in run(manifests_from_file(path), cluster) if f.rule == slug]
    assert findings, f"{path} should trip {slug}"
    for finding in findings:
        assert finding.file == str(path)
        assert finding.line is not None and finding.line > 0
    expected = MILDER.get(f"{slug}/{path.name}", {RULES_BY_SLUG[slug].severity})
    assert {f.severity for f in findings} == expected, [f.message for f in findings]


@pytest.mark.parametrize("path", _cases("pass"), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pass_fixture_does_not_trip_its_rule(path: Path, cluster: ClusterProfile) -> None:
    slug = path.parent.name
    findings = [f for f in run(manifests_from_file(path), cluster) if f.rule == slug]
    assert not findings, [f.message for f in findings]


def test_pass_fixtures_are_clean_of_errors(cluster: ClusterProfile) -> None:
    """The pass fixtures double as examples of good manifests: no rule errors on them."""
    errors = [
        (str(path), f.rule, f.message)
        for path in _cases("pass")
        for f in run(manifests_from_file(path), cluster)
        if f.severity == "error" and f.rule != "waiver-invalid" and f.waived is None
    ]
    assert not errors
