"""Will it fit? A training process's GPU memory, estimated before a gang of GPUs is spent on it.

Model states follow DeepSpeed 0.19.8's own estimators, term for term:
`estimate_zero3_model_states_mem_needs` (runtime/zero/stage3.py) and
`estimate_zero2_model_states_mem_needs` (runtime/zero/stage_1_and_2.py), GPU side: per
parameter 2 bytes of 16-bit weights and 18 bytes of gradients, fp32 master weights and Adam
moments partitioned over the GPUs (ZeRO-2: gradients and optimizer; ZeRO-3: weights too, plus
the largest layer gathered at 4 bytes a parameter); with the optimizer offloaded only the 16-bit
weights stay (ZeRO-2) or their share (ZeRO-3); with the weights offloaded too, only the gathered
largest layer. DeepSpeed has no estimator for ZeRO-1 and 0, nor for fp32 training; those follow
the same accounting (ZeRO-1: the 16-bit gradients whole, 4 + 16/N; stage 0: ZeRO-2 at one GPU),
and a job without DeepSpeed is the trainer's DDP engine (fp32 weights, gradients and DDP's
bucket copy, the optimizer's state, and autocast's 16-bit weight copies).

Activations of a decoder-only transformer follow Korthikanti et al. 2022 ("Reducing Activation
Recomputation in Large Transformer Models", arXiv:2205.05198, section 4.1): 34 bytes per token
and hidden unit per layer in 16-bit, without the attention matrix (5as/h), which the fused
attention kernels (PyTorch's SDPA, FlashAttention) do not store; with full recomputation
(gradient checkpointing) only each layer's 16-bit input stays, plus one layer's activations while
it is recomputed. The output layer's logits are counted in 16-bit and twice in fp32 (the
trainer's loss upcasts them and the softmax keeps its own). fp32 training doubles activations.

A fixed `RESERVE` stands for the CUDA context, NCCL's buffers and the allocator's slack. The
estimate is a floor, not a promise: a job refused by it cannot fit; one that passes can still
run out of memory on fragmentation or a long sequence.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

GIB = 1024**3
RESERVE = 2 * GIB
# Korthikanti et al. 2022, section 4.1: bytes per token x hidden unit x layer, 16-bit, no
# attention scores stored (fused attention).
ACTIVATION_BYTES_PER_LAYER = 34
CHECKPOINTED_BYTES_PER_LAYER = 2  # the 16-bit input each checkpointed layer keeps
LOGIT_BYTES = 2 + 4 + 4  # 16-bit logits, their fp32 copy and fp32 log-softmax
# Optimizer state per parameter of the DDP engine (fp32): AdamW's two moments, SGD's momentum.
OPTIMIZER_STATE_BYTES = {"adamw": 8, "sgd": 4}
# DeepSpeed's estimators' default `additional_buffer_factor` for host memory.
HOST_BUFFER_FACTOR = 1.5
# Most pod-count steps tried when looking for the world size that fits.
MAX_GPU_STEPS = 4096


@dataclass(frozen=True)
class Workload:
    """What one training process holds, from the job spec."""

    parameters: int
    largest_layer: int
    """Parameters of the largest single module (DeepSpeed's `model_to_params`)."""
    gpus: int
    """GPUs the job runs on at its smallest size: the states are partitioned over these."""
    zero_stage: int | None
    """DeepSpeed's ZeRO stage; None: no DeepSpeed (the trainer's DDP engine)."""
    precision: str = "bf16"
    offload_optimizer: bool = False
    offload_params: bool = False
    optimizer: str = "adamw"
    """The DDP engine's optimizer (DeepSpeed's formulas assume Adam)."""
    micro_batch: int | None = None
    sequence_length: int | None = None
    hidden_size: int | None = None
    layers: int | None = None
    vocab_size: int | None = None
    gradient_checkpointing: bool = False
    gpus_per_pod: int = 1
    """GPUs (processes) per pod: DeepSpeed's `num_gpus_per_node` for the host-memory side."""


def zero3_gpu_bytes(
    params: int, largest: int, gpus: int, offload: bool, offload_params: bool
) -> int:
    """`estimate_zero3_model_states_mem_needs(...)[1]` (DeepSpeed 0.19.8), the GPU side."""
    largest_layer_memory = 4 * largest
    if offload and offload_params:
        return largest_layer_memory
    if offload:
        return largest_layer_memory + int(2 * params / gpus)
    return largest_layer_memory + int(18 * params / gpus)


def zero3_host_bytes(
    params: int,
    largest: int,
    gpus_per_node: int,
    nodes: int,
    *,
    offload: bool,
    offload_params: bool,
) -> int:
    """`estimate_zero3_model_states_mem_needs(..., zero_init=True)[0]` (DeepSpeed 0.19.8): one
    node's host memory, with DeepSpeed's default `additional_buffer_factor` of 1.5."""
    factor = 1 / nodes
    if offload and offload_params:
        return int(params * 18 * factor * HOST_BUFFER_FACTOR)
    if offload:
        return int(params * 16 * factor * HOST_BUFFER_FACTOR)
    return int(largest * 4 * gpus_per_node * HOST_BUFFER_FACTOR)


def host_bytes(w: Workload) -> int | None:
    """One pod's host memory for ZeRO-3's offloaded states (DeepSpeed's estimate, the model
    created under `zero.Init` as the trainer does); None where nothing is offloaded or for other
    stages (DeepSpeed's ZeRO-2 host estimate assumes an fp32 copy of the model on every rank)."""
    if w.zero_stage != 3 or not (w.offload_optimizer or w.offload_params):
        return None
    per_pod = max(w.gpus_per_pod, 1)
    nodes = max(1, w.gpus // per_pod)
    offload = w.offload_optimizer or w.offload_params
    return zero3_host_bytes(
        w.parameters,
        w.largest_layer,
        per_pod,
        nodes,
        offload=offload,
        offload_params=w.offload_params,
    )


def zero2_gpu_bytes(params: int, gpus: int, offload: bool) -> int:
    """`estimate_zero2_model_states_mem_needs(...)[1]` (DeepSpeed 0.19.8), the GPU side."""
    if offload:
        return 2 * params
    return 2 * params + int(18 * params / gpus)


def model_state_bytes(w: Workload) -> int:
    """Weights, gradients and optimizer state on one GPU."""
    p, n = w.parameters, max(w.gpus, 1)
    offload = w.offload_optimizer or w.offload_params
    if w.zero_stage is None:  # DDP: fp32 weights, gradients, bucket copy, optimizer state
        autocast = 2 if w.precision in ("bf16", "fp16") else 0
        return p * (4 + 4 + 4 + OPTIMIZER_STATE_BYTES.get(w.optimizer, 8) + autocast)
    if w.precision == "fp32":  # 4 weights + 4 gradients + 8 Adam, partitioned by stage
        partitioned = {0: 0, 1: 8, 2: 12, 3: 16}[w.zero_stage]
        whole = 16 - partitioned
        kept = 4 * p if offload else whole * p + int(partitioned * p / n)
        return kept + (4 * w.largest_layer if w.zero_stage == 3 else 0)
    if w.zero_stage == 3:
        return zero3_gpu_bytes(p, w.largest_layer, n, offload, w.offload_params)
    if w.zero_stage == 2:
        return zero2_gpu_bytes(p, n, offload)
    if w.zero_stage == 1:
        return 4 * p if offload else 4 * p + int(16 * p / n)
    return zero2_gpu_bytes(p, 1, offload)


def activation_bytes(w: Workload) -> int | None:
    """A decoder-only transformer's activations for one micro batch; None when the spec does
    not give the shape (hidden size, layers, sequence length, micro batch)."""
    if not (w.hidden_size and w.layers and w.sequence_length and w.micro_batch):
        return None
    tokens = w.micro_batch * w.sequence_length
    per_layer = ACTIVATION_BYTES_PER_LAYER * tokens * w.hidden_size
    if w.gradient_checkpointing:
        layers = CHECKPOINTED_BYTES_PER_LAYER * tokens * w.hidden_size * w.layers + per_layer
    else:
        layers = per_layer * w.layers
    logits = LOGIT_BYTES * tokens * (w.vocab_size or 0)
    return (layers + logits) * (2 if w.precision == "fp32" else 1)


@dataclass(frozen=True)
class Estimate:
    states: int
    activations: int | None
    """None: not estimated (the spec gives no transformer shape)."""

    @property
    def total(self) -> int:
        return self.states + (self.activations or 0) + RESERVE

    def describe(self) -> str:
        acts = (
            f"activations {gib(self.activations)}"
            if self.activations is not None
            else "activations not counted (state model.hiddenSize, layers, sequenceLength)"
        )
        return f"model states {gib(self.states)}, {acts}, reserve {gib(RESERVE)}"


def estimate(w: Workload) -> Estimate:
    return Estimate(model_state_bytes(w), activation_bytes(w))


def gib(value: float) -> str:
    return f"{value / GIB:.1f} GiB"


@dataclass(frozen=True)
class Fix:
    """A change to the job that makes it fit, and the estimate with it."""

    kind: str
    """`checkpointing`, `micro_batch`, `zero_stage`, `offload_optimizer`, `offload_params`,
    `gpus`: which knob."""
    value: int
    workload: Workload
    estimate: Estimate


def fixes(
    w: Workload, capacity: int, gpus_step: int, max_gpus: int, host: float | None = None
) -> list[Fix]:
    """For each knob, the smallest single change that brings `w` within `capacity` bytes,
    least disruptive first: gradient checkpointing, the largest smaller micro batch, the
    lowest higher ZeRO stage, offloading the optimizer (then the weights) where the pod's
    `host` memory (bytes) holds what is offloaded, and the fewest GPUs (in steps of one pod's,
    up to `max_gpus`) that partition the states enough."""
    out = []
    for kind, options in _candidates(w, gpus_step, max_gpus):
        for value, changed in options:
            est = estimate(changed)
            offloaded = host_bytes(changed)
            if host is not None and offloaded is not None and offloaded > host:
                continue
            if est.total <= capacity:
                out.append(Fix(kind, value, changed, est))
                break
    return out


Options = Iterator[tuple[int, Workload]]


def _candidates(w: Workload, gpus_step: int, max_gpus: int) -> Iterator[tuple[str, Options]]:
    if activation_bytes(w) is not None:
        if not w.gradient_checkpointing:
            yield "checkpointing", iter([(1, replace(w, gradient_checkpointing=True))])
        micro = w.micro_batch or 1
        yield "micro_batch", ((m, replace(w, micro_batch=m)) for m in range(micro - 1, 0, -1))
    if w.zero_stage is None:  # DDP: DeepSpeed's ZeRO partitions what DDP replicates
        yield "zero_stage", ((s, replace(w, zero_stage=s)) for s in range(1, 4))
        return
    yield "zero_stage", ((s, replace(w, zero_stage=s)) for s in range(w.zero_stage + 1, 4))
    if not w.offload_optimizer:
        yield "offload_optimizer", iter([(1, replace(w, offload_optimizer=True))])
    if w.zero_stage == 3 and not w.offload_params:
        both = replace(w, offload_optimizer=True, offload_params=True)
        yield "offload_params", iter([(1, both)])
    if w.zero_stage > 0 and gpus_step > 0:
        sizes = range(w.gpus + gpus_step, max_gpus + 1, gpus_step)
        yield "gpus", ((n, replace(w, gpus=n)) for n in sizes[:MAX_GPU_STEPS])
