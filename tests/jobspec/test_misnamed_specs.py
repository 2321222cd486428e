"""A spec saved under a name the loader skipped never ran, and nothing said so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tools import trainops


@pytest.mark.parametrize(
    ("rel", "renamed"),
    [
        ("jobs/resnet50-ddp.YAML", "resnet50-ddp.yaml"),
        ("jobs/resnet50-ddp.Yml", "resnet50-ddp.yml"),
        ("clusters/onprem-a100.YAML", "onprem-a100.yaml"),
    ],
)
def test_a_spec_whose_suffix_is_in_capitals_is_an_error_naming_the_rename(
    scratch: Path, rel: str, renamed: str
) -> None:
    """`x.YAML` was skipped: the job (or the cluster and every job on it) left the fleet
    without a word. It is bad input (exit 2) naming the file and the name to give it, said
    once: the file is read, so nothing else (an unknown cluster on every job) follows."""
    original = scratch / rel.split("/", maxsplit=1)[0] / renamed.replace(".yml", ".yaml")
    (scratch / rel).write_text(original.read_text())
    original.unlink()
    result = trainops(scratch, "validate", "-o", "json")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: {rel}: a spec's file name ends `.yaml` or `.yml` in lower case: rename it to"
        f" `{renamed}`"
    ], result.stderr


def test_other_files_beside_the_specs_are_left_alone(scratch: Path) -> None:
    """A model config a job's `model.config` may name (`.json`), notes and editor backups are
    not specs."""
    for name in ("llama.json", "README.md", "resnet50-ddp.yaml~", "resnet50-ddp.yaml.bak"):
        (scratch / "jobs" / name).write_text("{}\n")
    result = trainops(scratch, "validate", "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["findings"] == []
