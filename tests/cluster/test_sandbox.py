"""`trainops sandbox`: the cluster-facing commands without a cluster (issue 34, item 6).

The sandbox is started as a user starts it (`python -m trainops sandbox`, a process of its
own serving the emulator on loopback), and `status`, `explain` and `live-diff` run against
the kubeconfig it writes, unchanged. No Kubernetes runs: see trainops/cluster/emulator.py.
The process is stopped (SIGTERM, as Ctrl-C's sibling) before the test ends.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.tools import REPO, copy_inputs, require_kustomize, trainops


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[tuple[Path, Path, str]]:
    """(repository, kubeconfig, what the sandbox printed), the sandbox serving."""
    require_kustomize()
    root = copy_inputs(REPO, tmp_path / "repo")
    config = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainops", "--root", str(root), "sandbox",
         "--cluster", "cloud-h100", "--kubeconfig", str(config), "--for-seconds", "300"],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        said = []
        deadline = time.monotonic() + 120
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            said.append(line)
            if not line or "serving until Ctrl-C" in line:
                break
        assert "serving until Ctrl-C" in said[-1], "".join(said)
        yield root, config, "".join(said)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_the_printed_commands_run_against_the_sandbox(sandbox: tuple[Path, Path, str]) -> None:
    root, config, said = sandbox
    assert yaml.safe_load(config.read_text())["current-context"] == "trainops-sandbox"
    assert f"trainops --root {root} status --cluster cloud-h100 --kubeconfig {config}" in said

    status = trainops(root, "status", "--cluster", "cloud-h100", "--kubeconfig", str(config),
                      "-o", "json")  # fmt: skip
    assert status.returncode == 0, status.stderr
    jobs = {j["name"]: j for j in json.loads(status.stdout)["jobs"]}
    assert jobs["llm-finetune"]["phase"] == "Running" and jobs["llm-finetune"]["restarts"] == 5
    assert jobs["llm-finetune"]["queue"] == "kueue: Admitted"
    assert jobs["resnet50-ddp"]["git"] == "missing"
    assert jobs["tf-distributed"]["git"] == "differs"
    assert jobs["old-experiment"]["git"] == "not in Git"

    explain = trainops(root, "explain", "llm-finetune", "--cluster", "cloud-h100",
                       "--kubeconfig", str(config))  # fmt: skip
    assert explain.returncode == 1, explain.stderr  # a problem found
    assert explain.stdout.startswith("CrashLoopBackOff: container pytorch of pod")
    assert "FileNotFoundError" in explain.stdout

    diff = trainops(root, "live-diff", "--cluster", "cloud-h100", "--kubeconfig", str(config))
    assert diff.returncode == 1, diff.stderr
    assert "PyTorchJob ml-vision/resnet50-ddp (not on the cluster)" in diff.stdout
    assert "+            image: ghcr.io/example/trainops-trainer:0.1.0" in diff.stdout


def test_without_the_extra_it_says_what_to_install(tmp_path: Path) -> None:
    """The `sandbox` extra (kmock) is optional: without it, one line saying so, exit 2."""
    code = (
        "import sys; sys.modules['kmock'] = None\n"
        "from trainops.cli import main\n"
        f"sys.exit(main(['--root', {str(REPO)!r}, 'sandbox', '--cluster', 'cloud-h100']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert result.returncode == 2, result.stderr
    assert "pip install 'trainops[sandbox]'" in result.stderr
    assert "Traceback" not in result.stderr
