"""Image inputs as the fast trainers feed them: uint8 from the workers, float on the device.

A DataLoader worker hands over each image as uint8 pixels, height x width x 3 (150 KB at 224 px
against 600 KB as float32), or, where the device decodes JPEG itself, as the file's bytes. The
device side (`DeviceImages`, run by `trainer.prefetch` on a side stream) converts to float,
normalises with the data set's mean and std and lays the batch out channels-last: the batch
(N, H, W, 3) seen as (N, 3, H, W) *is* channels-last, so that layout costs no copy.

The result equals the float32 path that normalised on the CPU (decode, to float / 255, resize,
normalise) up to rounding: the uint8 resize rounds to whole levels (at most 1/255 before
normalisation), and the float arithmetic is reordered (tests/trainer/test_images.py).

JPEG decoding: on a CUDA device with torchvision's `decode_jpeg` importable (nvJPEG), workers
only read files and the device decodes whole batches; everywhere else the workers decode with
Pillow (libjpeg-turbo inside). torchvision is optional: the PyPI build does not import beside
torch 2.13 on the development machines, so the nvJPEG path runs only on a GPU machine whose
torch has a matching torchvision (`nvjpeg_decoder`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F
from torch.utils.data import Dataset

from trainer.errors import ConfigError

# Per-channel ImageNet statistics (torchvision's reference recipes) for image-folder inputs.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
# Synthetic pixels: level 128 is 0.0 and 32 levels are 1.0 after normalisation; prototypes
# (standard normal) are clipped to +-3 (levels 32..224) and uniform noise of 64 levels
# (std 0.58) is added, so no sum leaves 0..255 and no clipping is needed per sample.
SYNTHETIC_ZERO = 128
SYNTHETIC_UNIT = 32
SYNTHETIC_NOISE_LEVELS = 64
JPEG_SUFFIXES = frozenset({".jpg", ".jpeg"})

Sample = tuple[torch.Tensor, torch.Tensor]
Decoder = Callable[[list[torch.Tensor]], list[torch.Tensor]]


@dataclass(frozen=True)
class Normalize:
    """x = (pixel / 255 - mean) / std per channel, as one multiply and one subtract."""

    mean: tuple[float, float, float]
    std: tuple[float, float, float]

    def factors(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """(scale, shift), shaped (1, 3, 1, 1) on `device`: x = pixel * scale - shift."""
        scale = [1.0 / (255.0 * s) for s in self.std]
        shift = [m / s for m, s in zip(self.mean, self.std, strict=True)]
        return (
            torch.tensor(scale).view(1, 3, 1, 1).to(device),
            torch.tensor(shift).view(1, 3, 1, 1).to(device),
        )

    def __call__(
        self, pixels: torch.Tensor, factors: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> torch.Tensor:
        """`pixels`: (N, 3, H, W) in levels 0..255 (uint8 or float, any layout); float32 out
        in the same layout (a float input is overwritten)."""
        scale, shift = factors if factors is not None else self.factors(pixels.device)
        x = pixels if pixels.dtype == torch.float32 else pixels.float()
        return x.mul_(scale).sub_(shift)


SYNTHETIC_NORMALIZE = Normalize((SYNTHETIC_ZERO / 255,) * 3, (SYNTHETIC_UNIT / 255,) * 3)
IMAGENET_NORMALIZE = Normalize(IMAGENET_MEAN, IMAGENET_STD)


class SyntheticImages(Dataset[Sample]):
    """Class prototypes plus per-sample noise, as uint8 (H, W, 3): image i has label
    hash(i) % classes. Every sample comes from its index and the seed alone (PCG64 seeded by
    both), so any rank, worker or restarted process makes the same one."""

    normalize = SYNTHETIC_NORMALIZE

    def __init__(self, size: int, num_classes: int, side: int, seed: int) -> None:
        self.size = size
        self.num_classes = num_classes
        self.seed = seed
        self.side = side
        gen = torch.Generator().manual_seed(seed)
        proto = torch.randn(num_classes, side, side, 3, generator=gen).clamp_(-3, 3)
        levels = (proto * SYNTHETIC_UNIT + SYNTHETIC_ZERO).round_()  # 32..224
        # The prototype less half the noise span (0..192): + noise 0..63 stays in uint8.
        self.base = (levels - SYNTHETIC_NOISE_LEVELS // 2).to(torch.uint8).numpy()

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int) -> Sample:
        rng = np.random.Generator(np.random.PCG64(self.seed * 1_000_003 + index))
        label = int(rng.integers(self.num_classes))
        noise = np.frombuffer(rng.bytes(self.base[label].size), dtype=np.uint8)
        pixels = self.base[label] + (noise.reshape(self.base[label].shape) >> 2)  # + 0..63
        return torch.from_numpy(pixels), torch.tensor(label)


def read_pixels(path: Path) -> np.ndarray:
    """An image file as uint8 (H, W, 3): `.npy` always, other formats with Pillow."""
    if path.suffix == ".npy":
        return np.array(np.load(path), dtype=np.uint8)  # writable, for torch.from_numpy
    try:
        from PIL import Image
    except ImportError as exc:
        raise ConfigError(f"{path}: only .npy images can be read without Pillow") from exc
    with Image.open(path) as img:
        # One copy out of Pillow (np.array), none for RGB files: decoding is most of the cost.
        return np.array(img if img.mode == "RGB" else img.convert("RGB"), dtype=np.uint8)


def resize_levels(pixels: torch.Tensor, side: int) -> torch.Tensor:
    """(3, H, W) or (N, 3, H, W) pixels resized to side x side, bilinear without antialiasing
    (what the float path did); uint8 stays uint8 (rounded), float stays float."""
    if pixels.shape[-2:] == (side, side):
        return pixels
    batch = pixels if pixels.dim() == 4 else pixels[None]
    out = F.interpolate(batch, size=(side, side), mode="bilinear", align_corners=False)
    return out if pixels.dim() == 4 else out[0]


class ImageFolder(Dataset[Sample]):
    """`root/<class>/<image>`: classes are the sorted sub-directory names.

    `encoded=False`: each image decoded here (Pillow, or `.npy` H x W x 3 uint8), resized to
    `side` in uint8, returned as (side, side, 3). `encoded=True` (all files JPEG, a device
    decoder present): the file's bytes, decoded and resized on the device (`DeviceImages`).
    """

    normalize = IMAGENET_NORMALIZE

    def __init__(self, root: str, side: int, encoded: bool = False) -> None:
        base = Path(root)
        if not base.is_dir():
            raise ConfigError(f"--data-path {root}: not a directory of class folders")
        classes = sorted(p.name for p in base.iterdir() if p.is_dir())
        if not classes:
            raise ConfigError(f"--data-path {root}: no class sub-directories")
        self.items = [
            (path, label)
            for label, name in enumerate(classes)
            for path in sorted((base / name).iterdir())
            if path.is_file()
        ]
        if not self.items:
            raise ConfigError(f"--data-path {root}: class folders hold no files")
        self.num_classes = len(classes)
        self.side = side
        self.encoded = encoded

    def all_jpeg(self) -> bool:
        """Whether every file is a JPEG (by name): only then can the device decode them."""
        return all(path.suffix.lower() in JPEG_SUFFIXES for path, _ in self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> Sample:
        path, label = self.items[index]
        if self.encoded:
            data = np.fromfile(path, dtype=np.uint8)
            return torch.from_numpy(data), torch.tensor(label)
        chw = torch.from_numpy(read_pixels(path)).permute(2, 0, 1)
        pixels = resize_levels(chw, self.side).permute(1, 2, 0).contiguous()
        return pixels, torch.tensor(label)

    def collate(
        self, batch: Sequence[Sample]
    ) -> tuple[list[torch.Tensor] | torch.Tensor, torch.Tensor]:
        """Encoded files differ in length: a list, not a stacked tensor."""
        labels = torch.stack([y for _, y in batch])
        if self.encoded:
            return [x for x, _ in batch], labels
        return torch.stack([x for x, _ in batch]), labels


def decode_bytes(data: torch.Tensor) -> torch.Tensor:
    """One encoded image (a uint8 tensor of the file's bytes) decoded by Pillow, (3, H, W)."""
    from PIL import Image

    with Image.open(io.BytesIO(data.numpy().tobytes())) as img:
        pixels = np.array(img if img.mode == "RGB" else img.convert("RGB"), dtype=np.uint8)
    return torch.from_numpy(pixels).permute(2, 0, 1)


def nvjpeg_decoder(device: torch.device) -> Decoder | None:
    """torchvision's batched `decode_jpeg` on `device` (nvJPEG) when it can run here, else None
    (CPU decoding in the workers). A batch nvJPEG refuses (ImageNet holds a few CMYK JPEGs and
    a PNG named `.JPEG`) is decoded file by file, and a file it refuses by Pillow."""
    if device.type != "cuda":
        return None
    try:
        from torchvision.io import ImageReadMode, decode_jpeg  # type: ignore[import-not-found]
    except Exception:  # a torchvision built for another torch fails in several ways
        return None

    def one(data: torch.Tensor) -> torch.Tensor:
        try:
            image: torch.Tensor = decode_jpeg(data, mode=ImageReadMode.RGB, device=device)
        except RuntimeError:
            image = decode_bytes(data).to(device)
        return image

    def decode(files: list[torch.Tensor]) -> list[torch.Tensor]:
        try:
            return list(decode_jpeg(files, mode=ImageReadMode.RGB, device=device))
        except RuntimeError:
            return [one(data) for data in files]

    return decode


@dataclass
class DeviceImages:
    """The device half of the image path: a worker batch to normalised float (N, 3, H, W)."""

    normalize: Normalize
    channels_last: bool
    side: int
    decode: Decoder | None = None
    """Decodes a list of encoded files (host memory) on the device (nvJPEG); None: pixels."""
    _factors: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = field(
        default_factory=dict, repr=False
    )

    def __call__(self, pixels: torch.Tensor | list[torch.Tensor]) -> torch.Tensor:
        if isinstance(pixels, list):
            assert self.decode is not None, "encoded images need a device decoder"
            images = [resize_levels(img.float(), self.side) for img in self.decode(pixels)]
            batch = torch.stack(images)
        else:  # (N, H, W, 3) uint8: viewed as (N, 3, H, W) it is channels-last already
            batch = pixels.permute(0, 3, 1, 2)
        device = batch.device
        if device not in self._factors:  # once: no host-to-device copy per batch
            self._factors[device] = self.normalize.factors(device)
        x = self.normalize(batch, self._factors[device])
        layout = torch.channels_last if self.channels_last else torch.contiguous_format
        return x.contiguous(memory_format=layout)


def device_transform(
    dataset: object, channels_last: bool, decoder: Decoder | None
) -> DeviceImages | None:
    """The device half for an image data set (None for tokens: they are copied as they are)."""
    if not isinstance(dataset, SyntheticImages | ImageFolder):
        return None
    encoded = isinstance(dataset, ImageFolder) and dataset.encoded
    return DeviceImages(
        dataset.normalize, channels_last, dataset.side, decoder if encoded else None
    )
