"""The GPU section of `bench.trainer`: each case ours and its ceiling side by side in one run.

"Ours" is the trainer exactly as a job runs it (`torchrun -m trainer`, DataLoader workers, the
input path, log lines, sync points); its step time is the mean over each log window (the loop
reads the clock only at its sync points), after the first `WARMUP_STEPS`. The ceiling is
`bench.bare` (same model class, optimizer, batch and precision, the batch already on the GPU),
or for the ZeRO-3 case our DDP engine on the same model. The ratio is ceiling step / our step:
the share of the ceiling's throughput we reach (1.0 = nothing lost).

Cases (issue 36): ResNet-50 on synthetic images and on a folder of 224 px JPEGs the benchmark
writes, GPT-medium, and a ~0.94B Llama under ZeRO-3 (the config trainops renders for it, and the
one the shipped llm-finetune job had before issue 36) against DDP. Results go to `out` as each
case finishes; `markdown_table` renders them for docs/trainer.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from bench.loader import make_jpegs
from trainer import data, images
from trainer.models.gpt import GPT
from trainer.prefetch import DevicePrefetcher
from trainops.facts import deepspeed as ds_facts
from trainops.facts import zero_tuning
from trainops.facts.hf_config import llama_sizes

REPO = Path(__file__).resolve().parent.parent
WARMUP_STEPS = 20
LOG_INTERVAL = 10
# The ~0.94B Llama of the table (hidden 2048, 16 layers, MLP 5632, vocabulary 32000).
LLAMA_094B = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632,
              "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 16,
              "vocab_size": 32000, "max_position_embeddings": 2048}  # fmt: skip
LLAMA_HIDDEN = 2048
# PaLM's appendix B: 6 N + 12 L d T per token (N parameters, L layers, d width, T tokens).
LLAMA_FLOPS_PER_TOKEN = 6 * llama_sizes(LLAMA_094B)["parameters"] + 12 * 16 * 2048 * 2048
# The shipped llm-finetune job's ZeRO settings before issue 36 (bucket sizes by hand).
ZERO3_BEFORE = {"overlap_comm": True, "contiguous_gradients": True, "reduce_scatter": True,
                "reduce_bucket_size": 500000000, "allgather_bucket_size": 500000000}  # fmt: skip
RESNET = ["--model", "resnet50", "--batch-size", "256", "--image-size", "224",
          "--num-classes", "1000", "--precision", "bf16", "--channels-last", "--compile",
          "--optimizer", "sgd", "--lr", "0.01", "--steps", "120"]  # fmt: skip
GPT_MEDIUM = ["--model", "gpt-medium", "--data", "synthetic-tokens", "--batch-size", "32",
              "--seq-len", "1024", "--vocab-size", "50304", "--precision", "bf16", "--compile",
              "--dataset-size", "3840", "--steps", "100"]  # fmt: skip
LLAMA_ARGS = ["--model", "hf-causal-lm", "--data", "synthetic-tokens", "--seq-len", "2048",
              "--vocab-size", "32000", "--dataset-size", "480", "--steps", "60"]  # fmt: skip
# Dense bf16 peak FLOP/s by the full name torch.cuda.get_device_name() reports (NVIDIA data
# sheets, dense = half the "with sparsity" figure): the H100 variants differ (SXM 989, NVL 835,
# PCIe 756 TFLOPS), so a substring such as "H100" would overstate the PCIe card's MFU by 30 %.
# A name not listed gets no MFU (null) rather than a guess; add it here.
PEAK_BF16 = {
    "NVIDIA H100 80GB HBM3": 989e12,  # H100 SXM5
    "NVIDIA H100 NVL": 835e12,
    "NVIDIA H100 PCIe": 756e12,
    "NVIDIA H200": 989e12,  # H200 SXM: the H100 SXM tensor cores
    "NVIDIA A100-SXM4-40GB": 312e12,
    "NVIDIA A100-SXM4-80GB": 312e12,
    "NVIDIA A100-PCIE-40GB": 312e12,
    "NVIDIA A100 80GB PCIe": 312e12,
}
# ResNet-50 at 256 x 224 px: enough JPEGs for two epochs of the 120 steps without a repeat.
JPEG_COUNT = 256 * 64


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", TRAINOPS_METRICS_PORT="0")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run(cmd: list[str], timeout: float) -> str:
    result = subprocess.run(cmd, cwd=REPO, env=_env(), capture_output=True, text=True,
                            timeout=timeout, check=False)  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}:\n{result.stdout[-1500:]}{result.stderr[-2500:]}")
    return result.stdout


def ours(args: list[str], timeout: float = 540) -> dict[str, float]:
    """The trainer under torchrun on one GPU: median and mean step over the log windows."""
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=1",
           "-m", "trainer", "--log-interval", str(LOG_INTERVAL), *args]  # fmt: skip
    windows = []
    for line in _run(cmd, timeout).splitlines():
        if line.startswith("{") and '"event": "step"' in line:
            event = json.loads(line)
            if event["step"] > WARMUP_STEPS and event["step"] % LOG_INTERVAL == 0:
                windows.append(float(event["step_seconds"]))
    if not windows:
        raise RuntimeError("no step windows after the warm-up")
    return {"median_step_seconds": statistics.median(windows),
            "mean_step_seconds": statistics.fmean(windows), "windows": len(windows)}  # fmt: skip


def bare(args: list[str], timeout: float = 540) -> dict[str, float]:
    out = _run([sys.executable, "-m", "bench.bare", *args], timeout)
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def mfu(tokens_per_second: float, flops_per_token: float) -> float | None:
    """Model FLOPs utilisation against the device's dense bf16 peak (None: peak not listed)."""
    peak = PEAK_BF16.get(torch.cuda.get_device_name(0))
    return round(tokens_per_second * flops_per_token / peak, 4) if peak else None


def _row(unit: str, per_step: float, mine: dict[str, float], ceiling: dict[str, float],
         ceiling_name: str) -> dict[str, Any]:  # fmt: skip
    return {
        "unit": unit,
        "ours": {**mine, "rate": per_step / mine["median_step_seconds"]},
        ceiling_name: {**ceiling, "rate": per_step / ceiling["median_step_seconds"]},
        "ceiling": ceiling_name,
        "ratio_median": ceiling["median_step_seconds"] / mine["median_step_seconds"],
        "ratio_mean": ceiling["mean_step_seconds"] / mine["mean_step_seconds"],
    }


def _ds_config(path: Path, zero: dict[str, Any], hidden: int | None) -> Path:
    """A ZeRO-3 config as trainops renders it (`build_config`), model-sized when `hidden`."""
    tuned = zero_tuning.generated(3, hidden)
    config = ds_facts.build_config(3, "bf16", 4, 1, {"zero_optimization": zero}, tuned=tuned)
    path.write_text(json.dumps(config))
    return path


def llama_case(work: Path) -> dict[str, Any]:
    """ZeRO-3 (as rendered now, and as the shipped job had it) against DDP on the ~0.94B
    Llama, micro batch 4 x 2048 tokens."""
    model = work / "llama-094b"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(LLAMA_094B))
    base = [*LLAMA_ARGS, "--hf-model", str(model), "--num-workers", "2"]
    ddp = ours([*base, "--batch-size", "4", "--precision", "bf16"])
    now = {k: v for k, v in ZERO3_BEFORE.items() if not k.endswith("bucket_size")}
    out = {}
    cases: list[tuple[str, dict[str, Any], int | None]] = [
        ("zero3_tuned", now, LLAMA_HIDDEN),
        ("zero3_before", ZERO3_BEFORE, None),
    ]
    for name, zero, hidden in cases:
        config = _ds_config(work / f"{name}.json", zero, hidden)
        mine = ours([*base, "--engine", "deepspeed", "--deepspeed-config", str(config)])
        out[name] = row = _row("tokens/s", 4 * 2048, mine, ddp, "ddp")
        for side in ("ours", "ddp"):
            row[side]["mfu"] = mfu(row[side]["rate"], LLAMA_FLOPS_PER_TOKEN)
    return out


def resnet_synthetic(work: Path) -> dict[str, Any]:
    data = ["--data", "synthetic-image"]
    mine = ours([*RESNET, *data, "--num-workers", "12", "--dataset-size", str(256 * 130)])
    return _row("images/s", 256, mine, bare([*RESNET, *data]), "bare")


def resnet_folder(work: Path) -> dict[str, Any]:
    folder = work / "jpegs"
    make_jpegs(folder, JPEG_COUNT, 224)
    data = ["--data", "image-folder", "--data-path", str(folder)]
    mine = ours([*RESNET, *data, "--num-workers", "14"])
    return _row("images/s", 256, mine, bare([*RESNET, "--data", "synthetic-image"]), "bare")


def gpt_medium(work: Path) -> dict[str, Any]:
    mine = ours([*GPT_MEDIUM, "--num-workers", "4"])
    row = _row("tokens/s", 32 * 1024, mine, bare(GPT_MEDIUM), "bare")
    flops = GPT("gpt-medium", 50304, 1024).flops_per_token(1024)
    for side in ("ours", "bare"):
        row[side]["mfu"] = mfu(row[side]["rate"], flops)
    return row


def _batches(dataset: Any, device: torch.device, decode: images.Decoder | None) -> list[Any]:
    """The first 4 batches of 16 as the trainer's input path delivers them on `device`."""
    sampler = data.ResumableDistributedSampler(64, 0, 1, seed=0)
    loader = data.EpochLoader(dataset, sampler, batch_size=16, num_workers=2,
                              pin_memory=device.type == "cuda", seed=0)  # fmt: skip
    prefetcher = DevicePrefetcher(loader, device, images.device_transform(dataset, True, decode))
    prefetcher.start(0, 0)
    out = [prefetcher.next()[0].float().cpu() for _ in range(4)]
    prefetcher.close()
    return out


def input_check(work: Path) -> dict[str, Any]:
    """The input path on the GPU against the CPU path (the CPU tests cannot run streams or
    nvJPEG): the prefetcher's batches from the side stream, and nvJPEG's decoding where
    torchvision can run, equal the CPU's up to rounding (max abs difference)."""
    folder = work / "check-jpegs"
    make_jpegs(folder, 64, 224)
    cuda, cpu = torch.device("cuda", 0), torch.device("cpu")
    decoder = images.nvjpeg_decoder(cuda)
    synthetic = images.SyntheticImages(64, 10, 224, 0)
    pixels = images.ImageFolder(str(folder), 224)
    checks: list[tuple[str, Any, Any, images.Decoder | None]] = [
        ("synthetic", synthetic, synthetic, None),
        ("image_folder", pixels, pixels, None),
    ]
    if decoder is not None:
        encoded = images.ImageFolder(str(folder), 224, encoded=True)
        checks.append(("image_folder_nvjpeg", pixels, encoded, decoder))
    out: dict[str, Any] = {"nvjpeg": decoder is not None}
    for name, on_cpu, on_gpu, decode in checks:
        pairs = zip(_batches(on_cpu, cpu, None), _batches(on_gpu, cuda, decode), strict=True)
        out[name] = max((a - b).abs().max().item() for a, b in pairs)
    return out


CASES: dict[str, Callable[[Path], dict[str, Any]]] = {
    "input_check": input_check,
    "resnet50_synthetic": resnet_synthetic,
    "resnet50_image_folder": resnet_folder,
    "gpt_medium": gpt_medium,
    "llama_094b": llama_case,  # two rows: zero3_tuned, zero3_before
}


def gpu_section(out: dict[str, Any], publish: Callable[[], None], cases: list[str]) -> None:
    """Fills `out` case by case (a failure is recorded, the other cases still run)."""
    if not torch.cuda.is_available():
        return
    out.update({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                "warmup_steps": WARMUP_STEPS, "log_interval": LOG_INTERVAL})  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-gpu-") as tmp:
        for name in cases:
            try:
                result = CASES[name](Path(tmp))
            except (RuntimeError, subprocess.TimeoutExpired, ImportError) as exc:
                out.setdefault("errors", {})[name] = str(exc)[-3000:]
            else:
                out.update(result if name == "llama_094b" else {name: result})
            publish()


TITLES = {
    "resnet50_synthetic": "ResNet-50, batch 256, channels-last, `--compile`, synthetic images",
    "resnet50_image_folder": "ResNet-50, the same, a folder of 224 px JPEGs",
    "gpt_medium": "GPT-medium (350M), batch 32 x 1,024, `--compile`",
    "zero3_tuned": "~0.94B Llama, batch 4 x 2,048, ZeRO-3 as trainops renders it vs DDP",
    "zero3_before": "~0.94B Llama, ZeRO-3 with the shipped job's pre-issue-36 buckets vs DDP",
}


def markdown_table(gpu: dict[str, Any], command: str) -> str:
    """The GPU results as docs/trainer.md shows them."""
    lines = [
        f"Measured on one **{gpu.get('device')}**, torch {gpu.get('torch')}, with `{command}`"
        f" (median and mean step over {LOG_INTERVAL}-step windows after {WARMUP_STEPS} warm-up"
        " steps; ratio = ceiling step / our step).",
        "",
        "| case | ours (median / mean step) | ceiling | ours / ceiling (median, mean) |",
        "| --- | --- | --- | --- |",
    ]
    for key, title in TITLES.items():
        row = gpu.get(key)
        if row is None:
            case = "llama_094b" if key.startswith("zero3") else key
            error = (gpu.get("errors") or {}).get(case, "")
            lines.append(f"| {title} | not measured{': ' + error[:80] if error else ''} | | |")
            continue
        mine, ceiling = row["ours"], row[row["ceiling"]]
        lines.append(
            f"| {title} | {_cell(mine, row['unit'])} | {row['ceiling']}: {_cell(ceiling, '')}"
            f" | **{row['ratio_median']:.2f}**, {row['ratio_mean']:.2f} |"
        )
    check = gpu.get("input_check")
    if check:
        lines += ["", f"Input path on the GPU against the CPU path (max abs difference): {check}"]
    return "\n".join(lines)


def _cell(side: dict[str, Any], unit: str) -> str:
    mfu_text = f", MFU {side['mfu']:.1%}" if side.get("mfu") else ""
    return (
        f"{side['rate']:,.0f} {unit}".rstrip()
        + f" ({side['median_step_seconds']:.4f} / {side['mean_step_seconds']:.4f} s{mfu_text})"
    )


def main(argv: list[str] | None = None) -> int:
    """`python -m bench.gpu RESULT.json... [--write-docs]`: the GPU sections of one or more
    `bench.trainer --gpu-only` runs merged (later files win), as the docs table."""
    parser = argparse.ArgumentParser(prog="python -m bench.gpu", description=main.__doc__)
    parser.add_argument("results", nargs="+", type=Path)
    parser.add_argument("--write-docs", action="store_true")
    opts = parser.parse_args(argv)
    merged: dict[str, Any] = {}
    commands = []
    for path in opts.results:
        result = json.loads(path.read_text())
        gpu = result.get("gpu") or {}
        errors = {**merged.get("errors", {}), **gpu.get("errors", {})}
        merged.update(gpu)
        if errors:
            merged["errors"] = {k: v for k, v in errors.items() if k not in merged}
        commands.append(result.get("command", "python -m bench.trainer --gpu-only"))
    table = markdown_table(merged, " and ".join(commands))
    print(table)
    if opts.write_docs:
        write_docs(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


def write_docs(table: str, doc: Path = REPO / "docs" / "trainer.md") -> None:
    """Replace the table between the markers of docs/trainer.md."""
    start, end = "<!-- bench-gpu:start -->", "<!-- bench-gpu:end -->"
    text = doc.read_text()
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{start}\n{table}\n{end}{tail}")
