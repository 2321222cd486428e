"""The shipped `llm-finetune` job starts and trains: `--model hf-causal-lm` under ZeRO-3.

Issue 17: the job failed at start-up in the image (transformers' DeepSpeed integration asks for
`accelerate`, which nothing installed) and CI never ran that path. Here its rendered container
args and its rendered DeepSpeed config (base/llm-finetune, what the pods get) run one optimizer
step under `torchrun --nproc_per_node=2` on CPU (DeepSpeed's CPU accelerator, gloo), on a tiny
randomly initialised Llama written by the test (no downloads). Only what cannot hold on a CPU
runner is changed, each named below.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from tests.tools import REPO, require_module
from tests.trainer.launch import events, one, run_torchrun

pytestmark = pytest.mark.slow

BASE = REPO / "base" / "llm-finetune"
VOCAB = 128
SEQ_LEN = 32
# A Llama (the shipped job fine-tunes Llama-2-13B) with two layers: seconds per step on CPU.
TINY_LLAMA = {
    "model_type": "llama",
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 2,
    "vocab_size": VOCAB,
    "max_position_embeddings": 64,
}


def rendered_job() -> tuple[list[str], dict[str, Any]]:
    """The trainer args of the rendered PyTorchJob, and its rendered ds_config.json."""
    job = yaml.safe_load((BASE / "pytorchjob.yaml").read_text())
    (container,) = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    assert container["command"] == ["torchrun", "-m", "trainer"]
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    (generator,) = kustomization["configMapGenerator"]
    (literal,) = generator["literals"]
    name, _, text = literal.partition("=")
    assert name == "ds_config.json"
    return list(container["args"]), json.loads(text)


def local_args(args: list[str], tmp_path: Path, ds_config: Path) -> list[str]:
    """The job's args with paths into tmp_path and sizes a CPU runner can take."""
    replace = {
        "--hf-model": str(tmp_path / "model"),
        "--data-path": str(tmp_path / "train"),
        "--checkpoint-dir": str(tmp_path / "ckpt"),
        "--seq-len": str(SEQ_LEN),  # 4096 on the cluster
        "--num-workers": "0",  # loader processes: not what this test is about
    }
    out: list[str] = []
    it = iter(args)
    for arg in it:
        if arg == "--deepspeed-config":
            out += [arg, str(ds_config)]
            next(it)
            continue
        flag, eq, _ = arg.partition("=")
        if flag == "--epochs":
            continue  # one step instead of three passes
        out.append(f"{flag}={replace[flag]}" if eq and flag in replace else arg)
    return [*out, "--steps=1", "--log-interval=1"]


def test_llm_finetune_job_trains_one_step_under_zero3(tmp_path: Path) -> None:
    require_module("deepspeed")
    require_module("transformers")
    require_module("accelerate")  # transformers' HfDeepSpeedConfig (ZeRO-3 init) needs it
    args, ds = rendered_job()
    assert ds["zero_optimization"]["stage"] == 3
    assert {"--engine=deepspeed", "--model=hf-causal-lm", "--data=tokens"} <= set(args)

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(TINY_LLAMA))
    (tmp_path / "train").mkdir()
    dtype = next(a.partition("=")[2] for a in args if a.startswith("--token-dtype="))
    tokens = np.random.default_rng(0).integers(0, VOCAB, size=SEQ_LEN * 64, dtype=dtype)
    tokens.tofile(tmp_path / "train" / "train.bin")
    # Buckets of 5e8 elements are sized for 13B parameters on GPUs; the rest of the shipped
    # config (bf16, bf16 communication, overlap_comm, ...) stays as rendered.
    ds["zero_optimization"]["reduce_bucket_size"] = 10_000
    ds["zero_optimization"]["allgather_bucket_size"] = 10_000
    ds_path = tmp_path / "ds_config.json"
    ds_path.write_text(json.dumps(ds))

    result = run_torchrun(local_args(args, tmp_path, ds_path), timeout=420)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    start = one(result.stdout, "start")
    assert start["world_size"] == 2, start
    (step,) = events(result.stdout, "step")
    assert step["step"] == 1 and np.isfinite(step["loss"]), step
    assert one(result.stdout, "finished")["step"] == 1
    # every rank wrote its ZeRO-3 shard of the (partitioned) model and optimizer
    shards = sorted(p.name for p in (tmp_path / "ckpt" / "step-1" / "deepspeed").iterdir())
    assert sum("optim_states" in name for name in shards) == 2, shards


def write_tiny_model_and_tokens(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(TINY_LLAMA))
    (tmp_path / "train").mkdir()
    dtype = next(a.partition("=")[2] for a in args if a.startswith("--token-dtype="))
    tokens = np.random.default_rng(0).integers(0, VOCAB, size=SEQ_LEN * 64, dtype=dtype)
    tokens.tofile(tmp_path / "train" / "train.bin")


def test_llm_finetune_zero3_cpu_offload_checkpointing_and_export(tmp_path: Path) -> None:
    """Issue 24.1 and 24.2 on the shipped job's shape (ZeRO-3, bf16, its args), with seed 001's
    memory options on: `offload_optimizer: {device: cpu}`, `--gradient-checkpointing`, and the
    final `--export-dir`.

    Before: DeepSpeed 0.19.8 (`deepspeed/runtime/engine.py`, `_configure_optimizer`) raised
    `ZeRORuntimeException: You are using ZeRO-Offload with a client provided optimizer` for the
    trainer's torch AdamW. Now the client optimizer is DeepSpeed's CPU Adam (its C++ op is
    compiled on first use here, DS_BUILD_OPS=0). The export is what transformers'
    `from_pretrained` reads back: the full parameters, gathered from both ranks' ZeRO-3
    partitions, equal to the checkpoint's fp32 master weights in the training dtype (bf16), as
    DeepSpeed's own `zero_to_fp32` reconstructs them.
    """
    require_module("deepspeed")
    transformers = require_module("transformers")
    require_module("accelerate")
    args, ds = rendered_job()
    write_tiny_model_and_tokens(tmp_path, args)
    zero = ds["zero_optimization"]
    assert zero["stage"] == 3 and zero["offload_optimizer"] == {"device": "none"}
    zero["offload_optimizer"] = {"device": "cpu"}  # seed 001's ZeRO-Offload
    zero["reduce_bucket_size"] = 10_000
    zero["allgather_bucket_size"] = 10_000
    ds_path = tmp_path / "ds_config.json"
    ds_path.write_text(json.dumps(ds))
    export = tmp_path / "export"
    run_args = [
        *local_args(args, tmp_path, ds_path),
        "--gradient-checkpointing",
        f"--export-dir={export}",
    ]

    result = run_torchrun(run_args, timeout=900, DS_ACCELERATOR="cpu")
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    assert one(result.stdout, "start")["optimizer"] == "DeepSpeedCPUAdam"
    (step,) = events(result.stdout, "step")
    assert step["step"] == 1 and np.isfinite(step["loss"]), step
    assert one(result.stdout, "exported")["path"] == str(export)
    assert sorted(p.name for p in export.iterdir()) == [
        "config.json",
        "generation_config.json",
        "model.safetensors",
    ]

    loaded = transformers.AutoModelForCausalLM.from_pretrained(str(export))
    assert not loaded.config.use_cache  # saved as trained (gradient checkpointing)
    exported = loaded.state_dict()
    zero_to_fp32 = require_module("deepspeed.utils.zero_to_fp32")
    master = zero_to_fp32.get_fp32_state_dict_from_zero_checkpoint(
        str(tmp_path / "ckpt" / "step-1"), tag="deepspeed"
    )
    master = {k.removeprefix("inner."): v for k, v in master.items()}
    assert set(exported) == set(master)
    for name, tensor in master.items():
        assert exported[name].shape == tensor.shape and tensor.numel() > 0, name
        torch.testing.assert_close(
            exported[name].to(torch.bfloat16), tensor.to(torch.bfloat16), rtol=0, atol=0
        )
