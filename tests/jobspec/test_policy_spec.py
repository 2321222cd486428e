"""A cluster profile's `policy:` block as users write it, as the docs show it.

`policy: {image-unpinned: off}` is what README and docs/rules.md show; YAML 1.1 reads the
unquoted `off` as false. It must turn the rule off, end to end: profile text in, no finding
out. What cannot be meant (`on`, an unknown rule) exits 2 with file:line and what to write.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.rules.helpers import manifests_from_text
from tests.tools import trainops, tree
from trainops.jobspec.load import load_repository
from trainops.rules import check

PROFILE = "clusters/cloud-h100.yaml"
# An unpinned image: `image-unpinned` fires on it unless the cluster turns the rule off.
UNPINNED = """\
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml-vision}
spec:
  containers:
    - name: c
      image: registry.example/train:latest
"""


def _with_policy(root: Path, policy: str) -> Path:
    path = root / PROFILE
    path.write_text(path.read_text() + f"policy:\n{policy}")
    return path


def _rules_fired(root: Path) -> set[str]:
    cluster = load_repository(root).clusters["cloud-h100"]
    # A security rule switched off is listed, waived by the policy (issue 29.7): not counted.
    return {f.rule for f in check(manifests_from_text(UNPINNED), cluster) if f.waived is None}


def test_the_rule_fires_without_a_policy(scratch: Path) -> None:
    assert "image-unpinned" in _rules_fired(scratch)


@pytest.mark.parametrize("written", ["off", "Off", "OFF", "no", "false", '"off"', "'off'"])
def test_off_as_yaml_reads_it_turns_the_rule_off(scratch: Path, written: str) -> None:
    _with_policy(scratch, f"  image-unpinned: {written}\n")
    assert load_repository(scratch).clusters["cloud-h100"].policy == {"image-unpinned": "off"}
    assert "image-unpinned" not in _rules_fired(scratch)


def test_severity_strings_still_apply(scratch: Path) -> None:
    _with_policy(scratch, "  image-unpinned: warning\n")
    cluster = load_repository(scratch).clusters["cloud-h100"]
    findings = check(manifests_from_text(UNPINNED), cluster)
    assert {f.severity.value for f in findings if f.rule == "image-unpinned"} == {"warning"}


def test_validate_honours_off_end_to_end(scratch: Path, tmp_path: Path) -> None:
    """The CLI: `validate --manifests` with the cluster's context, before and after."""
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(UNPINNED)
    args = ("validate", "--manifests", str(manifest), "--cluster", "cloud-h100")
    before = trainops(scratch, *args, "--format", "json")
    assert '"image-unpinned"' in before.stdout, before.stdout + before.stderr
    _with_policy(scratch, "  image-unpinned: off\n")
    after = trainops(scratch, *args, "--format", "json")
    assert after.returncode in {0, 1}, after.stderr
    found = json.loads(after.stdout)["findings"]
    # The rule's finding, waived, beside the notice that the rule is off (tests/security/
    # test_rules_off.py).
    [off] = [f for f in found if f["rule"] == "image-unpinned" and not f.get("switchedOff")]
    assert off["waived"] == "policy of cluster cloud-h100: image-unpinned: off"


def _fails(root: Path) -> str:
    """Render must exit 2 with no traceback and leave the tree as it was."""
    before = tree(root)
    result = trainops(root, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert tree(root) == before
    return result.stderr


@pytest.mark.parametrize("written", ["on", "yes", "true"])
def test_on_says_what_to_write(scratch: Path, written: str) -> None:
    path = _with_policy(scratch, f"  image-unpinned: {written}\n")
    line = len(path.read_text().splitlines())
    err = _fails(scratch)
    assert f"error: {PROFILE}:{line}:3: `policy.image-unpinned` is `{written}`" in err
    assert "write `error` or `warning`" in err
    assert len(err.strip().splitlines()) == 1


def test_unknown_rule_gets_a_did_you_mean(scratch: Path) -> None:
    path = _with_policy(scratch, "  image-unpined: off\n")
    line = len(path.read_text().splitlines())
    err = _fails(scratch)
    assert f"error: {PROFILE}:{line}:3: unknown rule `image-unpined` in `policy`" in err
    assert "did you mean `image-unpinned`?" in err
