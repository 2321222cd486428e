"""Bad specs: exit 2, `file:line:column: message` with what to do, nothing written, no traceback."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.tools import line_of, replace_once, trainops, tree


def _fails(root: Path) -> str:
    trainops(root, "render")
    before = tree(root)
    result = trainops(root, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert tree(root) == before, "a failed render must not touch the previous output"
    return result.stderr


def test_unknown_key_names_file_line_column_and_suggests(scratch: Path) -> None:
    trainops(scratch, "render")
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(job, "gpusPerReplica: 1", "gpusPerReplica: 1\ngpuPerReplica: 2")
    err = _fails(scratch)
    line = line_of(job, "gpuPerReplica: 2")
    assert f"jobs/resnet50-ddp.yaml:{line}:1: unknown key `gpuPerReplica`" in err
    assert "did you mean `gpusPerReplica`?" in err


def test_nested_unknown_key_is_positioned_on_the_key(scratch: Path) -> None:
    cluster = scratch / "clusters" / "onprem-a100.yaml"
    replace_once(cluster, "    hca: mlx5", "    hca: mlx5\n    gidIdx: 3")
    err = _fails(scratch)
    line = line_of(cluster, "gidIdx")
    assert f"clusters/onprem-a100.yaml:{line}:5: unknown key `gidIdx` in `network.rdma`" in err
    assert "did you mean `gidIndex`?" in err


def test_wrong_type_and_enum(scratch: Path) -> None:
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(job, "replicas: 4", "replicas: four")
    replace_once(job, "cleanPodPolicy: All", "cleanPodPolicy: Always")
    err = _fails(scratch)
    assert re.search(r"resnet50-ddp.yaml:\d+:\d+: `replicas` must be of type integer", err)
    assert '`runPolicy.cleanPodPolicy` must be one of "All", "Running", "None"' in err


def test_every_problem_in_every_file_is_reported_at_once(scratch: Path) -> None:
    replace_once(scratch / "jobs" / "resnet50-ddp.yaml", "replicas: 4", "replicas: 0")
    replace_once(scratch / "jobs" / "llm-finetune.yaml", "framework: pytorch", "framework: jax")
    err = _fails(scratch)
    assert "resnet50-ddp.yaml" in err and "llm-finetune.yaml" in err


def test_unknown_cluster_with_suggestion(scratch: Path) -> None:
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(job, "  - cluster: cloud-h100", "  - cluster: cloud-h10")
    err = _fails(scratch)
    line = line_of(job, "cluster: cloud-h10")
    assert f"resnet50-ddp.yaml:{line}:" in err
    assert "unknown cluster `cloud-h10`; did you mean `cloud-h100`?" in err


def test_elastic_bounds(scratch: Path) -> None:
    job = scratch / "jobs" / "llm-finetune.yaml"
    replace_once(job, "replicas: 4", "replicas: 9")
    err = _fails(scratch)
    assert "`replicas` must be within elastic [2, 8]" in err


def test_launcher_in_command_is_rejected(scratch: Path) -> None:
    """The seed-001 mistake: torchrun flags in the spec would pin --nnodes."""
    job = scratch / "jobs" / "llm-finetune.yaml"
    replace_once(
        job, "command: [python, -m, trainer]", "command: [torchrun, --nnodes=4, -m, trainer]"
    )
    err = _fails(scratch)
    assert "`command` is the training program, not its launcher" in err


def test_elastic_deepspeed_config_pinning_all_three_batch_sizes(scratch: Path) -> None:
    """Seed 001 pins train_batch_size 64 = 2 x 8 x 4: invalid at every other world size."""
    job = scratch / "jobs" / "llm-finetune.yaml"
    replace_once(job, "  microBatchPerGpu: 2\n  gradientAccumulation: 8\n", "")
    replace_once(
        job,
        "    communication_data_type: bf16",
        "    communication_data_type: bf16\n    train_batch_size: 64\n"
        "    train_micro_batch_size_per_gpu: 2\n    gradient_accumulation_steps: 8",
    )
    err = _fails(scratch)
    line = line_of(job, "train_batch_size: 64")
    assert f"llm-finetune.yaml:{line}:5: DeepSpeed config invalid on `onprem-a100`" in err
    assert "at world size 16 DeepSpeed asserts train_batch_size (64)" in err
    assert "must not pin train_batch_size" in err


def test_namespace_gpu_product_and_host_network_checked_against_cluster(scratch: Path) -> None:
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(job, "namespace: ml-vision", "namespace: default")
    replace_once(job, "gpuProduct: a100-40gb", "gpuProduct: v100")
    replace_once(job, "metricsPort: 9090", "metricsPort: 9090\nhostNetwork: true")
    err = _fails(scratch)
    assert "namespace `default` is not allowed on cluster `onprem-a100`" in err
    assert "`gpuProduct: v100` names no GPU product of cluster `onprem-a100`" in err
    assert "(has: a100-80gb (nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB), a100-40gb" in err
    # One mistake told once: the hostNetwork refusal of each cluster merged into one error.
    assert "cluster `onprem-a100` does not allow hostNetwork (the same on `cloud-h100`" in err


def test_name_must_match_file(scratch: Path) -> None:
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(job, "name: resnet50-ddp", "name: resnet")
    assert "`name` must equal the file name `resnet50-ddp`" in _fails(scratch)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: a\nname: b\n", "duplicate key 'name' (first at line 1)"),
        ("a:\n\tb: 1\n", "tabs"),
        ("- just\n- a list\n", "expected a mapping"),
        ("a: [unclosed\n", "invalid YAML"),
        ("---\na: 1\n---\nb: 2\n", "expected exactly one YAML document, found 2: one spec per"),
    ],
)
def test_unreadable_yaml(scratch: Path, text: str, message: str) -> None:
    (scratch / "jobs" / "broken.yaml").write_text(text)
    err = _fails(scratch)
    assert "jobs/broken.yaml" in err
    assert message in err


def test_binary_file(scratch: Path) -> None:
    (scratch / "clusters" / "blob.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe")
    err = _fails(scratch)
    assert "clusters/blob.yaml" in err
    assert "binary" in err


def test_replicas_beyond_int32_are_rejected_at_the_door(scratch: Path) -> None:
    """The operator's replica fields are int32: a bigger number must not render (kustomize
    writes it back as `1e+20`); the schema stops at 150,000, what a cluster holds."""
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(job, "replicas: 4", "replicas: 99999999999999999999")
    err = _fails(scratch)
    assert re.search(r"resnet50-ddp.yaml:\d+:\d+: `replicas` must satisfy maximum 150000", err)


@pytest.mark.parametrize("command", ["render", "validate", "build"])
def test_a_directory_without_jobs_or_clusters_is_not_a_repository(
    tmp_path: Path, command: str
) -> None:
    """A hook or CI step run from the wrong directory must not pass on zero objects."""
    result = trainops(tmp_path, command)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "not a trainops repository" in result.stderr and "--root" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_unwritable_output_path_is_a_usage_error(scratch: Path) -> None:
    trainops(scratch, "render")
    blocker = scratch / "a-file"
    blocker.write_text("")
    result = trainops(scratch, "build", "--output", str(blocker / "out"))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"error: {blocker / 'out'}" in result.stderr and "Traceback" not in result.stderr


def test_a_typo_is_one_error_not_a_second_missing_key_error(scratch: Path) -> None:
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(job, "gpusPerReplica: 1", "gpuPerReplica: 1")
    err = _fails(scratch)
    assert "did you mean `gpusPerReplica`?" in err
    assert "required" not in err
    replace_once(job, "gpuPerReplica: 1", "")
    err = _fails(scratch)
    assert re.search(r"resnet50-ddp.yaml:\d+:1: missing required key `gpusPerReplica`", err)


def test_an_invalid_cluster_profile_is_not_also_called_unknown(scratch: Path) -> None:
    replace_once(scratch / "clusters" / "onprem-a100.yaml", "    hca: mlx5", "    hca: 5")
    err = _fails(scratch)
    assert "clusters/onprem-a100.yaml" in err
    assert "unknown cluster" not in err


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "  precision: bf16\n",
            "  precision: fp16\n",
            "`--precision=bf16` contradicts the DeepSpeed precision (fp16)",
        ),
        (
            "  zeroStage: 3\n",
            "  zeroStage: 2\n",
            "config `zero_optimization.stage` (3) contradicts `zeroStage` (2)",
        ),
        (
            "    communication_data_type: bf16",
            "    communication_data_type: bf16\n    fp16: {enabled: true}",
            "`precision: bf16` contradicts the config, which enables fp16",
        ),
        (
            "    communication_data_type: bf16",
            "    communication_data_type: bf16\n"
            "    fp16: {enabled: true}\n    bf16: {enabled: true}",
            "config enables both bf16 and fp16",
        ),
    ],
    ids=["flag-vs-precision", "stage", "precision-vs-config", "both"],
)
def test_deepspeed_settings_that_the_trainer_or_deepspeed_would_refuse(
    scratch: Path, old: str, new: str, expected: str
) -> None:
    """Each renders a job that fails at start-up on the cluster: caught at the door instead."""
    job = scratch / "jobs" / "llm-finetune.yaml"
    replace_once(job, old, new)
    if "stage" in expected:
        replace_once(job, "      offload_optimizer", "      stage: 3\n      offload_optimizer")
    err = _fails(scratch)
    assert re.search(r"jobs/llm-finetune.yaml:\d+:\d+: " + re.escape(expected), err), err


def test_single_node_claim_on_a_multi_pod_job(scratch: Path) -> None:
    """Caught at the door, on the line the user wrote (not later on a generated file)."""
    job = scratch / "jobs" / "llm-finetune.yaml"
    replace_once(
        job,
        "  checkpoints:\n    mountPath: /checkpoints\n    claimName: nfsordma-checkpoints",
        "  checkpoints:\n    mountPath: /checkpoints\n    size: 1Ti\n    accessMode: ReadWriteOnce",
    )
    err = _fails(scratch)
    line = line_of(job, "accessMode: ReadWriteOnce")
    assert f"llm-finetune.yaml:{line}:5: `ReadWriteOnce` mounts on one node" in err
    assert "up to 8 pods" in err


def test_framework_blocks_and_their_settings(scratch: Path) -> None:
    """A framework's block on another framework's job, an Evaluator count TensorFlow refuses,
    v2beta1-only MPI settings on a v1 MPIJob, an mpirun option fused with its value."""
    resnet = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(resnet, "gpusPerReplica: 1", "gpusPerReplica: 1\nmpi: {implementation: OpenMPI}")
    tf = scratch / "jobs" / "tf-distributed.yaml"
    replace_once(tf, "  chief: true", "  chief: true\n  evaluator: {replicas: 2}")
    horovod = scratch / "jobs" / "horovod-training.yaml"
    replace_once(horovod, "  implementation: OpenMPI", "  apiVersion: kubeflow.org/v1")
    replace_once(horovod, "[-bind-to, none, -map-by, slot]", '["-bind-to none", -map-by, slot]')
    err = _fails(scratch)
    line = line_of(resnet, "mpi: {")
    assert f"resnet50-ddp.yaml:{line}:1: `mpi` needs `framework: mpi`" in err
    assert "TensorFlow runs one Evaluator, got `replicas: 2`" in err
    assert "`mpi.sshAuthMountPath` needs `apiVersion: kubeflow.org/v2beta1`" in err
    line = line_of(horovod, "-bind-to none")
    assert re.search(rf"horovod-training.yaml:{line}:\d+: `-bind-to none` is an option", err)
    assert "write them as two items, `-bind-to` and `none`" in err


def test_mpi_against_the_cluster(scratch: Path) -> None:
    """A Launcher asking more GPUs than a node has; a v1 MPIJob on a Kueue cluster."""
    horovod = scratch / "jobs" / "horovod-training.yaml"
    replace_once(horovod, '    resources: {cpu: "2", memory: 4Gi}', "    gpus: 16")
    replace_once(horovod, "  implementation: OpenMPI", "  apiVersion: kubeflow.org/v1")
    replace_once(horovod, "  sshAuthMountPath: /home/mpiuser/.ssh\n", "")
    err = _fails(scratch)
    line = line_of(horovod, "gpus: 16")
    assert f"horovod-training.yaml:{line}:5: 16 GPUs per pod, more than a node holds:" in err
    assert "`h100-80gb` on `cloud-h100` has 8" in err
    assert "Kueue has no integration for `kubeflow.org/v1` MPIJob" in err
    assert "serves `mpijobs.kubeflow.org` as `kubeflow.org/v2beta1`" in err
