"""Domain facts, each coded once: what the operators, DeepSpeed, NCCL, kustomize and GPU
device plugins do. Render, spec checks, rules, the build table and the diff all call these."""
