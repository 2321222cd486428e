"""Issue 29.7, bounded always: what a pull request can put in the repository cannot make
trainops read outside it, hang or exhaust memory; each is refused at the door (file, exit 2,
nothing written, no traceback)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.security.test_attacks import _refused
from trainops import build
from trainops.core import limits
from trainops.validate import kubeconform


def test_a_platform_manifest_symlinked_out_of_the_repository_is_not_read(
    scratch: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """It was read and copied into overlays/<cluster>/platform/, where Argo CD applies it."""
    outside = tmp_path_factory.mktemp("outside") / "queue.yaml"
    source = scratch / "clusters" / "onprem-a100" / "manifests" / "volcano.yaml"
    outside.write_text(source.read_text())
    source.unlink()
    os.symlink(outside, source)
    err = _refused(scratch)
    assert "clusters/onprem-a100/manifests/volcano.yaml" in err
    assert "outside the repository" in err


def test_a_platform_directory_symlinked_out_of_the_repository_is_not_read(
    scratch: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    manifests = scratch / "clusters" / "onprem-a100" / "manifests"
    for path in manifests.iterdir():
        (outside / path.name).write_text(path.read_text())
        path.unlink()
    manifests.rmdir()
    os.symlink(outside, manifests)
    assert "outside the repository" in _refused(scratch)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for a reaper that is not there counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.mark.slow
def test_a_tool_timeout_kills_the_tools_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kustomize runs exec plugins and helm as children; `subprocess.run(timeout=)` killed
    only kustomize itself and left them running (and, holding its output pipes, made run()
    wait for them). The whole process group goes. The tool here is a real shell whose child
    outlives it: what we test is our process handling, not kustomize."""
    pidfile = tmp_path / "child.pid"
    script = f"sleep 120 >/dev/null 2>&1 & echo $! > {pidfile}; wait"
    monkeypatch.setattr(build, "kustomize_command", lambda: ["sh", "-c", script, "kustomize"])
    monkeypatch.setattr(limits, "TOOL_TIMEOUT_SECONDS", 1.0)
    with pytest.raises(build.KustomizeError, match="timed out"):
        build.kustomize(tmp_path)
    child = int(pidfile.read_text())
    for _ in range(50):  # SIGKILL is delivered asynchronously
        if not _alive(child):
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("the tool's child outlived the timeout")


@pytest.mark.slow
def test_kubeconform_runs_through_the_same_bounded_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "child.pid"
    script = f"sleep 120 >/dev/null 2>&1 & echo $! > {pidfile}; wait"
    monkeypatch.setattr(
        kubeconform, "kubeconform_command", lambda *_: ["sh", "-c", script, "kubeconform"]
    )
    monkeypatch.setattr(limits, "TOOL_TIMEOUT_SECONDS", 1.0)
    code, _ = kubeconform.run_kubeconform("", tmp_path, "1.31")
    assert code == 124
    child = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("kubeconform's child outlived the timeout")
