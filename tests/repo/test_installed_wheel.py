"""The wheel works on its own: built, installed into a fresh venv, run outside the source tree.

Everything read at run time (the spec schemas, the strict CRD schemas, the Argo CD Lua health
script) must be package data: a path relative to the checkout works in the checkout and fails
for everyone who `pip install`s trainops (the GitHub workflow and the pre-commit hooks offered
to other repositories do exactly that). The fresh venv installs the wheel's dependencies from
the package index, as a user's would.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.tools import REPO, copy_inputs

# Seconds to minutes: `make test` runs it, `make test-fast` does not.
pytestmark = pytest.mark.slow

USER_FILES = ("jobs", "clusters", "trainops.yaml", "base", "overlays", "gitops")


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bin/ of a fresh venv holding only the wheel built from this checkout and its deps."""
    work = tmp_path_factory.mktemp("wheel")
    build = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "-w", str(work / "dist"), str(REPO)],
        cwd=work,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    wheel = next((work / "dist").glob("trainops-*.whl"))
    venv.create(work / "venv", with_pip=True)
    bin_dir = work / "venv" / "bin"
    install = _run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], cwd=work)
    assert install.returncode == 0, install.stderr
    return bin_dir


@pytest.fixture
def user_repo(tmp_path: Path) -> Path:
    """A copy of the shipped repository's own files, away from the package's source."""
    return copy_inputs(REPO, tmp_path, USER_FILES)


def test_the_installed_package_is_the_wheel_not_the_checkout(
    installed: Path, tmp_path: Path
) -> None:
    where = _run([str(installed / "python"), "-c", "import trainops; print(trainops.__file__)"],
                 cwd=tmp_path)  # fmt: skip
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(installed.parent), where.stdout


def test_render_check_validate_and_rules_run_from_the_wheel(
    installed: Path, user_repo: Path
) -> None:
    trainops = str(installed / "trainops")
    check = _run([trainops, "render", "--check"], cwd=user_repo)
    assert check.returncode == 0, check.stdout + check.stderr
    validate = _run([trainops, "validate", "--format", "json"], cwd=user_repo)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    summary = json.loads(validate.stdout)["summary"]
    assert summary["errors"] == 0 and summary["resources"] > 0, summary
    rules = _run([trainops, "rules"], cwd=user_repo)
    assert rules.returncode == 0 and "gpu-request-limit-mismatch" in rules.stdout, rules.stderr


def test_a_spec_error_is_found_by_the_packaged_schema(installed: Path, user_repo: Path) -> None:
    job = user_repo / "jobs" / "resnet50-ddp.yaml"
    job.write_text(job.read_text().replace("gpusPerReplica: 1", "gpuPerReplica: 1"))
    result = _run([str(installed / "trainops"), "render", "--check"], cwd=user_repo)
    assert result.returncode == 2
    assert "did you mean `gpusPerReplica`?" in result.stderr, result.stderr
