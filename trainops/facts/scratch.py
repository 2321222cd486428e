"""Where programs write when the root filesystem is read-only (docs/security.md).

Every rendered pod mounts an emptyDir at `/tmp` (tempfile, torchrun's logs, Open MPI's
session directory) and one at `HOME_DIR`; HOME and XDG_CACHE_HOME point at the latter, and
every cache the trainer's libraries keep derives from them: torch hub and torch_extensions
(`$XDG_CACHE_HOME/torch...`), HF_HOME (`$XDG_CACHE_HOME/huggingface`), Triton
(`$HOME/.triton/cache`), matplotlib (`$HOME/.config/matplotlib`). The spec refuses extra
volumes and mounts that would collide with them.
"""

from __future__ import annotations

TMP_VOLUME = "tmp"
TMP_DIR = "/tmp"
HOME_VOLUME = "home"
HOME_DIR = "/home/trainops"
SCRATCH_VOLUMES = ((TMP_VOLUME, TMP_DIR), (HOME_VOLUME, HOME_DIR))
"""(volume name, mount path) of the emptyDirs, in render order."""
SCRATCH_ENV = (("HOME", HOME_DIR), ("XDG_CACHE_HOME", f"{HOME_DIR}/.cache"))
"""First in every container's env; a job's env of the same name wins."""

# Environment variables the training stack writes under, and what writes there. A directory
# they name on a read-only mount makes the first write fail (`OSError: [Errno 30] Read-only
# file system`): at import for most, at the first download, compile or cache fill for others.
# huggingface_hub constants.py (HF_HOME, HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, HF_XET_CACHE,
# HF_ASSETS_CACHE), transformers utils/hub.py (TRANSFORMERS_CACHE), datasets config.py
# (HF_DATASETS_CACHE), torch hub.py (TORCH_HOME) and utils/cpp_extension.py
# (TORCH_EXTENSIONS_DIR), Triton runtime/cache.py (TRITON_CACHE_DIR, TRITON_HOME), torch
# _inductor/runtime/cache_dir_utils.py (TORCHINDUCTOR_CACHE_DIR), the XDG Base Directory spec
# (XDG_CACHE_HOME), matplotlib (MPLCONFIGDIR), Python's tempfile (TMPDIR), numba (NUMBA_CACHE_DIR),
# Weights & Biases (WANDB_DIR, WANDB_CACHE_DIR), PyTorch Lightning/`torch.compile` users'
# HOME (`~/.cache`, `~/.triton`, `~/.config`).
CACHE_ENV: dict[str, str] = {
    "HF_HOME": "Hugging Face's hub cache, token and datasets cache",
    "HF_HUB_CACHE": "Hugging Face's model downloads",
    "HUGGINGFACE_HUB_CACHE": "Hugging Face's model downloads",
    "TRANSFORMERS_CACHE": "transformers' model downloads",
    "HF_DATASETS_CACHE": "datasets' Arrow cache",
    "HF_XET_CACHE": "Hugging Face's Xet chunk cache",
    "HF_ASSETS_CACHE": "Hugging Face's assets cache",
    "TORCH_HOME": "torch.hub's downloads",
    "TORCH_EXTENSIONS_DIR": "JIT-built C++/CUDA extensions (DeepSpeed's ops)",
    "TRITON_CACHE_DIR": "Triton's compiled kernels",
    "TRITON_HOME": "Triton's cache and dumps",
    "TORCHINDUCTOR_CACHE_DIR": "torch.compile's (Inductor's) compiled code",
    "XDG_CACHE_HOME": "every library's cache (torch, Hugging Face, pip)",
    "MPLCONFIGDIR": "matplotlib's font cache",
    "TMPDIR": "Python's tempfile and torchrun's logs",
    "NUMBA_CACHE_DIR": "numba's compiled functions",
    "WANDB_DIR": "Weights & Biases' run files",
    "WANDB_CACHE_DIR": "Weights & Biases' artifact cache",
    "HOME": "caches and configs under ~ (Triton's ~/.triton, ~/.cache, ~/.config)",
}
# With these set to 1 the hub caches are only read (models fetched into them beforehand): a
# read-only, pre-filled model cache is then the point.
OFFLINE_ENV = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
READ_ONLY_WHEN_OFFLINE = frozenset(
    {"HF_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE"}
)
