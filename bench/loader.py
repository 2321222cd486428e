"""Input-pipeline throughput on the CPU: samples per worker core, uint8 against float32.

Issue 36: the trainer's image loader made every sample as float32 on a CPU worker (600 KB at
224 px), so on an H200 the loader, not ResNet-50, set the pace. This measures, side by side in
one run, the two paths as a DataLoader worker and the main process run them:

- `fp32`: the path before issue 36, re-implemented here as trainer/data.py had it (commit
  0f854f6): synthetic images as prototype + `torch.randn` noise in float32; image-folder
  decoded, made float, resized and normalised in the worker;
- `uint8`: the trainer's path now (`trainer.images`): uint8 pixels from the worker, the
  normalisation left to the device.

The main process copies each batch once, as the pin-memory thread does on a GPU machine (this
machine has no CUDA, so no pinned memory): a 4x larger batch costs 4x the copy there too.
The figure is samples per CPU-second of the worker and the main process together, read from
/proc and getrusage, so other load on a shared machine slows the wall clock but not the figure;
wall-clock samples/s is recorded beside it. Cases alternate within each repeat.

    python -m bench.loader [--repeats 3] [--batches 12]   # bench/results/loader.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset

from trainer.images import IMAGENET_MEAN, IMAGENET_STD, ImageFolder, SyntheticImages

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "loader.json"
SIDE = 224
BATCH = 64
CLASSES = 1000
GOAL = 3.0  # issue 36: the uint8 path moves >= 3x the samples per core of the fp32 path
TICKS = os.sysconf("SC_CLK_TCK")

Sample = tuple[torch.Tensor, torch.Tensor]


class Fp32SyntheticImages(Dataset[Sample]):
    """trainer/data.py's SyntheticImages before issue 36: float32 prototype + randn noise."""

    def __init__(self, size: int, num_classes: int, side: int, seed: int) -> None:
        self.size = size
        self.num_classes = num_classes
        self.seed = seed
        gen = torch.Generator().manual_seed(seed)
        self.prototypes = torch.randn(num_classes, 3, side, side, generator=gen)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> Sample:
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        label = int(torch.randint(self.num_classes, (1,), generator=gen))
        noise = torch.randn(self.prototypes.shape[1:], generator=gen) * 0.5
        return self.prototypes[label] + noise, torch.tensor(label)


class Fp32ImageFolder(ImageFolder):
    """trainer/data.py's ImageFolder before issue 36: decode, float, resize, normalise."""

    def __getitem__(self, index: int) -> Sample:
        path, label = self.items[index]
        with Image.open(path) as img:
            decoded = np.asarray(img.convert("RGB"), dtype=np.uint8)
        pixels = torch.from_numpy(decoded.copy()).permute(2, 0, 1).float() / 255.0
        pixels = F.interpolate(
            pixels[None], size=(self.side, self.side), mode="bilinear", align_corners=False
        )[0]
        mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
        std = torch.tensor(IMAGENET_STD).view(3, 1, 1)
        return (pixels - mean) / std, torch.tensor(label)

    collate = None  # type: ignore[assignment]


def make_jpegs(root: Path, count: int, side: int) -> None:
    """`count` photo-like JPEGs (smooth gradients and noise, quality 90) in 10 classes."""
    gen = np.random.default_rng(0)
    yy, xx = np.mgrid[0:side, 0:side].astype(np.float32) / side
    for i in range(count):
        folder = root / f"class{i % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        a, b, c = gen.random(3)
        base = np.stack([xx * a, yy * b, (xx + yy) * c / 2], axis=-1) * 200
        noise = gen.normal(0, 12, (side, side, 3))
        pixels = np.clip(base + noise + 20, 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(folder / f"{i}.jpg", quality=90)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def measure(dataset: Dataset[Any], batches: int) -> dict[str, float]:
    """One worker, `batches` batches after one warm-up batch; the main process copies each."""
    collate = getattr(dataset, "collate", None)
    loader = DataLoader(dataset, batch_size=BATCH, shuffle=False, num_workers=1,
                        collate_fn=collate, prefetch_factor=2)  # fmt: skip
    it = iter(loader)
    worker = it._workers[0].pid  # type: ignore[attr-defined]
    x, _ = next(it)
    torch.empty_like(x).copy_(x)
    main0 = resource.getrusage(resource.RUSAGE_SELF)
    work0 = _cpu_seconds(worker)
    start = time.perf_counter()
    for _ in range(batches):
        x, _ = next(it)
        torch.empty_like(x).copy_(x)  # what the pin-memory thread does with it
    wall = time.perf_counter() - start
    work = _cpu_seconds(worker) - work0
    main1 = resource.getrusage(resource.RUSAGE_SELF)
    main = (main1.ru_utime - main0.ru_utime) + (main1.ru_stime - main0.ru_stime)
    del it
    samples = batches * BATCH
    return {
        "samples_per_cpu_second": samples / max(work + main, 1e-9),
        "samples_per_second_wall": samples / wall,
        "bytes_per_sample": x[0].numel() * x.element_size(),
    }


def run(repeats: int, batches: int, jpeg_dir: Path) -> dict[str, Any]:
    size = BATCH * (batches + 4)
    cases = {
        "synthetic_224": (
            Fp32SyntheticImages(size, CLASSES, SIDE, 0),
            SyntheticImages(size, CLASSES, SIDE, 0),
        ),
        "image_folder_jpeg_224": (
            Fp32ImageFolder(str(jpeg_dir), SIDE),
            ImageFolder(str(jpeg_dir), SIDE),
        ),
    }
    out: dict[str, Any] = {}
    for name, (fp32, uint8) in cases.items():
        runs: dict[str, list[dict[str, float]]] = {"fp32": [], "uint8": []}
        for _ in range(repeats):  # alternating: drifting load hits both paths alike
            runs["fp32"].append(measure(fp32, batches))
            runs["uint8"].append(measure(uint8, batches))
        row: dict[str, Any] = {}
        for path, results in runs.items():
            row[path] = {
                key: round(statistics.median(r[key] for r in results), 1) for key in results[0]
            }
        ratio = row["uint8"]["samples_per_cpu_second"] / row["fp32"]["samples_per_cpu_second"]
        row["ratio_uint8_over_fp32_per_core"] = round(ratio, 2)
        out[name] = row
    out["goal_ratio"] = GOAL
    out["goal_met"] = out["synthetic_224"]["ratio_uint8_over_fp32_per_core"] >= GOAL
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loader", description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--write-docs", action="store_true", help="the table into docs/trainer.md")
    opts = parser.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="bench-loader-") as tmp:
        make_jpegs(Path(tmp), BATCH * (opts.batches + 2), SIDE)
        cases = run(opts.repeats, opts.batches, Path(tmp))
    result = {
        "benchmark": "loader",
        "command": "python -m bench.loader " + " ".join(sys.argv[1:] if argv is None else argv),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "torch": torch.__version__, "load_average": os.getloadavg()},
        "batch_size": BATCH, "side": SIDE, "workers": 1, "repeats": opts.repeats,
        "batches": opts.batches, "cases": cases,
    }  # fmt: skip
    opts.output.parent.mkdir(parents=True, exist_ok=True)
    opts.output.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    for name, row in cases.items():
        if isinstance(row, dict):
            print(
                f"{name}: fp32 {row['fp32']['samples_per_cpu_second']} samples/cpu-s, uint8 "
                f"{row['uint8']['samples_per_cpu_second']} samples/cpu-s, ratio "
                f"{row['ratio_uint8_over_fp32_per_core']}"
            )
    print(f"written {opts.output}")
    if opts.write_docs:
        write_docs(markdown_table(result))
    return 0


def markdown_table(result: dict[str, Any]) -> str:
    """The measurement as docs/trainer.md shows it."""
    machine = result["machine"]
    lines = [
        f"`{result['command'].strip()}` on the shared {machine['cpus']}-core machine (load"
        f" average {machine['load_average'][0]:.1f} at the end, torch {machine['torch']}), one"
        f" worker, batch {result['batch_size']}, median of {result['repeats']} alternating runs"
        f" of {result['batches']} batches:",
        "",
        "| case | float32 path (before) | uint8 path | per core |",
        "| --- | --- | --- | --- |",
    ]
    for name, row in result["cases"].items():
        if not isinstance(row, dict):
            continue
        cells = [
            f"{row[p]['samples_per_cpu_second']:,.0f} samples/CPU-s"
            f" ({row[p]['bytes_per_sample'] // 1024} KB/sample)"
            for p in ("fp32", "uint8")
        ]
        lines.append(
            f"| {name} | {cells[0]} | {cells[1]} | **{row['ratio_uint8_over_fp32_per_core']}x** |"
        )
    met = "met" if result["cases"]["goal_met"] else "not met"
    lines += ["", f"Goal (synthetic images, >= {GOAL:g}x per core): {met}."]
    return "\n".join(lines)


def write_docs(table: str, doc: Path = REPO / "docs" / "trainer.md") -> None:
    """Replace the table between the markers of docs/trainer.md."""
    start, end = "<!-- bench-loader:start -->", "<!-- bench-loader:end -->"
    head, rest = doc.read_text().split(start, 1)
    _, tail = rest.split(end, 1)
    doc.write_text(f"{head}{start}\n{table}\n{end}{tail}")


if __name__ == "__main__":
    raise SystemExit(main())
