"""Seed 001's LLM recipe puts HF_HOME under its read-only dataset mount: `cache-on-read-only`
finds it as a job spec, after `trainops import` of the seed's PyTorchJob, and with
`validate --manifests` on the seed itself (on main none of the three said anything, and
run-local mounted the volume writable, so the job even ran there)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.rules.helpers import seed_text, yaml_blocks
from tests.tools import REPO, copy_inputs, trainops

RULE = "cache-on-read-only"


def _findings(root: Path, *args: str) -> list[dict[str, object]]:
    result = trainops(root, "validate", "--format", "json", *args)
    assert result.returncode in (0, 1), result.stderr
    return [f for f in json.loads(result.stdout)["findings"] if f["rule"] == RULE]


def test_a_job_spec_with_hf_home_under_its_dataset_mount(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    spec = root / "jobs" / "llm-finetune.yaml"
    text = spec.read_text(encoding="utf-8")
    spec.write_text(text.replace("HF_HOME: /checkpoints/hf-cache", "HF_HOME: /data/hf-cache"))
    found = _findings(root, "--cluster", "onprem-a100")
    assert found, "HF_HOME under the read-only dataset mount"
    # At the rendered object's env entry (or, where findings are mapped back, the spec's line).
    assert all("llm-finetune" in str(f["file"]) for f in found)
    assert "sets HF_HOME=/data/hf-cache" in str(found[0]["message"])
    assert "volume `dataset` is mounted readOnly" in str(found[0]["message"])


def test_the_seeds_pytorchjob_imported_and_as_manifests(tmp_path: Path) -> None:
    block = next(b for b in yaml_blocks(seed_text("001")) if "kind: PyTorchJob" in b)
    source = tmp_path / "seed.yaml"
    source.write_text(block + "\n")
    root = copy_inputs(REPO, tmp_path / "repo")
    (root / "jobs" / "llm-finetune.yaml").unlink()
    imported = trainops(root, "import", str(source), "--cluster", "onprem-a100")
    assert imported.returncode == 0, imported.stdout + imported.stderr
    found = _findings(root, "--cluster", "onprem-a100")
    assert found and all("llm-finetune" in str(f["file"]) for f in found), found
    assert "HF_HOME=/data/hf-cache" in str(found[0]["message"])

    raw = _findings(root, "--manifests", str(source))
    assert [f["line"] for f in raw] == [
        next(i for i, t in enumerate(block.splitlines(), 1) if "name: HF_HOME" in t)
    ]
    assert "volume `datasets` is mounted readOnly" in str(raw[0]["message"])
