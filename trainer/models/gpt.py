"""A small GPT (decoder-only transformer, pre-norm, tied embeddings) in the style of nanoGPT,
using PyTorch's fused scaled-dot-product attention so it runs at speed on GPUs."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F


@dataclass(frozen=True)
class GPTShape:
    """Size of a GPT: layers, heads, width; vocabulary and context come from the data."""

    n_layer: int
    n_head: int
    n_embd: int


# gpt-small/medium are GPT-2's 124M/350M shapes (https://github.com/openai/gpt-2, hparams.json);
# gpt-tiny is for tests on CPU.
SHAPES = {
    "gpt-tiny": GPTShape(n_layer=2, n_head=2, n_embd=64),
    "gpt-small": GPTShape(n_layer=12, n_head=12, n_embd=768),
    "gpt-medium": GPTShape(n_layer=24, n_head=16, n_embd=1024),
}


class Block(nn.Module):
    """Pre-norm attention + MLP block."""

    def __init__(self, shape: GPTShape) -> None:
        super().__init__()
        self.n_head = shape.n_head
        self.ln1 = nn.LayerNorm(shape.n_embd)
        self.qkv = nn.Linear(shape.n_embd, 3 * shape.n_embd)
        self.proj = nn.Linear(shape.n_embd, shape.n_embd)
        self.ln2 = nn.LayerNorm(shape.n_embd)
        self.fc = nn.Linear(shape.n_embd, 4 * shape.n_embd)
        self.fc_out = nn.Linear(4 * shape.n_embd, shape.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).contiguous().view(b, t, c))
        out: torch.Tensor = x + self.fc_out(F.gelu(self.fc(self.ln2(x))))
        return out


class GPT(nn.Module):
    """Token ids [B, T] -> logits [B, T, vocab]."""

    def __init__(self, name: str, vocab_size: int, seq_len: int) -> None:
        super().__init__()
        shape = SHAPES[name]
        self.shape = shape
        self.tok = nn.Embedding(vocab_size, shape.n_embd)
        self.pos = nn.Embedding(seq_len, shape.n_embd)
        self.blocks = nn.ModuleList(Block(shape) for _ in range(shape.n_layer))
        self.ln_f = nn.LayerNorm(shape.n_embd)
        self.head = nn.Linear(shape.n_embd, vocab_size, bias=False)
        self.head.weight = self.tok.weight  # weight tying (GPT-2)
        # GPT-2 init: N(0, 0.02) (https://github.com/openai/gpt-2/blob/master/src/model.py)
        for module in self.modules():
            if isinstance(module, nn.Linear | nn.Embedding):
                nn.init.normal_(module.weight, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(positions)
        for block in self.blocks:
            x = block(x)
        logits: torch.Tensor = self.head(self.ln_f(x))
        return logits

    def flops_per_token(self, seq_len: int) -> float:
        """Training FLOPs per token: 6N + 12·L·d·T (PaLM appendix B, arXiv:2204.02311)."""
        n = sum(p.numel() for p in self.parameters()) - self.pos.weight.numel()
        s = self.shape
        return 6.0 * n + 12.0 * s.n_layer * s.n_embd * seq_len
