"""The one build stage: write a rendered tree and run the real kustomize on its overlays.

`trainops build`, `trainops diff` and `trainops validate` all build through here, the way
Argo CD and Flux will: `kustomize build overlays/<cluster>`, with `kustomize` when it is on
PATH, else `kubectl kustomize`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from trainops.core import paths
from trainops.core.limits import TOOL_TIMEOUT_SECONDS, run_tool

# Overlays are built concurrently, one `kustomize build` process per core: each is
# single-threaded and on a large repository takes most of the run (kustomize's own
# cost grows faster than linearly with the resources in an overlay).
MAX_PARALLEL_BUILDS = os.cpu_count() or 1


class KustomizeError(Exception):
    """kustomize is missing or `kustomize build` failed (the message is kustomize's own)."""


def kustomize_command() -> list[str]:
    """The kustomize invocation available here, or raise KustomizeError."""
    if shutil.which("kustomize"):
        return ["kustomize", "build"]
    if shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    raise KustomizeError(
        "neither `kustomize` nor `kubectl` is on PATH: install kustomize v5"
        " (https://kubectl.docs.kubernetes.io/installation/kustomize/)"
    )


def kustomize(directory: Path) -> str:
    """`kustomize build DIRECTORY` and return the YAML stream it prints."""
    try:
        proc = run_tool([*kustomize_command(), str(directory)])
    except subprocess.TimeoutExpired:
        raise KustomizeError(
            f"kustomize build {directory.name} timed out after {TOOL_TIMEOUT_SECONDS:g}s"
        ) from None
    if proc.returncode != 0:
        raise KustomizeError(proc.stderr.strip() or f"kustomize exited with {proc.returncode}")
    return proc.stdout


def write_tree(files: Mapping[str, str], dest: Path) -> None:
    """Write rendered files (repository-relative path -> text) under `dest`."""
    for rel, text in files.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def overlays_in(tree: Path) -> list[str]:
    """The clusters with an overlay under `tree`, by name."""
    root = tree / paths.OVERLAYS_DIR
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "kustomization.yaml").is_file())


Built = str | KustomizeError
"""One overlay's build: the YAML stream, or why kustomize failed."""


def build_overlays(
    tree: Path,
    clusters: Sequence[str],
    run: Callable[[Path], str] = kustomize,
) -> Iterator[tuple[str, Built]]:
    """(cluster, build) for each of `clusters`, in that order.

    The builds start together (up to one per core) and are handed out in order, so the
    caller works on the first while the others still build, and nothing depends on timing.
    """

    def one(name: str) -> Built:
        try:
            return run(tree / paths.OVERLAYS_DIR / name)
        except KustomizeError as err:
            return err

    workers = max(1, min(len(clusters), MAX_PARALLEL_BUILDS))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        pending = [pool.submit(one, name) for name in clusters]
        for name, future in zip(clusters, pending, strict=True):
            yield name, future.result()
