"""Bounds on everything the CLI reads, so a hostile or broken input fails fast and clearly.

A job spec is edited in pull requests by people who do not run the cluster; CI runs
`trainops validate` on it. Without bounds a 37 MB spec took 296 s and 4.8 GB, 50,000
nesting levels crashed the C YAML loader, and `jobs/x.yaml -> /dev/zero` read until
MemoryError. The limits are generous for real manifests and named here once.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

import yaml

from trainops.core.errors import InputError, Problem
from trainops.core.yaml_fast import split_documents

# The API server refuses request bodies over 3 MiB (k8s.io/apiserver
# `MaxRequestBodyBytes` default, 3 * 1024 * 1024), so no single manifest can be larger;
# a file of many manifests gets the same budget per document times a few.
MAX_REQUEST_BYTES = 3 * 1024 * 1024
# One input file: a multi-document manifest file or a CRD bundle may hold several
# objects; 16 API requests' worth is far more than any real file we read.
MAX_FILE_BYTES = 16 * MAX_REQUEST_BYTES
# Nesting of mappings and sequences. A CRD schema nests ~30 deep; PyYAML's composer
# recurses once per level and libyaml's C stack overflows in the tens of thousands.
MAX_DEPTH = 200
# Seconds one external tool run may take (kustomize build of one overlay, kubeconform).
TOOL_TIMEOUT_SECONDS = 300.0


def read_bounded(path: Path, display: str) -> bytes:
    """The bytes of a regular file of at most MAX_FILE_BYTES; else InputError naming `display`."""
    try:
        info = os.stat(path)
    except OSError as err:
        raise InputError(Problem.whole_file(display, f"cannot read file: {err.strerror}")) from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            Problem.whole_file(display, "not a regular file (a device, pipe or directory)")
        )
    if info.st_size > MAX_FILE_BYTES:
        raise InputError(Problem.whole_file(display, _too_large(info.st_size)))
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as err:
        raise InputError(Problem.whole_file(display, f"cannot read file: {err.strerror}")) from None
    if len(raw) > MAX_FILE_BYTES:  # grew while read
        raise InputError(Problem.whole_file(display, _too_large(len(raw))))
    return raw


def _too_large(size: int) -> str:
    return (
        f"file is {size:,} bytes, more than the {MAX_FILE_BYTES:,} trainops reads (the API"
        f" server takes at most {MAX_REQUEST_BYTES:,} per object): split it"
    )


def check_depth(text: str, file: str, pieces: Sequence[tuple[int, str]] | None = None) -> None:
    """Refuse YAML nesting deeper than MAX_DEPTH, found from the parser's events (iterative,
    no recursion) before a loader builds a tree out of it (PyYAML's C loader and yaml-rs both
    overflow their stack on deep enough nesting). `pieces`: `split_documents(text)`, when the
    caller has it already.

    Each document starts at depth 0, so only the documents whose cheap bound exceeds
    MAX_DEPTH are parsed, each on its own: one document full of brackets (a dashboard's JSON)
    no longer sends a whole `kustomize build` stream through the event parser. Should one of
    them not parse on its own, the whole stream is parsed as one."""
    suspects = [
        (first, piece)
        for first, piece in (pieces if pieces is not None else split_documents(text))
        if _may_nest_too_deep(piece)
    ]
    try:
        for first, piece in suspects:
            _parse_depth(piece, file, first)
    except yaml.YAMLError:
        with contextlib.suppress(yaml.YAMLError):  # the loader reports it with its position
            _parse_depth(text, file, 0)


def _parse_depth(text: str, file: str, first_line: int) -> None:
    """Raise InputError at the first collection nested past MAX_DEPTH (lines offset by
    `first_line`); YAMLError when `text` does not parse."""
    loader_class: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    depth = 0
    for event in yaml.parse(text, Loader=loader_class):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                line = event.start_mark.line + 1 + first_line if event.start_mark else None
                raise InputError(
                    Problem(
                        file,
                        line,
                        None,
                        f"YAML nests more than {MAX_DEPTH} levels deep; refusing to load it",
                    )
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _may_nest_too_deep(document: str) -> bool:
    """Whether a cheap upper bound of one document's nesting depth exceeds MAX_DEPTH. Each
    flow bracket opens at most one level, and block style needs one more column of
    indentation (spaces and `- `) at least every second level (a sequence may sit at its
    key's column): the bound is brackets + 2 x indentation + 2."""
    brackets = document.count("[") + document.count("{")
    room = (MAX_DEPTH - 2 - brackets) // 2  # the deepest indentation within the bound
    return room < 0 or re.search(rf"^[ \-?:]{{{room + 1}}}", document, re.MULTILINE) is not None


def inside(path: Path, root: Path) -> bool:
    """`path`, symlinks resolved, lies under `root` (also resolved)."""
    return path.resolve().is_relative_to(root.resolve())


def run_tool(
    argv: Sequence[str], stdin: str | None = None, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """Run an external tool (kustomize, kubeconform) in its own process group; on timeout
    kill the whole group and raise `subprocess.TimeoutExpired`.

    `subprocess.run(timeout=...)` kills only the direct child: what the tool started (a
    kustomize exec plugin or `helm`, `kubectl kustomize`'s own children) keeps running, and
    run() then waits for the output pipes that those children still hold open, for ever.
    """
    with subprocess.Popen(
        list(argv),
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own session and process group, id = its pid
    ) as proc:
        try:
            out, err = proc.communicate(stdin, timeout=timeout or TOOL_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()  # every holder of the pipes is gone: returns at once
            raise
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
