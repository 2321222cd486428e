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
