"""`run-local --tiny`: our trainer with a tiny random model and synthetic data of the job's
kind, so a job whose weights or data set this machine lacks (a 13B model, ImageNet) still runs
its distribution, DeepSpeed config, checkpoints and restarts as built.

One option instead of the five `--set-arg`/`--drop-arg` it replaces: the language models
(`gpt-*`, `hf-causal-lm`) become `gpt-tiny` on synthetic tokens of 64, the image models
`resnet18` on synthetic 32-pixel images; the flags naming real weights or data go.
"""

from __future__ import annotations

# The trainer's model flags (trainer/config.py MODELS) by kind.
LANGUAGE_MODELS = ("gpt-tiny", "gpt-small", "gpt-medium", "hf-causal-lm")
# What a tiny run sets, by the kind of the job's model, and the flags that name real data.
SETS = {
    "language": ("--model=gpt-tiny", "--data=synthetic-tokens", "--seq-len=64"),
    "image": ("--model=resnet18", "--data=synthetic-image", "--image-size=32"),
}
DROPS = ("--hf-model", "--data-path", "--token-dtype", "--export-dir", "--num-classes")


def model_kind(args: list[str]) -> str:
    """`language` or `image`, from the job's `--model` (our trainer's default: an image one)."""
    for i, arg in enumerate(args):
        value = None
        if arg.startswith("--model="):
            value = arg.partition("=")[2]
        elif arg == "--model" and i + 1 < len(args):
            value = args[i + 1]
        if value is not None:
            return "language" if value in LANGUAGE_MODELS else "image"
    return "image"


def edits(args: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(flags to set, flags to drop where present) for a tiny run of `args`."""
    return SETS[model_kind(args)], DROPS
