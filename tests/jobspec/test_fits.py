"""Will it fit? Jobs that state their model are refused at load when the per-GPU estimate
(trainops/facts/memory.py) exceeds a target's GPU, at the job's smallest size, with the change
that makes it fit; exit 2, file:line, nothing written (docs/memory.md)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.tools import line_of, replace_once, trainops, tree
from trainops.jobspec.fits import flag

JOB = "jobs/llm-finetune.yaml"


def _refused(root: Path) -> str:
    before = tree(root)
    result = trainops(root, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert tree(root) == before
    return result.stderr


def test_the_shipped_13b_job_fits_and_a_doubled_micro_batch_does_not(scratch: Path) -> None:
    assert trainops(scratch, "render").returncode == 0
    job = scratch / JOB
    replace_once(job, "microBatchPerGpu: 2", "microBatchPerGpu: 4")
    err = _refused(scratch)
    line = line_of(job, "- cluster: cloud-h100")
    found = re.search(rf"{JOB}:{line}:\d+: does not fit a `h100-80gb` GPU of `cloud-h100` .*", err)
    assert found, err
    message = found.group(0)
    assert "at 16 GPUs, its smallest size" in message  # elastic minReplicas 2 x 8
    assert "`--gradient-checkpointing` in args" in message
    assert "`deepspeed.microBatchPerGpu: 2`" in message
    assert "docs/memory.md" in message


def test_a_smaller_gpu_and_the_elastic_minimum_decide(scratch: Path) -> None:
    job = scratch / JOB
    replace_once(job, "    gpuProduct: a100-80gb", "    gpuProduct: a100-40gb")
    replace_once(job, "  - --precision=bf16", "  - --precision=bf16\n  - --gradient-checkpointing")
    replace_once(job, "  minReplicas: 2", "  minReplicas: 1")
    replace_once(job, "microBatchPerGpu: 2", "microBatchPerGpu: 4")
    err = _refused(scratch)
    # 8 GPUs at the minimum: ZeRO-3's partitions are twice as large as at 16.
    assert "does not fit a `a100-40gb` GPU of `onprem-a100` (40.0 GiB)" in err
    assert "at 8 GPUs, its smallest size" in err
    assert "`elastic.minReplicas: 2` (16 GPUs)" in err
    assert "`deepspeed.microBatchPerGpu: 2`" in err
    assert "cloud-h100" not in err  # its 80 GB hold it


def test_the_model_read_from_a_config_json_in_the_repository(scratch: Path) -> None:
    job = scratch / JOB
    (scratch / "models").mkdir()
    config = {"model_type": "llama", "hidden_size": 5120, "intermediate_size": 13824,
              "num_hidden_layers": 40, "num_attention_heads": 40, "num_key_value_heads": 40,
              "vocab_size": 32000}  # fmt: skip
    (scratch / "models" / "llama-13b.json").write_text(json.dumps(config))
    replace_once(
        job,
        "  parameters: 13015864320\n  hiddenSize: 5120\n  layers: 40\n  vocabSize: 32000\n",
        "  config: models/llama-13b.json\n",
    )
    assert trainops(scratch, "render").returncode == 0
    kustomization = (scratch / "base/llm-finetune/kustomization.yaml").read_text()
    assert '"stage3_prefetch_bucket_size":23592960' in kustomization  # 0.9 x 5120^2
    replace_once(job, "config: models/llama-13b.json", "config: models/missing.json")
    err = _refused(scratch)
    line = line_of(job, "config: models/missing.json")
    assert f"{JOB}:{line}:" in err and "`models/missing.json` is not a file in this" in err


def test_a_ddp_job_too_large_for_its_gpus_is_told_about_zero(scratch: Path) -> None:
    job = scratch / "jobs/resnet50-ddp.yaml"
    replace_once(job, "gpusPerReplica:", "model: {parameters: 7B}\ngpusPerReplica:")
    err = _refused(scratch)
    assert "7.00B parameters, DDP, sgd, bf16" in err  # fp32 weights, gradients, bucket, momentum
    assert "activations not counted" in err
    # 40 GB: only ZeRO-3 partitions enough over 4 GPUs; 80 GB: ZeRO-1 already does.
    assert "a100-40gb" in err and "DeepSpeed ZeRO-3 (`deepspeed: {zeroStage: 3}`)" in err
    assert "DeepSpeed ZeRO-1 (`deepspeed: {zeroStage: 1}`)" in err


def test_a_model_needs_its_size(scratch: Path) -> None:
    job = scratch / "jobs/resnet50-ddp.yaml"
    replace_once(job, "gpusPerReplica:", "model: {hiddenSize: 64}\ngpusPerReplica:")
    assert "`model` needs `parameters` (e.g. 13B) or `config`" in _refused(scratch)


def test_flags_read_as_argparse_reads_them() -> None:
    args = ["--seq-len=128", "--batch-size", "4", "--gradient-checkpointing", "--seq-len", "256"]
    assert flag(args, "--seq-len") == "256"
    assert flag(args, "--batch-size") == "4"
    assert flag(args, "--gradient-checkpointing") == "true"
    assert flag([*args, "--no-gradient-checkpointing"], "--gradient-checkpointing") == "false"
    assert flag(args, "--precision") is None


def test_offloaded_states_must_fit_the_pods_memory(scratch: Path) -> None:
    job = scratch / JOB
    replace_once(job, "offload_optimizer: {device: none}", "offload_optimizer: {device: cpu}")
    assert trainops(scratch, "render").returncode == 0  # 145.5 GiB per pod of its 256 Gi
    replace_once(job, "  memory: 256Gi", "  memory: 64Gi")
    err = _refused(scratch)
    line = line_of(job, "  memory: 64Gi")
    assert err.count("its offloaded ZeRO-3 states") == 1, err  # one mistake, two targets
    assert f"{JOB}:{line}:3: its offloaded ZeRO-3 states need 145.5 GiB of host memory" in err
    assert "per pod at 16 GPUs" in err and "`resources.memory` 64.0 GiB" in err
