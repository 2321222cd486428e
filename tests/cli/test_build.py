"""`trainops build`: real kustomize over the committed overlays, a row per job x cluster."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.tools import REPO, require_tool, trainops
from trainops import build


def _needs_kustomize() -> None:
    try:
        build.kustomize_command()
    except build.KustomizeError:
        require_tool("kustomize")


def _table(stdout: str) -> list[dict[str, str]]:
    """The printed table as rows by column name (columns start where their header does)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    header = lines[0]
    # Names may hold one space ("GPU PRODUCT"); columns are two or more spaces apart.
    starts = [m.start() for m in re.finditer(r"\S+(?: \S+)*", header)]
    names = [header[a:b].strip().lower() for a, b in zip(starts, [*starts[1:], None], strict=True)]
    return [
        {n: line[a:b].strip() for n, a, b in zip(names, starts, [*starts[1:], None], strict=True)}
        for line in lines[1:-1]
    ]


def test_build_summarises_every_placement(tmp_path: Path) -> None:
    _needs_kustomize()
    result = trainops(REPO, "build", "--output", str(tmp_path))
    assert result.returncode == 0, result.stderr
    placements = {(r["cluster"], r["job"]): r for r in _table(result.stdout)}
    jobs = ("llm-finetune", "resnet50-ddp", "tf-distributed", "tensorflow-distributed")
    jobs += ("horovod-training",)
    wanted = {(c, j) for c in ("cloud-h100", "onprem-a100") for j in jobs}
    assert set(placements) == wanted | {("onprem-h200", "resnet50-ddp")}
    # The cloud target overrides replicas to 2 pods x 8 GPUs; on-prem runs 4 x 8 over RDMA.
    cloud, onprem = (
        placements[("cloud-h100", "llm-finetune")],
        placements[("onprem-a100", "llm-finetune")],
    )
    assert (cloud["pods"], cloud["gpus"]) == ("2", "16")
    assert onprem["nccl"] == "rdma"
    # Pod Security: the TCP cluster's pods meet restricted; the RDMA pods add IPC_LOCK,
    # which no level but privileged admits (docs/security.md).
    assert cloud["pod security"] == "restricted"
    assert onprem["pod security"] == "privileged (adds IPC_LOCK)"
    # The column, the profile and admission agree (issue 38.7): every row's level is one the
    # cluster's namespace label (`podSecurity.level`) admits.
    order = ["privileged", "baseline", "restricted"]
    for (cluster, _), row in placements.items():
        profile = yaml.safe_load((REPO / "clusters" / f"{cluster}.yaml").read_text())
        label = profile.get("podSecurity", {}).get("level", "baseline")
        assert order.index(row["pod security"].split()[0]) >= order.index(label), (cluster, row)
    assert (tmp_path / "onprem-a100.yaml").read_text().count("kind: PyTorchJob") == 2

    # Every kind gets a row: the TFJob's roles, the MPIJob's Launcher (no GPU) and Workers.
    def cells(row: dict[str, str], *names: str) -> list[str]:
        return [row[n] for n in names]

    assert cells(placements[("cloud-h100", "tf-distributed")], "shape", "pods", "gpus") == [
        "Chief+Worker", "4", "32"
    ]  # fmt: skip
    assert cells(placements[("onprem-a100", "horovod-training")], "shape", "pods", "gpus") == [
        "Launcher+Worker", "5", "32"
    ]  # fmt: skip
    # The Trainer v2 cluster: a TrainJob, 4 nodes of 1 GPU, its runtime's selector and NCCL.
    h200 = placements[("onprem-h200", "resnet50-ddp")]
    assert cells(h200, "shape", "pods", "gpus", "gpu product", "scheduler", "nccl") == [
        "TrainJob node", "4", "4", "NVIDIA-H200", "volcano", "rdma"
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
