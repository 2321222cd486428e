"""The one build stage: write a rendered tree and run the real kustomize on its overlays.

`trainops build`, `trainops diff` and `trainops validate` all build through here, the way
Argo CD and Flux will: `kustomize build overlays/<cluster>`, with `kustomize` when it is on
PATH, else `kubectl kustomize`. `build_committed` is `trainops build`'s pipeline: the committed
overlays, checked to be up to date first, built and read back as objects.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from trainops.core import paths, yamlio
from trainops.core.limits import TOOL_TIMEOUT_SECONDS, run_tool
from trainops.core.manifest import Manifest
from trainops.jobspec.model import Repository
from trainops.render import render_repository, write

# Overlays are built concurrently, one `kustomize build` process per core: each is
# single-threaded and on a large repository takes most of the run (kustomize's own
# cost grows faster than linearly with the resources in an overlay).
MAX_PARALLEL_BUILDS = os.cpu_count() or 1
# Memory-backed scratch space (Linux): the rendered tree kustomize builds is written, read
# once and deleted, and on a disk file system creating and unlinking its thousands of small
# files cost more CPU than everything else validate does besides kustomize (4.2 s against
# 0.3 s for 10,200 files). Used only with room to spare, and never when TMPDIR names a place.
MEMORY_SCRATCH = Path("/dev/shm")
SCRATCH_HEADROOM_BYTES = 256 << 20
PAGE = 4096


class KustomizeError(Exception):
    """kustomize is missing or `kustomize build` failed (the message is kustomize's own)."""


class OutOfDate(Exception):
    """The committed base/, overlays/ or gitops/ differ from what the specs render."""


class OverlayFailed(Exception):
    """`kustomize build overlays/<cluster>` failed: `cluster` and kustomize's `error`."""

    def __init__(self, cluster: str, error: KustomizeError) -> None:
        super().__init__(f"kustomize build overlays/{cluster} failed:\n{error}")
        self.cluster, self.error = cluster, error


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


def scratch_parent(size: int) -> str | None:
    """Where to write a temporary tree of about `size` bytes: the memory-backed file system
    when it is there, writable and has room (with `SCRATCH_HEADROOM_BYTES` left over); None
    (the system's temporary directory) otherwise, or when TMPDIR chooses one."""
    if os.environ.get("TMPDIR") or not MEMORY_SCRATCH.is_dir():
        return None
    try:
        free = shutil.disk_usage(MEMORY_SCRATCH).free
    except OSError:
        return None
    if free < 2 * size + SCRATCH_HEADROOM_BYTES or not os.access(MEMORY_SCRATCH, os.W_OK):
        return None
    return str(MEMORY_SCRATCH)


def tree_size(files: Mapping[str, str]) -> int:
    """Bytes `files` take written out: a memory-backed file system gives each file whole pages."""
    return sum(-(-max(len(text), 1) // PAGE) * PAGE for text in files.values())


@contextlib.contextmanager
def scratch_dir(prefix: str, size: int) -> Iterator[Path]:
    """An empty temporary directory for a tree of about `size` bytes, deleted on exit."""
    with tempfile.TemporaryDirectory(prefix=prefix, dir=scratch_parent(size)) as tmp:
        yield Path(tmp)


@contextlib.contextmanager
def scratch_tree(files: Mapping[str, str], prefix: str) -> Iterator[Path]:
    """A temporary directory holding `files` (see `write_tree`), deleted on exit."""
    with scratch_dir(prefix, tree_size(files)) as tree:
        write_tree(files, tree)
        yield tree


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
    They start at the first item asked for; `started_builds` starts them at once.
    """
    with started_builds(tree, clusters, run) as builds:
        yield from builds


@contextlib.contextmanager
def started_builds(
    tree: Path,
    clusters: Sequence[str],
    run: Callable[[Path], str] = kustomize,
) -> Iterator[Iterator[tuple[str, Built]]]:
    """`build_overlays`, the builds started on entry: what the caller does before it reads
    the first (indexing the rendered files) runs while kustomize builds. On exit the builds
    not started are dropped and the running ones waited for."""
    with Builds(tree, run, len(clusters)) as builds:
        for name in clusters:
            builds.start(name)
        yield builds.results(clusters)


class Builds:
    """Overlays built while the rest of their tree is still written: `write` puts rendered
    files in the tree (a path once: a build may be reading it), `start` begins an overlay's
    build (one process per core at most), `results` hands them out in a given order. A
    context manager: on exit the builds not started are dropped and the running ones waited
    for."""

    def __init__(self, tree: Path, run: Callable[[Path], str], overlays: int) -> None:
        self.tree, self.run = tree, run
        self.written: set[str] = set()
        self.pending: dict[str, Future[Built]] = {}
        self.pool = ThreadPoolExecutor(max_workers=max(1, min(overlays, MAX_PARALLEL_BUILDS)))

    def __enter__(self) -> Builds:
        return self

    def __exit__(self, *_: object) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)

    def write(self, files: Mapping[str, str]) -> None:
        new = {rel: text for rel, text in files.items() if rel not in self.written}
        write_tree(new, self.tree)
        self.written.update(new)

    def start(self, cluster: str) -> None:
        if cluster not in self.pending:
            self.pending[cluster] = self.pool.submit(self._one, cluster)

    def _one(self, cluster: str) -> Built:
        try:
            return self.run(self.tree / paths.OVERLAYS_DIR / cluster)
        except KustomizeError as err:
            return err

    def results(self, clusters: Sequence[str]) -> Iterator[tuple[str, Built]]:
        """(cluster, build) for each of `clusters` (each started), in that order."""
        for name in clusters:
            yield name, self.pending[name].result()


def check_up_to_date(root: Path, repo: Repository) -> None:
    """Raise `OutOfDate` when the tree committed under `root` is not what `repo` renders:
    build what the clusters will sync, not a stale copy."""
    if write.check(root, render_repository(repo)):
        raise OutOfDate("rendered output is out of date: run `trainops render` first")


def build_committed(
    root: Path,
    clusters: Sequence[str],
    run: Callable[[Path], str] = kustomize,
    output: Path | None = None,
) -> list[tuple[str, list[Manifest]]]:
    """(cluster, its built objects) for each of `clusters`, from the overlays committed under
    `root` (`check_up_to_date` first); with `output`, each cluster's stream is also written to
    `output/<cluster>.yaml`.

    Raises `OverlayFailed` for the first overlay kustomize cannot build (the streams of the
    clusters before it are written all the same).
    """
    streams = list(build_overlays(root, clusters, run))
    out: list[tuple[str, list[Manifest]]] = []
    for name, stream in streams:
        if isinstance(stream, KustomizeError):
            raise OverlayFailed(name, stream)
        if output:
            output.mkdir(parents=True, exist_ok=True)
            (output / f"{name}.yaml").write_text(stream)
        file = f"{paths.OVERLAYS_DIR}/{name}"
        documents = yamlio.load_text(stream, file, as_kubernetes=True)
        out.append((name, [Manifest(d.data, file, d, cluster=name) for d in documents if d.data]))
    return out
