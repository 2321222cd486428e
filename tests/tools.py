"""Helpers for tests that drive real tools, and the one place a test may skip.

A test that cannot run here (a tool, a Python package or `../shared` is missing) calls
`skip_or_fail`, directly or through `require_tool` / `require_module` / `require_shared`:
it skips on a developer machine and FAILS under CI=true, so CI never reports green for a
test that did not run. `tests/test_no_raw_skips.py` fails when a test skips any other way.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

from tests import processes
from trainops import build

REPO = Path(__file__).resolve().parent.parent
UPSTREAM = REPO.parent / "shared" / "upstream"
SEEDS = REPO.parent / "shared" / "seeds"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def find_tool(name: str) -> str | None:
    """`name` from this interpreter's bin directory (the venv's console scripts), else PATH."""
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return str(beside)
    return shutil.which(name)


def skip_or_fail(reason: str, *, required: bool | None = None) -> NoReturn:
    """Skip the calling test (or module), or fail it where it is `required` (default: CI=true).

    Works at module level too (collection), so a module needing a package can call it there.
    """
    if in_ci() if required is None else required:
        pytest.fail(f"{reason}; required under CI=true", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def require_tool(name: str) -> str:
    """Path of `name`; skip the test when it is missing, but fail under CI=true."""
    path = find_tool(name)
    if path is None:
        skip_or_fail(f"`{name}` is not on PATH")
    return path


def require_kustomize() -> list[str]:
    """The kustomize invocation the project uses (`kustomize build` or `kubectl kustomize`)."""
    try:
        return build.kustomize_command()
    except build.KustomizeError as err:
        skip_or_fail(str(err))


def require_module(name: str) -> ModuleType:
    """Import `name`; skip when it is not installed, but fail under CI=true."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        skip_or_fail(f"Python package `{name}` is not installed ({err})")


def shared_required() -> bool:
    """Whether tests must find `../shared` (the seeds and upstream CRDs beside the checkout).

    It is there for this project's CI (`.ci/run`), so under CI=true a missing file fails the
    test. The GitHub-hosted workflow checks out the repository alone and says so with
    TRAINOPS_WITHOUT_SHARED=true: there those tests skip, naming what is missing.
    """
    return in_ci() and os.environ.get("TRAINOPS_WITHOUT_SHARED", "").lower() != "true"


def require_shared(path: Path) -> Path:
    """`path` under `../shared`; skip when absent, fail where `shared_required()`."""
    if not path.exists():
        skip_or_fail(f"{path} is not present", required=shared_required())
    return path


def require_upstream() -> Path:
    """`../shared/upstream` (upstream CRDs and example manifests)."""
    return require_shared(UPSTREAM)


INPUTS = ("jobs", "clusters", "trainops.yaml")
"""What a trainops repository's authors write (the rest is rendered)."""


def add_monitoring(profile: Path, settings: str) -> None:
    """Add `settings` (lines indented two spaces, or a `monitoring:` block) to the profile's
    `monitoring:` block, making one if it has none (a second `monitoring:` key is refused)."""
    lines = settings.strip("\n").splitlines()
    if lines and lines[0].strip() == "monitoring:":
        lines = lines[1:]
    body = "".join(f"{line}\n" for line in lines)
    text = profile.read_text()
    if "\nmonitoring:\n" in text:
        text = text.replace("\nmonitoring:\n", f"\nmonitoring:\n{body}", 1)
    else:
        text = text.rstrip("\n") + f"\nmonitoring:\n{body}"
    profile.write_text(text)


def copy_inputs(source: Path, dest: Path, names: tuple[str, ...] = INPUTS) -> Path:
    """Copy a repository's inputs (by default jobs, clusters, trainops.yaml) into `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        src = source / name
        if src.is_dir():
            shutil.copytree(src, dest / name)
        elif src.is_file():
            shutil.copy(src, dest / name)
    return dest


def write_file(directory: Path, name: str, text: str | bytes) -> Path:
    """`directory/name` holding `text` (bytes as they are)."""
    path = directory / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# A CLI run that takes longer is hung: it fails, and nothing it started outlives it.
CLI_TIMEOUT = 900.0


def trainops(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real CLI as a user would, in this process: `trainops --root ROOT *args` from
    the repository root, its exit code, stdout and stderr as `python -m trainops` gives them
    (a bug's traceback on stderr and exit code 1; argparse's usage errors and exit code 2).

    A fresh interpreter per call cost each of hundreds of CLI tests 0.4 s of imports and start
    (issue 39). `trainops_process` starts one, for a test about the process itself."""
    return cli("--root", str(root), *args)


def cli(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """`trainops *argv` run in `cwd`, in this process (see `trainops`)."""
    from trainops.cli import main  # noqa: PLC0415 (the CLI's imports stay out of conftest)

    out, err = io.StringIO(), io.StringIO()
    with contextlib.chdir(cwd):
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    code = main(list(argv))
                except SystemExit as stop:
                    code = _exit_code(stop.code)
                except Exception:  # what the interpreter does with an uncaught exception
                    traceback.print_exc()
                    code = 1
        finally:
            # The loader freezes what exists when it finishes (`yamlio.gc_paused`): hand the
            # heap back to the collector, as a process's exit would.
            gc.unfreeze()
    return subprocess.CompletedProcess(["trainops", *argv], code, out.getvalue(), err.getvalue())


def _exit_code(code: object) -> int:
    """The exit status of `sys.exit(code)`: a message is printed and exits 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def trainops_process(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a fresh `python -m trainops` process, as a user would."""
    argv = [sys.executable, "-m", "trainops", "--root", str(root), *args]
    return processes.run(argv, timeout=CLI_TIMEOUT, text=True, cwd=REPO)


def session_scratch(prefix: str) -> Path:
    """A scratch directory kept for the test session (a cached rendering several tests read)
    and removed when the process ends: nothing a test makes outlives the suite."""
    scratch = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    return scratch


def replace_once(path: Path, old: str, new: str) -> None:
    """Edit a test's copy of a file: the first `old` becomes `new` (which must be there)."""
    text = path.read_text()
    assert old in text, f"fixture text {old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of the first line of `path` holding `needle`."""
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under root (relative path -> bytes)."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


MERMAID_JS = REPO / ".tools" / "mermaid" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
"""The `mermaid` npm package `make setup` installs (pinned) into the gitignored `.tools/`."""


def require_mermaid() -> Path:
    """mermaid.min.js from `.tools/`; skip when missing, fail under CI=true."""
    if not MERMAID_JS.is_file():
        skip_or_fail(f"{MERMAID_JS} is missing: run `make setup` (npm install mermaid)")
    return MERMAID_JS


def require_chromium() -> str:
    """Debian's headless Chromium (`apt-get install chromium`); skip/fail when missing."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = find_tool(name)
        if path is not None:
            return path
    skip_or_fail("`chromium` is not on PATH: `apt-get install -y chromium` (make setup)")
