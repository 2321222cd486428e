"""`trainops build`: real kustomize over the committed overlays, a row per job x cluster."""

from __future__ import annotations

from pathlib import Path

from tests.tools import REPO, require_tool, trainops
from trainops import build


def _needs_kustomize() -> None:
    try:
        build.kustomize_command()
    except build.KustomizeError:
        require_tool("kustomize")


def test_build_summarises_every_placement(tmp_path: Path) -> None:
    _needs_kustomize()
    result = trainops(REPO, "build", "--output", str(tmp_path))
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()[1:] if line.strip()][:-1]
    placements = {(r[0], r[1]): r for r in rows if len(r) > 5}
    jobs = ("llm-finetune", "resnet50-ddp", "tf-distributed", "tensorflow-distributed")
    jobs += ("horovod-training",)
    assert set(placements) == {(c, j) for c in ("cloud-h100", "onprem-a100") for j in jobs}
    # The cloud target overrides replicas to 2 pods x 8 GPUs; on-prem runs 4 x 8 over RDMA.
    assert placements[("cloud-h100", "llm-finetune")][-5:-3] == ["2", "16"]
    assert placements[("onprem-a100", "llm-finetune")][-1] == "rdma"
    assert (tmp_path / "onprem-a100.yaml").read_text().count("kind: PyTorchJob") == 2
    # Every kind gets a row: the TFJob's roles, the MPIJob's Launcher (no GPU) and Workers.
    assert placements[("cloud-h100", "tf-distributed")][3:6] == ["Chief+Worker", "4", "32"]
    assert placements[("onprem-a100", "horovod-training")][3:6] == ["Launcher+Worker", "5", "32"]


def test_build_refuses_stale_output(scratch: Path) -> None:
    assert trainops(scratch, "render").returncode == 0
    (scratch / "jobs" / "resnet50-ddp.yaml").write_text(
        (scratch / "jobs" / "resnet50-ddp.yaml").read_text().replace("replicas: 4", "replicas: 2")
    )
    result = trainops(scratch, "build")
    assert result.returncode == 1
    assert "run `trainops render` first" in result.stderr


def test_unknown_cluster_is_usage_error() -> None:
    result = trainops(REPO, "build", "--cluster", "nope")
    assert result.returncode == 2
    assert "unknown cluster 'nope'" in result.stderr
