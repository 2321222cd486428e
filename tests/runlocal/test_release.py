"""Item 4 of the run-local issue: the image the jobs name is the image the workflow builds.

One version, `trainops.__version__`: pyproject reads it, the shipped jobs pin
`trainops-trainer:<it>`, and the image workflow tags the build with it (read by the same
shell step that runs in GitHub Actions, run here for real).
"""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, require_tool
from trainops import __version__
from trainops.runlocal.adapt import TRAINER_IMAGE, image_reference

WORKFLOW = REPO / ".github" / "workflows" / "ci.yml"
JOBS = sorted((REPO / "jobs").glob("*.yaml"))


def image_steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = yaml.safe_load(WORKFLOW.read_text())["jobs"]["image"]["steps"]
    return steps


def test_pyproject_takes_its_version_from_the_package() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert "version" not in project["project"]
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "trainops.__version__"}


@pytest.mark.parametrize("path", JOBS, ids=[p.stem for p in JOBS])
def test_shipped_jobs_pin_the_trainer_at_the_release_version(path: Path) -> None:
    """A shipped job that runs our trainer runs our image at this release, an MPIJob its `mpi`
    variant (`<version>-mpi`: the user, sshd and Open MPI the MPI Operator needs, built by the
    workflow's second build step); the seeds' TensorFlow examples run their own programs in
    their own images."""
    spec = yaml.safe_load(path.read_text())
    repository, tag = image_reference(spec["image"])
    ours = repository.rsplit("/", 1)[-1] == TRAINER_IMAGE
    assert ours == (spec["command"][1:] == ["-m", "trainer"]), path.name
    if ours:
        wanted = f"{__version__}-mpi" if spec["framework"] == "mpi" else __version__
        assert tag == wanted, f"{path.name} pins {spec['image']}; release {wanted}"


def test_workflow_version_step_prints_the_package_version(tmp_path: Path) -> None:
    bash = require_tool("bash")
    step = next(s for s in image_steps() if s.get("id") == "version")
    out = tmp_path / "github_output"
    subprocess.run(
        [bash, "-e", "-c", step["run"]],
        cwd=REPO,
        env={**os.environ, "GITHUB_OUTPUT": str(out)},
        check=True,
    )
    assert out.read_text() == f"version={__version__}\n"


def test_workflow_tags_the_image_with_the_version_once() -> None:
    meta = next(s for s in image_steps() if s.get("id") == "meta")
    tags = meta["with"]["tags"].splitlines()
    assert "type=sha,format=long" in tags
    version_tag = next(t for t in tags if t.startswith("type=raw"))
    assert "value=${{ steps.version.outputs.version }}" in version_tag
    # Never re-pushed once published: a version tag is as immutable as the sha tag.
    assert "enable=${{ steps.published.outputs.exists == 'false' }}" in version_tag
    build = next(s for s in image_steps() if "build-push-action" in s.get("uses", ""))
    assert build["with"]["tags"] == "${{ steps.meta.outputs.tags }}"
    assert build["with"]["target"] == "trainer"


def test_workflow_builds_the_mpi_variant_with_the_same_tags_suffixed() -> None:
    """The MPIJob example pins `trainops-trainer:<version>-mpi`: the workflow builds the
    Dockerfile's `mpi` target under the same tags as the trainer, each with `-mpi`
    (docker/metadata-action's `flavor: suffix`)."""
    steps = image_steps()
    meta = next(s for s in steps if s.get("id") == "meta")
    mpi_meta = next(s for s in steps if s.get("id") == "meta-mpi")
    assert mpi_meta["with"]["tags"] == meta["with"]["tags"]
    assert mpi_meta["with"]["images"] == meta["with"]["images"]
    assert mpi_meta["with"]["flavor"] == "suffix=-mpi"
    builds = [s for s in steps if "build-push-action" in s.get("uses", "")]
    (mpi,) = [b for b in builds if b["with"].get("target") == "mpi"]
    assert mpi["with"]["tags"] == "${{ steps.meta-mpi.outputs.tags }}"
    assert mpi["with"]["file"] == "trainer/Dockerfile"
    assert "FROM runtime AS mpi" in (REPO / "trainer" / "Dockerfile").read_text()
