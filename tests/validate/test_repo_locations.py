"""Repository mode: every finding names a file of the repository (SARIF and GitHub need one).

The shipped repository validates clean, so the real `kustomize build` output is given an
unknown field in every object (and one object no rendered file defines) before it is checked:
every object then has a finding, and each finding's location must be an existing file
relative to the repository root.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.tools import REPO, require_tool
from trainops import build
from trainops.cli import main
from trainops.jobspec.load import load_repository
from trainops.report import formats as report
from trainops.validate.repo import validate_repository

STRAY = "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: stray}\nbogus: 1\n"


def _with_unknown_field(directory: Path) -> str:
    built = build.kustomize(directory)
    return re.sub(r"(?m)^kind:", "bogus: 1\nkind:", built) + STRAY


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository inputs, rendered (the files findings point at exist)."""
    root = tmp_path_factory.mktemp("repo")
    for name in ("jobs", "clusters"):
        shutil.copytree(REPO / name, root / name)
    shutil.copy(REPO / "trainops.yaml", root / "trainops.yaml")
    assert main(["--root", str(root), "render"]) == 0
    return root


def test_every_finding_names_an_existing_repository_file(rendered: Path) -> None:
    require_tool("kubectl")
    result = validate_repository(rendered, load_repository(rendered), run=_with_unknown_field)
    bogus = [f for f in result.findings if f.message.startswith("bogus: unknown field")]
    # One per built object of every overlay (the stray one included).
    injected = sum(len(re.findall(r"(?m)^bogus: 1$", text)) for text in result.built.values())
    assert len(bogus) == injected > 2
    assert {f.cluster for f in bogus} == {"cloud-h100", "onprem-a100", "onprem-h200"}
    # A Trainer v2 cluster's objects come from the job's Trainer v2 base, not its v1 twins.
    for f in bogus:
        if f.cluster == "onprem-h200" and (f.file or "").startswith("base/"):
            assert "/trainer-v2/" in str(f.file), f
    for finding in result.findings:
        assert finding.file, finding
        assert not Path(finding.file).is_absolute(), finding
        assert (rendered / finding.file).is_file(), finding
    sarif = json.loads(report.to_sarif(result.findings, result.resources))
    for item in sarif["runs"][0]["results"]:
        uri = item["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        assert (rendered / uri).is_file(), uri


def test_generated_configmap_points_at_its_generator(rendered: Path) -> None:
    require_tool("kubectl")
    result = validate_repository(rendered, load_repository(rendered), run=_with_unknown_field)
    generated = [
        f
        for f in result.findings
        if f.kind == "ConfigMap" and (f.name or "").startswith("llm-finetune-deepspeed-")
    ]
    assert {f.cluster for f in generated} == {"cloud-h100", "onprem-a100"}
    kustomization = rendered / "base/llm-finetune/kustomization.yaml"
    line = kustomization.read_text().splitlines().index("  name: llm-finetune-deepspeed") + 1
    spec = (rendered / "jobs/llm-finetune.yaml").read_text().splitlines()
    deepspeed = next(i for i, text in enumerate(spec, 1) if text.startswith("deepspeed:"))
    for finding in generated:
        # Told at the spec key the ConfigMap comes from; found at the generator's entry.
        assert (finding.file, finding.line) == ("jobs/llm-finetune.yaml", deepspeed), finding
        [found] = finding.related
        assert (found.file, found.line) == ("base/llm-finetune/kustomization.yaml", line)


def test_object_from_no_rendered_file_points_at_the_overlay(rendered: Path) -> None:
    require_tool("kubectl")
    result = validate_repository(rendered, load_repository(rendered), run=_with_unknown_field)
    stray = sorted((f.file, f.line) for f in result.findings if f.name == "stray")
    assert stray == [
        ("overlays/cloud-h100/kustomization.yaml", None),
        ("overlays/onprem-a100/kustomization.yaml", None),
        ("overlays/onprem-h200/kustomization.yaml", None),
    ]
