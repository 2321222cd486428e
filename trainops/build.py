"""Run the real kustomize: `kustomize` when on PATH, else `kubectl kustomize`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


class KustomizeError(Exception):
    """kustomize is missing or `kustomize build` failed (the message is kustomize's own)."""


def command() -> list[str]:
    """The kustomize invocation available here, or raise KustomizeError."""
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    raise KustomizeError(
        "neither `kustomize` nor `kubectl` is on PATH: install kustomize v5"
        " (https://kubectl.docs.kubernetes.io/installation/kustomize/)"
    )


def build(directory: Path) -> str:
    """`kustomize build DIRECTORY` and return the YAML stream it prints."""
    proc = subprocess.run(
        [*command(), str(directory)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise KustomizeError(proc.stderr.strip() or f"kustomize exited with {proc.returncode}")
    return proc.stdout
