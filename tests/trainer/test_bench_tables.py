"""The GPU benchmark's results merged from its two parts and written into docs/trainer.md's
table (`bench/gpu.py`), as a GPU session will run them (`bench/gpu_run.sh`); the measurements
themselves need a GPU. And the loader benchmark's table (`bench/loader.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import gpu, loader


def _side(median: float, mean: float, rate: float) -> dict[str, float]:
    return {"median_step_seconds": median, "mean_step_seconds": mean, "rate": rate}


def test_two_parts_merge_into_one_table_with_what_failed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = {"command": "python -m bench.trainer --gpu-only --cases resnet50_synthetic",
         "gpu": {"device": "NVIDIA H200", "torch": "2.11.0",
                 "resnet50_synthetic": {"unit": "images/s", "ours": _side(0.05, 0.06, 5120),
                                        "bare": _side(0.04, 0.042, 6400), "ceiling": "bare",
                                        "ratio_median": 0.8, "ratio_mean": 0.7}}}  # fmt: skip
    b = {"command": "python -m bench.trainer --gpu-only --cases llama_094b",
         "gpu": {"device": "NVIDIA H200", "torch": "2.11.0",
                 "errors": {"llama_094b": "needs the `deepspeed` package"}}}  # fmt: skip
    for name, result in (("gpu-a.json", a), ("gpu-b.json", b)):
        (tmp_path / name).write_text(json.dumps(result))
    doc = tmp_path / "trainer.md"
    doc.write_text("before\n<!-- bench-gpu:start -->\nstale\n<!-- bench-gpu:end -->\nafter\n")
    table = gpu.markdown_table(
        {**a["gpu"], "errors": b["gpu"]["errors"]}, "python -m bench.trainer --gpu-only"
    )
    gpu.write_docs(table, doc)
    text = doc.read_text()
    assert text.startswith("before\n<!-- bench-gpu:start -->\nMeasured on one **NVIDIA H200**")
    assert text.endswith("<!-- bench-gpu:end -->\nafter\n") and "stale" not in text
    row = next(line for line in text.splitlines() if "synthetic images" in line)
    assert "5,120 images/s (0.0500 / 0.0600 s)" in row and "**0.80**, 0.70" in row
    zero3 = [line for line in text.splitlines() if "ZeRO-3" in line]
    assert len(zero3) == 2 and all("not measured: needs the `deepspeed`" in z for z in zero3)
    # The command line merges the parts' files into the same table (the second part's error
    # stays; the first part's row stays), naming both commands.
    assert gpu.main([str(tmp_path / "gpu-a.json"), str(tmp_path / "gpu-b.json")]) == 0
    printed = capsys.readouterr().out
    assert row in printed and zero3[0] in printed
    assert "--cases resnet50_synthetic` and `" not in printed
    assert "--cases resnet50_synthetic and python -m bench.trainer --gpu-only --cases" in printed


def test_the_loader_table_says_which_path_moves_more_per_core() -> None:
    result = {"command": "python -m bench.loader", "batch_size": 64, "repeats": 3,
              "batches": 12, "machine": {"cpus": 2, "load_average": [9.0], "torch": "2.13"},
              "cases": {"synthetic_224": {
                  "fp32": {"samples_per_cpu_second": 500.0, "bytes_per_sample": 602112},
                  "uint8": {"samples_per_cpu_second": 1800.0, "bytes_per_sample": 150528},
                  "ratio_uint8_over_fp32_per_core": 3.6}, "goal_met": True}}  # fmt: skip
    table = loader.markdown_table(result)
    assert "| synthetic_224 | 500 samples/CPU-s (588 KB/sample) | 1,800 samples/CPU-s" in table
    assert "**3.6x**" in table and "met." in table
