"""Issue 35.7: run-local ran a pull request's arbitrary code as the reviewer. A job with a
non-trainer image ran `python -m timeit -s ...` with the reviewer's environment. Now run-local
refuses any program but our trainer unless `--allow-any-program`, says what it will run before
it runs anything, and runs it with a clean environment (trainops/runlocal/program.py)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import processes
from tests.runlocal.conftest import variant_repo
from tests.tools import REPO
from trainops.runlocal.program import runs_trainer

SECRET = "TRAINOPS_TEST_REVIEWER_TOKEN"


OUT = "environ.json"
"""Written by the hostile code into its working directory: the pod's, under --workdir."""


def _hostile(image: str) -> Any:
    """resnet50-ddp running `python -m timeit -s <code>`: the code writes its environment."""
    setup = f"import json, os; open({OUT!r}, 'w').write(json.dumps(dict(os.environ)))"

    def edit(spec: dict[str, Any]) -> None:
        spec["image"] = image
        spec["command"] = ["python", "-m", "timeit", "-n", "1", "-r", "1", "-s", setup, "pass"]
        spec["args"] = []
        spec.pop("dataSync", None)

    return edit


def _run_local(root: Path, workdir: Path, *extra: str) -> Any:
    argv = [sys.executable, "-m", "trainops", "--root", str(root), "run-local", "resnet50-ddp",
            "--cluster", "cloud-h100", "--replicas", "1", "--timeout", "120",
            "--workdir", str(workdir), *extra]  # fmt: skip
    # The venv's torchrun on PATH, as an ML engineer's machine has one.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path, SECRET: "not-a-real-token"}
    return processes.run(argv, timeout=300, text=True, cwd=REPO, env=env)


@pytest.mark.parametrize("image", ["python:3.11", "ghcr.io/example/trainops-trainer:0.1.0"])
def test_a_program_that_is_not_our_trainer_is_refused_before_it_runs(
    tmp_path: Path, image: str
) -> None:
    root = variant_repo(tmp_path / "repo", "resnet50-ddp", _hostile(image))
    result = _run_local(root, tmp_path / "work")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not the trainops trainer" in result.stderr and "-m timeit -n 1" in result.stderr
    assert "--allow-any-program" in result.stderr
    assert not list(tmp_path.glob(f"work/**/{OUT}")), "the program ran"


@pytest.mark.slow
def test_allowed_it_is_announced_and_runs_without_the_reviewers_environment(
    tmp_path: Path,
) -> None:
    root = variant_repo(tmp_path / "repo", "resnet50-ddp", _hostile("python:3.11"))
    result = _run_local(root, tmp_path / "work", "--allow-any-program")
    assert result.returncode == 0, result.stdout + result.stderr
    announced = result.stdout.index("will run `torchrun -m timeit")
    assert announced < result.stdout.index("[master-0]"), result.stdout  # said before it ran
    (out,) = tmp_path.glob(f"work/**/{OUT}")
    seen = json.loads(out.read_text())
    assert SECRET not in seen and "KUBECONFIG" not in seen, sorted(seen)
    assert seen["RANK"] == "0" and seen["PATH"]  # the pod's variables, and a PATH


def test_only_the_trainer_module_counts_as_the_trainer() -> None:
    ours = "ghcr.io/example/trainops-trainer:0.1.0"
    assert runs_trainer(ours, ["python", "-m", "trainer", "--epochs=1"])
    assert runs_trainer(ours, ["torchrun", "--nnodes", "2", "--standalone", "-m", "trainer"])
    assert runs_trainer(ours, ["/usr/bin/python3", "-m", "trainer"])
    assert not runs_trainer(ours, ["python", "-m", "timeit", "-s", "import os"])
    assert not runs_trainer(ours, ["python", "-c", "import trainer"])
    assert not runs_trainer(ours, ["torchrun", "--no-python", "-m", "trainer"])
    assert not runs_trainer(ours, ["torchrun", "train.py"])
    assert not runs_trainer(ours, ["sh", "-c", "python -m trainer"])
    assert not runs_trainer("python:3.11", ["python", "-m", "trainer"])
