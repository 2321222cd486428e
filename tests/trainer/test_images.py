"""The uint8 image path (trainer/images.py) and the device prefetcher (trainer/prefetch.py).

The float32 path the trainer had before (decode, to float / 255, resize, normalise, all in the
worker) is written out here as the reference: the uint8 path must equal it up to rounding. The
nvJPEG decoder and the CUDA side stream need a GPU and torchvision (not on this machine): the
encoded-file path is driven with a Pillow decoder standing in for nvJPEG in the same slot, and
the stream path runs in bench/gpu_check.py on the GPU machine.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from tests.tools import require_module
from trainer.data import EpochLoader, ResumableDistributedSampler
from trainer.images import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    SYNTHETIC_NORMALIZE,
    DeviceImages,
    ImageFolder,
    SyntheticImages,
    decode_bytes,
    device_transform,
    nvjpeg_decoder,
    read_pixels,
)
from trainer.prefetch import DevicePrefetcher

# One uint8 level after normalisation by the smallest ImageNet std: what rounding may change.
LEVEL = 1 / 255 / min(IMAGENET_STD)


def fp32_reference(path: Path, side: int) -> torch.Tensor:
    """The trainer's float32 image-folder path before issue 36, (3, side, side)."""
    pixels = torch.from_numpy(read_pixels(path).copy()).permute(2, 0, 1).float() / 255.0
    pixels = F.interpolate(pixels[None], size=(side, side), mode="bilinear", align_corners=False)[0]
    mean = torch.tensor(IMAGENET_MEAN).view(3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(3, 1, 1)
    return (pixels - mean) / std


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two classes of JPEGs at several sizes (smaller and larger than 32 px)."""
    image = require_module("PIL.Image")
    root = tmp_path_factory.mktemp("images")
    gen = np.random.default_rng(0)
    for label, sizes in enumerate([[(40, 30), (32, 32)], [(64, 48), (20, 28)]]):
        (root / f"class{label}").mkdir()
        for i, (w, h) in enumerate(sizes):
            smooth = gen.integers(0, 256, (h // 4 + 1, w // 4 + 1, 3)).astype(np.uint8)
            big = np.kron(smooth, np.ones((4, 4, 1), dtype=np.uint8))[:h, :w]
            image.fromarray(big).save(root / f"class{label}" / f"{i}.jpg", quality=90)
    return root


def pil_decode(files: list[torch.Tensor]) -> list[torch.Tensor]:
    """Stands in for nvJPEG: encoded files in, (3, H, W) uint8 out (the Pillow decoder nvJPEG
    falls back to for a file it refuses)."""
    return [decode_bytes(data) for data in files]


def test_workers_hand_over_uint8_and_the_device_half_matches_the_fp32_path(folder: Path) -> None:
    data = ImageFolder(str(folder), 32)
    pixels, labels = data.collate([data[i] for i in range(len(data))])
    assert isinstance(pixels, torch.Tensor)
    assert pixels.dtype == torch.uint8 and pixels.shape == (4, 32, 32, 3)
    out = DeviceImages(data.normalize, channels_last=True, side=32)(pixels)
    reference = torch.stack([fp32_reference(path, 32) for path, _ in data.items])
    assert out.dtype == torch.float32 and out.shape == (4, 3, 32, 32)
    assert out.is_contiguous(memory_format=torch.channels_last)
    diff = (out - reference).abs().max().item()
    assert diff <= LEVEL * 1.01, diff  # the uint8 resize rounds to whole levels
    assert labels.tolist() == [0, 0, 1, 1]
    plain = DeviceImages(data.normalize, channels_last=False, side=32)(pixels)
    assert plain.is_contiguous() and torch.equal(plain, out)


def test_encoded_files_decoded_in_the_device_slot_match_the_fp32_path(folder: Path) -> None:
    data = ImageFolder(str(folder), 32, encoded=True)
    assert data.all_jpeg()
    files, _ = data.collate([data[i] for i in range(len(data))])
    assert isinstance(files, list) and files[0].dtype == torch.uint8 and files[0].dim() == 1
    transform = device_transform(data, True, pil_decode)
    assert transform is not None and transform.decode is pil_decode
    out = transform(files)
    reference = torch.stack([fp32_reference(path, 32) for path, _ in data.items])
    # Decoded and resized in float as before: only the arithmetic's order differs.
    assert (out - reference).abs().max().item() < 1e-4


def test_synthetic_images_are_uint8_and_normalise_to_their_definition() -> None:
    data = SyntheticImages(16, 4, 8, seed=3)
    x, y = data[5]
    assert x.dtype == torch.uint8 and x.shape == (8, 8, 3) and 0 <= int(y) < 4
    assert torch.equal(SyntheticImages(16, 4, 8, seed=3)[5][0], x)  # index and seed alone
    assert not torch.equal(data[6][0], x)
    batch = torch.stack([data[i][0] for i in range(4)])
    out = DeviceImages(SYNTHETIC_NORMALIZE, channels_last=False, side=8)(batch)
    exact = (batch.permute(0, 3, 1, 2).double() - 128) / 32
    assert (out.double() - exact).abs().max().item() < 1e-6
    # Learnable: a sample lies nearer its own class prototype than any other.
    protos = torch.from_numpy(data.base).float() + 32
    for i in range(8):
        x, y = data[i]
        dist = ((protos - x.float()) ** 2).flatten(1).sum(1)
        assert int(dist.argmin()) == int(y)


def test_the_image_folder_picks_device_decoding_only_for_all_jpeg_folders(
    folder: Path, tmp_path: Path
) -> None:
    assert nvjpeg_decoder(torch.device("cpu")) is None  # CPU: Pillow in the workers
    mixed = tmp_path / "mixed"
    (mixed / "a").mkdir(parents=True)
    np.save(mixed / "a" / "x.npy", np.zeros((8, 8, 3), np.uint8))
    assert not ImageFolder(str(mixed), 8).all_jpeg()
    assert device_transform(object(), True, pil_decode) is None  # tokens: copied as they are


def test_prefetcher_on_cpu_is_a_plain_iterator_over_transformed_batches(folder: Path) -> None:
    data = ImageFolder(str(folder), 32)
    sampler = ResumableDistributedSampler(len(data), 0, 1, seed=1)
    loader = EpochLoader(data, sampler, batch_size=2, num_workers=1, pin_memory=False, seed=1)
    transform = device_transform(data, True, None)
    prefetcher = DevicePrefetcher(loader, torch.device("cpu"), transform)
    assert prefetcher.stream is None
    prefetcher.start(0, 0)
    got = [prefetcher.next() for _ in range(2)]
    with pytest.raises(StopIteration):
        prefetcher.next()
    prefetcher.close()
    sampler.set_epoch(0, 0)
    order = list(sampler)
    for k, (x, y) in enumerate(got):
        idx = order[2 * k : 2 * k + 2]
        expected = torch.stack([fp32_reference(data.items[i][0], 32) for i in idx])
        assert x.is_contiguous(memory_format=torch.channels_last)
        assert (x - expected).abs().max().item() <= LEVEL * 1.01
        assert y.tolist() == [data.items[i][1] for i in idx]


def test_the_fallback_decoder_reads_what_nvjpeg_refuses(tmp_path: Path) -> None:
    """ImageNet's train set holds CMYK JPEGs and a PNG named `.JPEG`: nvJPEG refuses a batch
    with one of them; each such file is decoded by Pillow (`decode_bytes`) instead."""
    image = require_module("PIL.Image")
    rgb = np.random.default_rng(1).integers(0, 256, (8, 12, 3)).astype(np.uint8)
    image.fromarray(rgb).convert("CMYK").save(tmp_path / "cmyk.JPEG", quality=95)
    image.fromarray(rgb).save(tmp_path / "png-inside.JPEG", format="PNG")
    for name in ("cmyk.JPEG", "png-inside.JPEG"):
        data = torch.from_numpy(np.fromfile(tmp_path / name, dtype=np.uint8))
        out = decode_bytes(data)
        assert out.shape == (3, 8, 12) and out.dtype == torch.uint8
    png = decode_bytes(torch.from_numpy(np.fromfile(tmp_path / "png-inside.JPEG", np.uint8)))
    assert torch.equal(png, torch.from_numpy(rgb).permute(2, 0, 1))  # lossless
