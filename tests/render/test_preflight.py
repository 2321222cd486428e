"""`trainops preflight`: the nccl-tests MPIJob runs where the job runs, validates clean, and the
result of all_reduce_perf is read in the format nccl-tests prints.

The fixture log follows nccl-tests' output (src/common.cu: the `#` header, one row per size
with out-of-place and in-place `time algbw busbw #wrong`, `# Out of bounds values`, `# Avg bus
bandwidth`); the numbers are ours, shaped like a 4 x 8 H100 run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, add_monitoring, copy_inputs, trainops
from trainops.facts.nccl_tests import parse_all_reduce
from trainops.jobspec.load import load_repository
from trainops.render import objects

LOG = Path(__file__).parent / "fixtures" / "preflight" / "all_reduce_perf-4x8-h100.log"
IMAGE = "registry.example.com/nccl-tests:2.16.2-mpi"


def _worker(obj: dict[str, Any]) -> dict[str, Any]:
    specs = next(v for k, v in obj["spec"].items() if k.endswith("ReplicaSpecs"))
    template: dict[str, Any] = specs["Worker"]["template"]
    return template


@pytest.mark.parametrize("cluster", ["onprem-a100", "cloud-h100"])
def test_preflight_runs_where_the_job_runs_and_validates(tmp_path: Path, cluster: str) -> None:
    result = trainops(REPO, "preflight", "llm-finetune", "--cluster", cluster, "--image", IMAGE)
    assert result.returncode == 0, result.stderr
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert [d["kind"] for d in docs] == ["MPIJob", "NetworkPolicy"]
    path = tmp_path / "preflight.yaml"
    path.write_text(result.stdout)
    checked = trainops(REPO, "validate", "--manifests", str(path), "--cluster", cluster)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    repo = load_repository(REPO)
    job = next(j for j in repo.jobs if j.name == "llm-finetune")
    target = next(t for t in job.targets if t.cluster == cluster)
    training = _worker(objects.training_job(job, repo.clusters[cluster], target))
    mpijob = docs[0]
    pre = _worker(mpijob)
    # Same nodes, GPUs, RDMA devices, network attachments and NCCL settings as the job.
    for key in ("nodeSelector", "tolerations", "schedulerName", "hostNetwork"):
        assert pre["spec"].get(key) == training["spec"].get(key), key
    assert pre["metadata"].get("annotations") == training["metadata"].get("annotations")
    (train_c,) = [c for c in training["spec"]["containers"] if c["name"] == "pytorch"]
    pre_c = pre["spec"]["containers"][0]
    assert pre_c["resources"]["limits"] == train_c["resources"]["limits"]
    nccl = {e["name"]: e.get("value") for e in train_c["env"] if e["name"].startswith("NCCL_")}
    assert nccl and nccl.items() <= {e["name"]: e.get("value") for e in pre_c["env"]}.items()
    # One rank per GPU of the job, all exporting the NCCL settings, running all_reduce_perf.
    launcher = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    argv = launcher["command"] + launcher["args"]
    specs = objects.training_job(job, repo.clusters[cluster], target)["spec"]["pytorchReplicaSpecs"]
    job_gpus = sum(
        spec["replicas"] * int(spec["template"]["spec"]["containers"][0]["resources"]["limits"]
                               .get("nvidia.com/gpu", 0))
        for spec in specs.values()
    )  # fmt: skip
    assert int(argv[argv.index("-np") + 1]) == job_gpus > 0
    assert {argv[i + 1] for i, a in enumerate(argv) if a == "-x"} >= set(nccl)
    assert argv[argv.index("all_reduce_perf") :][:3] == ["all_reduce_perf", "-b", "8"]


def test_all_reduce_perf_output_is_read() -> None:
    result = parse_all_reduce(LOG.read_text())
    assert result is not None
    assert result.avg_bus_bandwidth == 134.124
    assert result.largest_bytes == 8589934592
    assert result.largest_bus_bandwidth == 307.83
    assert result.wrong == 0
    assert parse_all_reduce("# nThread 1 nGpus 1\n# Using devices\n") is None


def _with_minimum(tmp_path: Path, minimum: str) -> Path:
    root = copy_inputs(REPO, tmp_path / "repo")
    profile = root / "clusters" / "onprem-a100.yaml"
    add_monitoring(profile, f"  minBusBandwidthGBps: {minimum}")
    return root


@pytest.mark.parametrize(("minimum", "code"), [("300", 0), ("350", 1)])
def test_result_is_judged_against_the_profile(tmp_path: Path, minimum: str, code: int) -> None:
    root = _with_minimum(tmp_path, minimum)
    result = trainops(
        root, "preflight", "llm-finetune", "--cluster", "onprem-a100", "--result", str(LOG),
        "--format", "json",
    )  # fmt: skip
    assert result.returncode == code, result.stderr
    out = json.loads(result.stdout)
    assert out["largest_bus_bandwidth_gbps"] == 307.83
    assert (out["problem"] is None) == (code == 0)


def test_wrong_results_fail_and_a_log_without_result_is_exit_2(tmp_path: Path) -> None:
    root = _with_minimum(tmp_path, "300")
    corrupt = tmp_path / "corrupt.log"
    corrupt.write_text(LOG.read_text().replace("  307.52      0", "  307.52      3"))
    result = trainops(
        root, "preflight", "llm-finetune", "--cluster", "onprem-a100", "--result", str(corrupt)
    )
    assert result.returncode == 1 and "3 wrong result(s)" in result.stdout
    cut = tmp_path / "cut.log"
    cut.write_text(LOG.read_text().split("  134217728")[0])
    result = trainops(
        root, "preflight", "llm-finetune", "--cluster", "onprem-a100", "--result", str(cut)
    )
    assert result.returncode == 2 and "no all_reduce_perf result" in result.stderr
    assert "Traceback" not in result.stderr


def test_no_image_is_a_clear_error() -> None:
    result = trainops(REPO, "preflight", "llm-finetune", "--cluster", "onprem-a100")
    assert result.returncode == 2
    assert "set `monitoring.ncclTestsImage`" in result.stderr and result.stdout == ""


def test_a_name_whose_preflight_host_names_pass_63_characters_is_refused(tmp_path: Path) -> None:
    """Issue 33 item 3: the preflight MPIJob `<job>-nccl-preflight` gives the MPI Operator v0.8
    worker host names `<job>-nccl-preflight-worker-<n>`, which it refuses past 63 characters
    (validation.go validateMPIJobName): say so instead of printing an MPIJob it drops."""
    root = copy_inputs(REPO, tmp_path / "repo")
    name = "llm-finetune-" + "x" * 28  # 41 characters; 4 pods: `-worker-3` makes 65
    old = root / "jobs" / "llm-finetune.yaml"
    path = root / "jobs" / f"{name}.yaml"
    path.write_text(old.read_text().replace("name: llm-finetune\n", f"name: {name}\n", 1))
    old.unlink()
    result = trainops(root, "preflight", name, "--cluster", "onprem-a100", "--image", IMAGE)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"jobs/{name}.yaml: the preflight MPIJob `{name}-nccl-preflight`" in result.stderr
    assert "longer than 63 characters (65)" in result.stderr
    assert "a name of at most 39 characters" in result.stderr
    assert result.stdout == ""


def test_the_documented_example_is_what_preflight_prints() -> None:
    """docs/examples/: the shipped example, kept equal to the command that makes it."""
    example = REPO / "docs" / "examples" / "preflight-llm-finetune-onprem-a100.yaml"
    result = trainops(
        REPO, "preflight", "llm-finetune", "--cluster", "onprem-a100", "--image", IMAGE
    )
    assert result.returncode == 0, result.stderr
    assert example.read_text() == result.stdout, (
        "regenerate: trainops preflight llm-finetune --cluster onprem-a100 --image"
        f" {IMAGE} > {example.relative_to(REPO)}"
    )
