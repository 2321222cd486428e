"""Batches on the device, the next one copied while the current one computes.

On a GPU the copy of batch k+1 (pinned host memory to the device, then the device half of the
input path: uint8 to normalised float, channels-last, or nvJPEG decoding) is queued on a side
stream when batch k is handed out, so it overlaps batch k's forward and backward instead of
stalling the compute stream (NVIDIA's Apex ImageNet example's `data_prefetcher`; the DataLoader
itself only overlaps the host side). The compute stream waits for the side stream before it
uses a batch, and each tensor is recorded on the compute stream so the caching allocator does
not hand its memory back to the side stream early.

On the CPU there is no stream: the prefetcher is a plain iterator that applies the same
transform in line, which is how the gloo tests run it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from trainer.data import EpochLoader, ResumableDistributedSampler

Sample = tuple[torch.Tensor, torch.Tensor]
Transform = Callable[[Any], torch.Tensor]


class DevicePrefetcher:
    """The rank's micro batches, on its device and ready to compute on."""

    def __init__(
        self, loader: EpochLoader, device: torch.device, transform: Transform | None = None
    ) -> None:
        self.loader = loader
        self.device = device
        self.transform = transform
        self.stream: torch.cuda.Stream | None = (
            torch.cuda.Stream(device) if device.type == "cuda" else None  # type: ignore[no-untyped-call]
        )
        self._ready: Sample | None = None

    @property
    def sampler(self) -> ResumableDistributedSampler:
        return self.loader.sampler

    def start(self, epoch: int, consumed: int) -> None:
        """Begin `epoch` after `consumed` globally consumed samples (drops a prefetched batch
        of the previous start: its samples were never consumed)."""
        self._ready = None
        self.loader.start(epoch, consumed)
        if self.stream is not None:
            self._preload()

    def next(self) -> Sample:
        if self.stream is None:
            return self._to_device(self.loader.next())
        if self._ready is None:
            raise StopIteration
        compute = torch.cuda.current_stream(self.device)
        compute.wait_stream(self.stream)
        x, y = self._ready
        x.record_stream(compute)
        y.record_stream(compute)
        self._preload()
        return x, y

    def close(self) -> None:
        self._ready = None
        self.loader.close()

    def _preload(self) -> None:
        """Queue the copy of the next batch on the side stream (None at the epoch's end)."""
        assert self.stream is not None
        try:
            batch = self.loader.next()
        except StopIteration:
            self._ready = None
            return
        with torch.cuda.stream(self.stream):
            self._ready = self._to_device(batch)

    def _to_device(self, batch: tuple[Any, torch.Tensor]) -> Sample:
        x, y = batch
        if isinstance(x, torch.Tensor):  # a list holds encoded files: the decoder reads them
            x = x.to(self.device, non_blocking=True)
        y = y.to(self.device, non_blocking=True)
        return (self.transform(x) if self.transform is not None else x), y
