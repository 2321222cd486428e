"""Reading a training container's log: the kubelet's timestamps, and what a log can be
denied for, and the part of a torchrun log that says why the job failed.

torchrun (torch.distributed.run) ends a failed run with its own `ChildFailedError`
summary; the child's exception is further up. Read from torch 2.13's
`torch/distributed/elastic/multiprocessing/errors/__init__.py`: the summary's
"Root Cause (first observed failure):" block gives `rank : N (local_rank: M)` and a
`traceback :` field that is the child's error file (`TORCHELASTIC_ERROR_FILE`, written by
`@record`'s error handler) or, without one, "To enable traceback see: ...". A child that
called `init_process_group` prints its uncaught exception through torch's
`_distributed_excepthook` (`distributed_c10d.py`), every line prefixed `[rank<N>]: `.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from trainops.cluster.client import Client
from trainops.cluster.errors import ClusterError

# Enough of a log to hold a child's traceback above torchrun's summary and NCCL's
# start-up lines; a log is read once per failing container.
LOG_WINDOW_LINES = 2000
# The kubelet's `timestamps=true` prefix: RFC 3339 with nanoseconds, then one space.
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)) ")
_TRACEBACK = "Traceback (most recent call last):"
_CHILD_FAILED = "ChildFailedError"
_ROOT_CAUSE = "Root Cause (first observed failure):"
_ROOT_RANK = re.compile(r"^\s*rank\s*:\s*(\d+) \(local_rank: \d+\)")
_ROOT_TRACEBACK = "  traceback : "
_NO_TRACEBACK = "To enable traceback see"
_CHAINED = ("During handling", "The above exception")
_RANK_PREFIX = re.compile(r"^\[rank(\d+)\]: ?")


@dataclass
class Log:
    """A container's log as read, times apart."""

    pod: str
    container: str
    previous: bool
    lines: list[str]
    times: list[str] = field(default_factory=list)
    """The kubelet's time of each line ("" where the line had none)."""


def read(
    client: Client,
    namespace: str,
    pod: str,
    container: str,
    previous: bool,
    *,
    unread: list[str],
) -> Log | None:
    """The last LOG_WINDOW_LINES lines with the kubelet's timestamps; None when there is no
    log. A 403 (no `pods/log` permission) is noted in `unread`, never fatal: the diagnosis
    from the pods and events stands without it."""
    try:
        text = client.logs(namespace, pod, container, previous, LOG_WINDOW_LINES, timestamps=True)
    except ClusterError as err:
        unread.append(f"log of pod/{pod} container {container}: {err}")
        return None
    if not text:
        return None
    lines, times = [], []
    for raw in text.rstrip("\n").splitlines():
        stamp = _STAMP.match(raw)
        times.append(stamp.group(1) if stamp else "")
        lines.append(raw[stamp.end() :] if stamp else raw)
    return Log(pod, container, previous, lines, times)


def _block(lines: list[str], start: int) -> list[str]:
    """A traceback from `start` to its last line (the exception), prefixes kept."""
    prefix = _RANK_PREFIX.match(lines[start])
    tag = prefix.group(0) if prefix else ""
    out = [lines[start]]
    for line in lines[start + 1 :]:
        body = line[len(tag) :] if tag and line.startswith(tag) else None
        if tag and body is None:
            break
        text = body if body is not None else line
        out.append(line)
        # The exception line ends a traceback, unless it chains into another one.
        if text and not text.startswith((" ", "\t", _TRACEBACK, *_CHAINED)):
            break
    return out


def _root_rank(lines: list[str]) -> tuple[int | None, list[str]]:
    """The root-cause rank of torchrun's last summary, and its `traceback :` field when it
    holds the child's error file (else [])."""
    at = max((i for i, line in enumerate(lines) if line.strip() == _ROOT_CAUSE), default=None)
    if at is None:
        return None, []
    rank: int | None = None
    field_lines: list[str] = []
    for i in range(at + 1, len(lines)):
        line = lines[i]
        found = _ROOT_RANK.match(line)
        if found:
            rank = int(found.group(1))
        if line.startswith(_ROOT_TRACEBACK):
            first = line[len(_ROOT_TRACEBACK) :]
            if _NO_TRACEBACK in first:
                break
            field_lines = [first]
            for more in lines[i + 1 :]:
                if set(more.strip()) == {"="}:
                    break
                field_lines.append(more[2:] if more.startswith("  ") else more)
            break
    while field_lines and not field_lines[-1].strip():
        field_lines.pop()  # the callstack's own final newline, indented by torchrun
    return rank, field_lines


def first_failure(lines: list[str]) -> list[str] | None:
    """The failing child's first traceback in a torchrun log, or None when the log does not
    end in torchrun's ChildFailedError summary (then the tail is what to show)."""
    if not any(_CHILD_FAILED in line for line in lines[-200:]):
        return None
    rank, from_error_file = _root_rank(lines)
    if from_error_file:
        return from_error_file
    tag = f"[rank{rank}]: " if rank is not None else None
    starts = [i for i, line in enumerate(lines) if line.endswith(_TRACEBACK)]
    for i in starts:  # the root rank's own traceback (printed by torch's excepthook)
        if tag is not None and lines[i].startswith(tag):
            return _block(lines, i)
    for i in starts:  # a child that failed before init_process_group: no prefix
        body = _RANK_PREFIX.sub("", lines[i])
        if body == _TRACEBACK and not _is_torchrun_own(lines, i):
            return _block(lines, i)
    return None


def _is_torchrun_own(lines: list[str], start: int) -> bool:
    """Whether the traceback at `start` is torchrun's (it ends in ChildFailedError)."""
    return any(_CHILD_FAILED in line for line in _block(lines, start)[-1:])
