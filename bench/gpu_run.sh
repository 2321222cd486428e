#!/bin/sh
# Issue 36's GPU measurement as one script, for a machine with one NVIDIA GPU and PyTorch
# (run from the repository root). What the machine has is recorded first; each case that
# cannot run there (no DeepSpeed, no transformers) is recorded as not measured, the rest run.
#
#   sh bench/gpu_run.sh [OUTDIR] [a|b|all]
#     a:   the input path on the GPU against the CPU, ResNet-50 synthetic, GPT-medium (~6 min)
#     b:   ResNet-50 on 224 px JPEGs, ZeRO-3 (rendered and pre-issue-36 buckets) vs DDP (~5 min)
#     all: both (default); then the merged table goes into docs/trainer.md, copied to OUTDIR.
set -eu
out=${1:-${OUT:-bench/results}}
part=${2:-all}
python=${PYTHON:-python3}
mkdir -p "$out"
{
  nvidia-smi || true
  for module in torch numpy PIL yaml prometheus_client torchvision deepspeed transformers accelerate; do
    $python -c "import $module as m; print('$module', getattr(m, '__version__', '?'))" 2>&1 | tail -n 1
  done
} > "$out/environment.txt" 2>&1
case $part in
  a|all) $python -m bench.trainer --gpu-only --cases input_check,resnet50_synthetic,gpt_medium \
           --output "$out/gpu-a.json" ;;
esac
case $part in
  b|all) $python -m bench.trainer --gpu-only --cases resnet50_image_folder,llama_094b \
           --output "$out/gpu-b.json" ;;
esac
set -- "$out"/gpu-*.json
$python -m bench.gpu "$@" --write-docs > "$out/table.md"
cp docs/trainer.md "$out/trainer.md"
