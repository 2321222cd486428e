"""The ceiling for the GPU benchmark: a bare training loop with the batch already on the GPU.

Same model class (`trainer.models.build_model`), optimizer, micro batch, precision, layout and
`torch.compile` as the trainer is given, but no data loading, no DDP wrapper (one GPU), no loss
read, no checkpoints, no metrics: what the GPU does when nothing else stands in its way. Each
step is timed with CUDA events recorded on the stream (no host sync inside the loop); the
times are read once at the end.

    python -m bench.bare --model resnet50 --batch-size 256 --image-size 224 --precision bf16 \
        --channels-last --compile --steps 60      # prints one JSON object
"""

from __future__ import annotations

import json
import statistics
import sys

import torch

from trainer.config import parse_args
from trainer.engine import DTYPES, build_optimizer, compute_loss
from trainer.models import build_model

WARMUP_STEPS = 10


def main(argv: list[str]) -> int:
    cfg = parse_args(argv, env={})
    assert torch.cuda.is_available(), "the bare loop measures a GPU"
    device = torch.device("cuda", 0)
    torch.manual_seed(cfg.seed)
    classes = cfg.num_classes if cfg.is_image else cfg.vocab_size
    model = build_model(cfg, classes).to(device)
    if cfg.is_image:
        x = torch.randn(cfg.batch_size, 3, cfg.image_size, cfg.image_size, device=device)
        y = torch.randint(0, classes, (cfg.batch_size,), device=device)
        if cfg.channels_last:
            model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]
            x = x.contiguous(memory_format=torch.channels_last)
    else:
        x = torch.randint(0, classes, (cfg.batch_size, cfg.seq_len), device=device)
        y = torch.randint(0, classes, (cfg.batch_size, cfg.seq_len), device=device)
    if cfg.compile:
        model.compile()
    optimizer = build_optimizer(cfg, model.parameters())
    dtype = DTYPES[cfg.precision]
    steps = cfg.steps or 60
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))  # type: ignore[no-untyped-call]
              for _ in range(steps)]  # fmt: skip
    for start, end in events:
        start.record()
        with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
            loss = compute_loss(model, x, y)
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        end.record()
    torch.cuda.synchronize()
    seconds = [s.elapsed_time(e) / 1000 for s, e in events[WARMUP_STEPS:]]
    print(json.dumps({"steps": len(seconds), "median_step_seconds": statistics.median(seconds),
                      "mean_step_seconds": statistics.fmean(seconds)}))  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
