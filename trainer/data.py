"""Data sets and the resumable distributed sampler.

Synthetic sets derive every sample from its index and the seed alone (no shared RNG state), so
any rank, worker or restarted process produces the same sample for the same index, and both are
learnable (a falling loss proves the training step works, not merely that it runs). The image
sets live in `trainer.images` (uint8 out of the workers, float on the device).
"""

from __future__ import annotations

import math
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset, Sampler

from trainer.config import ConfigError, TrainConfig
from trainer.images import ImageFolder, SyntheticImages

# The signals that ask the trainer to checkpoint and stop (Kubernetes eviction, Ctrl-C).
STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT})
# Tags the DataLoader's seed stream apart from the sampler's (seed + epoch) and the samples'.
LOADER_STREAM = 0x10AD

Sample = tuple[torch.Tensor, torch.Tensor]


def _generator(seed: int, index: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed * 1_000_003 + index)


class SyntheticTokens(Dataset[Sample]):
    """Affine sequences x[t+1] = (a*x[t] + b) mod V with a per-sample start and one of a few
    (a, b) rules: predictable from context, so a language model's loss falls towards zero."""

    RULES = 4

    def __init__(self, size: int, vocab: int, seq_len: int, seed: int) -> None:
        self.size = size
        self.vocab = vocab
        self.seq_len = seq_len
        self.seed = seed
        gen = torch.Generator().manual_seed(seed)
        self.mult = torch.randint(1, vocab, (self.RULES,), generator=gen) | 1
        self.add = torch.randint(0, vocab, (self.RULES,), generator=gen)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> Sample:
        gen = _generator(self.seed, index)
        rule = int(torch.randint(self.RULES, (1,), generator=gen))
        x = int(torch.randint(self.vocab, (1,), generator=gen))
        seq = [x]
        mult, add = int(self.mult[rule]), int(self.add[rule])
        for _ in range(self.seq_len):
            x = (mult * x + add) % self.vocab
            seq.append(x)
        tokens = torch.tensor(seq, dtype=torch.long)
        return tokens[:-1], tokens[1:]


class TokenFile(Dataset[Sample]):
    """Non-overlapping windows of a flat token file (nanoGPT's `train.bin`), memory-mapped."""

    def __init__(self, path: str, seq_len: int, dtype: str, vocab: int) -> None:
        file = Path(path)
        if file.is_dir():
            file = file / "train.bin"
        if not file.is_file():
            raise ConfigError(
                f"--data-path {path}: no token file (expected a file or dir/train.bin)"
            )
        self.tokens = np.memmap(file, dtype=np.dtype(dtype), mode="r")
        self.seq_len = seq_len
        self.size = (len(self.tokens) - 1) // seq_len
        if self.size < 1:
            raise ConfigError(f"{file}: fewer than seq_len+1 = {seq_len + 1} tokens")
        self.vocab = vocab

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> Sample:
        start = index * self.seq_len
        window = torch.from_numpy(self.tokens[start : start + self.seq_len + 1].astype(np.int64))
        return window[:-1], window[1:]


def build_dataset(cfg: TrainConfig, jpeg_on_device: bool = False) -> tuple[Dataset[Sample], int]:
    """The data set named by the config and its number of classes (vocab for LMs).

    Image sets yield uint8 pixels (`trainer.images`); an image folder of JPEGs yields the
    files' bytes instead when `jpeg_on_device` (the device decodes them: nvJPEG)."""
    if cfg.data == "synthetic-image":
        return SyntheticImages(cfg.dataset_size, cfg.num_classes, cfg.image_size, cfg.seed), (
            cfg.num_classes
        )
    if cfg.data == "synthetic-tokens":
        return SyntheticTokens(cfg.dataset_size, cfg.vocab_size, cfg.seq_len, cfg.seed), (
            cfg.vocab_size
        )
    assert cfg.data_path is not None  # validate() guarantees it
    if cfg.data == "image-folder":
        folder = ImageFolder(cfg.data_path, cfg.image_size)
        folder.encoded = jpeg_on_device and folder.all_jpeg()
        return folder, folder.num_classes
    return TokenFile(cfg.data_path, cfg.seq_len, cfg.token_dtype, cfg.vocab_size), cfg.vocab_size


class ResumableDistributedSampler(Sampler[int]):
    """DistributedSampler whose position is the number of samples consumed *globally*.

    Each epoch has one global permutation (seeded by seed + epoch). The not-yet-consumed tail,
    `perm[start:]`, is dealt round-robin to the ranks, so the first `world * k` samples of the
    tail are exactly the ones the next k per-rank samples cover on all ranks together. That
    makes `start` meaningful at any world size: a restart with another world size continues
    with the same unseen samples, re-sharded (the sampler keeps no state of its own).
    """

    def __init__(self, length: int, rank: int, world: int, seed: int, shuffle: bool = True) -> None:
        super().__init__()
        self.length = length
        self.rank = rank
        self.world = world
        self.seed = seed
        self.shuffle = shuffle
        self.epoch = 0
        self.start = 0

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        """Select the epoch's permutation and skip `start` globally consumed samples."""
        self.epoch = epoch
        self.start = start

    def per_rank(self) -> int:
        """Samples each rank draws from the rest of the epoch (tail trimmed to equal shares)."""
        return max(0, self.length - self.start) // self.world

    def __len__(self) -> int:
        return self.per_rank()

    def __iter__(self) -> Iterator[int]:
        if self.shuffle:
            gen = torch.Generator().manual_seed(self.seed + self.epoch)
            order = torch.randperm(self.length, generator=gen).tolist()
        else:
            order = list(range(self.length))
        tail = order[self.start : self.start + self.per_rank() * self.world]
        return iter(tail[self.rank :: self.world])


def steps_per_epoch(length: int, global_batch: int) -> int:
    """Whole optimizer steps in one epoch (the remainder is dropped, as drop_last does)."""
    return math.floor(length / global_batch)


def ignore_stop_signals(worker_id: int) -> None:
    """DataLoader `worker_init_fn`: workers ignore SIGTERM and SIGINT.

    torchrun forwards SIGTERM to each trainer's whole process group (`os.killpg`), which holds
    its DataLoader worker processes too. A worker killed by it makes the main process raise
    "DataLoader worker (pid ...) is killed by signal: Terminated" before it can checkpoint. Only
    the main process decides to stop; its workers end when it shuts the loader down, or when it
    exits (they watch their parent). The signals arrive blocked (see `EpochLoader.start`), so
    one sent between the fork and this function is discarded here, not fatal.
    """
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def loader_seed(seed: int, epoch: int) -> int:
    """Seed of the DataLoader's own generator for an epoch (worker base seeds derive from it)."""
    state = np.random.SeedSequence([seed, epoch, LOADER_STREAM]).generate_state(1, np.uint64)
    return int(state[0])


class EpochLoader:
    """The rank's DataLoader, started once per epoch (or at the resume position).

    The loader draws from its own generator, seeded from (seed, epoch), never from the global
    torch RNG (a DataLoader without one takes its worker base seed from the global RNG at every
    `iter()`): a mid-epoch resume starts one more iterator than the uninterrupted run did, and
    the restored global RNG stream must not move for it.

    It holds the only reference to the running iterator, so `close()` shuts the worker
    processes down at once (CPython frees the iterator, whose destructor joins them).
    """

    def __init__(
        self,
        dataset: Dataset[Sample],
        sampler: ResumableDistributedSampler,
        *,
        batch_size: int,
        num_workers: int,
        pin_memory: bool,
        seed: int,
    ) -> None:
        self.sampler = sampler
        self.num_workers = num_workers
        self.seed = seed
        self.generator = torch.Generator()
        self.loader = DataLoader(
            dataset,
            batch_size=batch_size,
            sampler=sampler,
            num_workers=num_workers,
            pin_memory=pin_memory,
            drop_last=True,
            generator=self.generator,
            collate_fn=getattr(dataset, "collate", None),
            worker_init_fn=ignore_stop_signals if num_workers else None,
        )
        self._it: Iterator[Any] | None = None

    def start(self, epoch: int, consumed: int) -> None:
        """Begin `epoch` after `consumed` globally consumed samples (new worker processes)."""
        self.close()
        self.sampler.set_epoch(epoch, consumed)
        self.generator.manual_seed(loader_seed(self.seed, epoch))
        if not self.num_workers:
            self._it = iter(self.loader)
            return
        # Workers fork inside iter(): keep the stop signals blocked across the fork, so a
        # worker inherits them blocked until `ignore_stop_signals` runs. This process gets
        # any signal that arrived meanwhile when the mask is restored.
        previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            self._it = iter(self.loader)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)

    def next(self) -> Any:
        """The next collated batch: (inputs, labels); image inputs are uint8 pixels or, for
        device decoding, a list of encoded files (`trainer.images`)."""
        assert self._it is not None, "start() first"
        return next(self._it)

    def close(self) -> None:
        """Stop the worker processes of the current epoch, if any."""
        self._it = None
