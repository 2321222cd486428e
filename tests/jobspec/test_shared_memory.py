"""`sharedMemory` above the memory limit: /dev/shm is a memory-backed emptyDir, which the
kubelet sizes to the smaller of its sizeLimit and the pod's memory limit (Kubernetes
pkg/volume/emptydir/empty_dir.go, calculateEmptyDirMemorySize), and its pages count against
the limit of the container that writes them: the rank is OOM-killed before /dev/shm fills."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tools import trainops

RESNET = "jobs/resnet50-ddp.yaml"


def _validate(root: Path, shm: str) -> list[dict[str, object]]:
    path = root / RESNET
    text = path.read_text()
    assert "memory: 16Gi\nsharedMemory: 8Gi\n" in text
    path.write_text(text.replace("sharedMemory: 8Gi", f"sharedMemory: {shm}"))
    result = trainops(root, "validate", "--cluster", "cloud-h100", "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    findings: list[dict[str, object]] = json.loads(result.stdout)["findings"]
    return findings


def test_shared_memory_above_the_memory_limit_is_a_warning_at_its_line(scratch: Path) -> None:
    line = next(
        n
        for n, text in enumerate((scratch / RESNET).read_text().splitlines(), 1)
        if text.startswith("sharedMemory:")
    )
    findings = _validate(scratch, "32Gi")
    assert [(f["file"], f["line"], f["severity"]) for f in findings] == [
        (RESNET, line, "warning")
    ], findings
    message = str(findings[0]["message"])
    assert "`sharedMemory: 32Gi` is above the pods' memory limit" in message
    assert "`resources.memory: 16Gi`" in message


def test_shared_memory_within_the_limit_is_quiet(scratch: Path) -> None:
    assert _validate(scratch, "16Gi") == []


def test_the_default_shared_memory_above_a_small_pods_limit_is_quiet(scratch: Path) -> None:
    """The default (16Gi) is capped by the kubelet to the pod's limit: nothing the author
    wrote, and nothing to write instead."""
    path = scratch / RESNET
    text = path.read_text()
    path.write_text(text.replace("memory: 16Gi\nsharedMemory: 8Gi\n", "memory: 4Gi\n"))
    result = trainops(scratch, "validate", "--cluster", "cloud-h100", "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["findings"] == []
