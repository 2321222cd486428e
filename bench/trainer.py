"""Trainer throughput: our DDP path against the seed's plain loop (`make bench-trainer`).

Both sides run under `torchrun --nproc_per_node=2` (gloo on CPU) with the same model, data set,
micro batch and optimizer. The "plain" side re-implements seed 000's script: DDP, a
DistributedSampler, a DataLoader and a bare loop with no checkpoints, metrics or resume
bookkeeping. Each side reports the median seconds per optimizer step after a warm-up; the ratio
`ours / plain` of samples per second says what the production features cost (1.0 = nothing).

With a GPU it runs `bench.gpu`'s cases instead (`--gpu-only`): each one ours and its ceiling
side by side (ResNet-50 on synthetic images and on JPEGs, GPT-medium, ZeRO-3 against DDP), and
with `--write-docs` puts the table into docs/trainer.md.

Results: bench/results/trainer.json, rewritten as each section finishes (`"complete": true` once
all have), so a run cut short still leaves what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import gpu

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results" / "trainer.json"
# Steps excluded from the median: first steps pay for allocator warm-up and DDP bucket rebuilds.
WARMUP_STEPS = 5
# CPU cases: small enough for 2 shared cores, large enough that compute dominates overheads.
CPU_CASES: dict[str, dict[str, Any]] = {
    "resnet18": {
        "model": "resnet18",
        "data": "synthetic-image",
        "batch_size": 16,
        "image_size": 32,
        "steps": 25,
    },
    "gpt-tiny": {
        "model": "gpt-tiny",
        "data": "synthetic-tokens",
        "batch_size": 16,
        "seq_len": 64,
        "steps": 60,
    },
}


def _cli_args(case: dict[str, Any]) -> list[str]:
    args = []
    for key, value in case.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args


def _torchrun(nproc: int, module_args: list[str]) -> str:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={nproc}",
        "-m",
        *module_args,
    ]
    result = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed:\n{result.stdout[-2000:]}{result.stderr[-3000:]}"
        )
    return result.stdout


def _step_seconds(stdout: str) -> list[float]:
    out = []
    for line in stdout.splitlines():
        if line.startswith("{") and '"event": "step"' in line:
            event = json.loads(line)
            if event["step"] > WARMUP_STEPS:
                out.append(float(event["step_seconds"]))
    return out


def run_ours(case: dict[str, Any], nproc: int, extra: list[str] | None = None) -> list[float]:
    args = [
        *_cli_args(case),
        "--num-workers",
        "0",
        "--log-interval",
        "1",
        "--metrics-port",
        "0",
        "--optimizer",
        "sgd",
        "--lr",
        "0.01",
        *(extra or []),
    ]
    return _step_seconds(_torchrun(nproc, ["trainer", *args]))


def run_plain(case: dict[str, Any], nproc: int) -> list[float]:
    return _step_seconds(_torchrun(nproc, ["bench.trainer", "--plain-worker", *_cli_args(case)]))


def plain_worker(argv: list[str]) -> None:
    """Seed 000's loop, minimal, on the same model and data (runs inside torchrun)."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    from torch.utils.data import DataLoader, DistributedSampler

    from trainer.config import parse_args
    from trainer.data import build_dataset
    from trainer.images import device_transform
    from trainer.models import build_model

    cfg = parse_args(argv, env={})
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(cfg.seed)
    dataset, classes = build_dataset(cfg)
    to_float = device_transform(dataset, False, None)  # uint8 images, as the seed's float
    model = DistributedDataParallel(build_model(cfg, classes))
    sampler: DistributedSampler[Any] = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=cfg.batch_size, sampler=sampler, num_workers=0)
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    world = dist.get_world_size()
    step = 0
    sampler.set_epoch(0)
    it = iter(loader)
    assert cfg.steps is not None
    while step < cfg.steps:
        start = time.perf_counter()
        data, target = next(it)
        data = to_float(data) if to_float is not None else data
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output.reshape(-1, output.shape[-1]), target.reshape(-1))
        loss.backward()
        optimizer.step()
        step += 1
        seconds = time.perf_counter() - start
        if rank == 0:
            print(
                json.dumps(
                    {
                        "event": "step",
                        "step": step,
                        "step_seconds": seconds,
                        "samples": cfg.batch_size * world,
                    }
                ),
                flush=True,
            )
    dist.destroy_process_group()


def cpu_comparison(repeats: int, out: dict[str, Any], publish: Callable[[], None]) -> None:
    """Fills `out` case by case, calling `publish` after each."""
    nproc = 2
    for name, case in CPU_CASES.items():
        global_batch = case["batch_size"] * nproc
        ours: list[float] = []
        plain: list[float] = []
        for _ in range(repeats):  # interleaved, so drift in machine load hits both sides
            plain.append(statistics.median(run_plain(case, nproc)))
            ours.append(statistics.median(run_ours(case, nproc)))
        ours_rate = global_batch / min(ours)
        plain_rate = global_batch / min(plain)
        out[name] = {
            "processes": nproc,
            "global_batch": global_batch,
            "ours_samples_per_second": round(ours_rate, 2),
            "plain_samples_per_second": round(plain_rate, 2),
            "ratio_ours_over_plain": round(ours_rate / plain_rate, 4),
            "median_step_seconds": {"ours": ours, "plain": plain},
        }
        publish()


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--plain-worker":
        plain_worker(args[1:])
        return 0
    parser = argparse.ArgumentParser(prog="python -m bench.trainer", description=__doc__)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument(
        "--gpu-only", action="store_true", help="skip the CPU comparison (the GPU machine's run)"
    )
    parser.add_argument(
        "--cases",
        default=",".join(gpu.CASES),
        help=f"GPU cases, comma-separated (default: all of {', '.join(gpu.CASES)})",
    )
    parser.add_argument(
        "--write-docs", action="store_true", help="put the GPU table into docs/trainer.md"
    )
    opts = parser.parse_args(args)
    cases = [c for c in opts.cases.split(",") if c]
    unknown = sorted(set(cases) - set(gpu.CASES))
    if unknown:
        parser.error(f"unknown GPU case(s): {', '.join(unknown)}")
    import torch

    result: dict[str, Any] = {
        "benchmark": "trainer",
        "command": "python -m bench.trainer " + " ".join(args),
        "complete": False,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "torch": torch.__version__,
        },
        "warmup_steps": WARMUP_STEPS,
        "cpu": {},
        "gpu": {},
    }
    opts.output.parent.mkdir(parents=True, exist_ok=True)

    def publish() -> None:
        """Write what is measured so far (atomically): a run cut short keeps its sections."""
        tmp = opts.output.with_name(opts.output.name + ".tmp")
        tmp.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, opts.output)

    if not opts.gpu_only:
        cpu_comparison(opts.repeats, result["cpu"], publish)
    gpu.gpu_section(result["gpu"], publish, cases)
    if result["gpu"] and opts.write_docs:
        command = "python -m bench.trainer " + " ".join(args)
        gpu.write_docs(gpu.markdown_table(result["gpu"], command))
    if not result["gpu"]:
        result["gpu"] = None
    result["complete"] = True
    publish()
    for name, row in result["cpu"].items():
        print(
            f"{name}: ours {row['ours_samples_per_second']} samples/s, plain "
            f"{row['plain_samples_per_second']} samples/s, ratio {row['ratio_ours_over_plain']}"
        )
    print(f"written {opts.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
