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
    assert set(placements) == {
        ("cloud-h100", "llm-finetune"),
        ("cloud-h100", "resnet50-ddp"),
        ("onprem-a100", "llm-finetune"),
        ("onprem-a100", "resnet50-ddp"),
        ("onprem-h200", "resnet50-ddp"),
    }
    # The cloud target overrides replicas to 2 pods x 8 GPUs; on-prem runs 4 x 8 over RDMA.
    assert placements[("cloud-h100", "llm-finetune")][-5:-3] == ["2", "16"]
    assert placements[("onprem-a100", "llm-finetune")][-1] == "rdma"
    assert (tmp_path / "onprem-a100.yaml").read_text().count("kind: PyTorchJob") == 2
    # The Trainer v2 cluster: a TrainJob, 4 nodes of 1 GPU, its runtime's selector and NCCL.
    assert placements[("onprem-h200", "resnet50-ddp")][3:] == [
        "TrainJob", "node", "4", "4", "NVIDIA-H200", "volcano", "rdma"
    ]  # fmt: skip
    assert (tmp_path / "onprem-h200.yaml").read_text().count("kind: TrainJob") == 1


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
