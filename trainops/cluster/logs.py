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
CHILD_FAILED = "ChildFailedError"
_ROOT_CAUSE = "Root Cause (first observed failure):"
_ROOT_RANK = re.compile(r"^\s*rank\s*:\s*(\d+) \(local_rank: (\d+)\)")
# `  exitcode  : -9 (pid: 7)`: the summary's fields, name padded to the colon.
_FIELD = re.compile(r"^  (\w+)\s*: ?(.*?)\s*$")
_EXITCODE = re.compile(r"^(-?\d+)")
SIGKILL = 9
_NO_TRACEBACK = "To enable traceback see"
_CHAINED = ("During handling", "The above exception")
# The per-rank prefix of a line: torch's excepthook (`[rank1]: `), Open MPI's `mpirun
# --tag-output` (`[1,0]<stderr>:`, job and rank; the MPI Operator's launcher log) and
# horovodrun's (`[0]<stderr>:`).
_RANK_PREFIX = re.compile(r"^(?:\[rank(\d+)\]: ?|\[\d+(?:,\d+)?\]<std(?:err|out)>:)")
# Lines a program may print after the traceback it dies of (atexit hooks, torch's "destroy
# process group" warning, NCCL's abort notices) before the log ends.
TRACEBACK_TRAILER = 30
# An exception message's further lines read (a message longer than that is cut there), and the
# lines that end it: another program's log record (glog `E1128 ...`, `[W ...]`, a timestamp,
# torchrun's `****` banner and `====` summary).
_MESSAGE_LINES = 10
_RECORD = re.compile(r"^(?:[EWIDF]\d{4} |\[|\d{4}-\d\d-\d\d|\*{5}|={5})")


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


def _tag(line: str) -> str:
    """The rank prefix before every line (`[rank<N>]: `, `[1,0]<stderr>:`), or ""."""
    prefix = _RANK_PREFIX.match(line)
    return prefix.group(0) if prefix else ""


def _body(line: str, tag: str) -> str | None:
    """`line` without the traceback's prefix; None when the line is not the same rank's
    (another rank's or torchrun's own line ends a prefixed traceback)."""
    if not tag:
        return line
    if line.startswith(tag):
        return line[len(tag) :]
    # torch prefixes the lines of a message, not the empty lines Python puts around the
    # "During handling ..." line of a chain.
    return "" if line in ("", tag.rstrip()) else None


def _exception_end(lines: list[str], start: int, tag: str) -> int | None:
    """The index of the exception line that ends the traceback starting at `start`."""
    for i in range(start + 1, len(lines)):
        text = _body(lines[i], tag)
        if text is None:
            return None
        # Frames are indented; the first line that is not, ends the traceback.
        if text and not text.startswith((" ", "\t")) and text != _TRACEBACK:
            return i
    return None


def _chained_next(lines: list[str], end: int, tag: str) -> int | None:
    """Where the next traceback of a chain starts after the exception line at `end`, as
    Python prints a chain: a blank line, "The above exception was the direct cause of the
    following exception:" (`raise ... from`) or "During handling of the above exception,
    another exception occurred:", a blank line, then the traceback."""
    seen: list[str] = []
    for i in range(end + 1, min(end + 5, len(lines))):
        text = _body(lines[i], tag)
        if text is None:
            return None
        if text.strip() == "":
            continue
        seen.append(text)
        if text == _TRACEBACK:
            return i if len(seen) == 2 and seen[0].startswith(_CHAINED) else None
    return None


def _chain(lines: list[str], start: int) -> list[str]:
    """A traceback as Python prints it, from `start` through every exception chained to it
    ("During handling ...", "The above exception was the direct cause ..."): the last line
    is the exception that ended the program. Prefixes kept."""
    tag = _tag(lines[start])
    at = start
    while True:
        end = _exception_end(lines, at, tag)
        if end is None:
            return lines[start:]
        end = _message_end(lines, end, tag)
        following = _chained_next(lines, end, tag)
        if following is None:
            return lines[start : end + 1]
        at = following


def _message_end(lines: list[str], end: int, tag: str) -> int:
    """The last line of an exception's message that goes on over several lines (transformers'
    `OSError: We couldn't connect ...` then `Check your internet connection ...`): the lines
    after it up to a blank one, unless one reads as another program's log record."""
    for i in range(end + 1, min(end + 1 + _MESSAGE_LINES, len(lines))):
        text = _body(lines[i], tag)
        if not text or text.strip() == "" or text == _TRACEBACK or _RECORD.match(text):
            return i - 1
        if text.startswith(_CHAINED):
            return i - 1
        end = i
    return end


def _chain_starts(lines: list[str]) -> list[int]:
    """The first traceback of every chain (not the tracebacks chained to another)."""
    starts = []
    for i, line in enumerate(lines):
        if not line.endswith(_TRACEBACK):
            continue
        tag = _tag(line)
        before = [b for j in range(max(0, i - 3), i) if (b := _body(lines[j], tag))]
        if not (before and before[-1].strip().startswith(_CHAINED)):
            starts.append(i)
    return starts


def exception_of(chain: list[str]) -> str:
    """The exception that ended a traceback chain, its first line, without the rank prefix:
    `OSError: Incorrect path_or_model_id: ...`."""
    bodies = [line[len(_tag(line)) :] for line in chain]
    at = len(bodies) - 1
    # Back over a message's further lines to the first unindented line after the frames.
    while at > 0 and not bodies[at - 1].startswith((" ", "\t", _TRACEBACK)):
        at -= 1
    return bodies[at].strip() if bodies else ""


@dataclass(frozen=True)
class RootCause:
    """The "Root Cause (first observed failure)" block of torchrun's last summary."""

    rank: int | None
    local_rank: int | None
    host: str
    exitcode: int | None
    """The child's exit code; negative: killed by that signal (-9: SIGKILL)."""
    traceback: str
    """The field's first line: "Signal 9 (SIGKILL) received by PID 7", the child's error
    file's first line, or torchrun's "To enable traceback see: ..."."""
    error_file: tuple[str, ...]
    """The `traceback :` field when it holds the child's error file (`@record`), else ()."""

    @property
    def killed(self) -> bool:
        """Whether a signal ended the child (no traceback of its own)."""
        return (
            self.exitcode is not None and self.exitcode < 0 and self.traceback.startswith("Signal ")
        )

    def text(self) -> str:
        """One line: `torchrun: rank 1 (local_rank 1) on host h exited with code 1`."""
        rank = f"rank {self.rank}" if self.rank is not None else "a rank"
        local = f" (local_rank {self.local_rank})" if self.local_rank is not None else ""
        on = f" on host {self.host}" if self.host else ""
        code = self.exitcode
        if self.killed:
            how = f"was killed: {self.traceback}"
            if code == -SIGKILL:
                how += " (the kernel's OOM killer when the container's memory is full, or a kill)"
        else:
            how = f"exited with code {code if code is not None else '?'}"
        return f"torchrun: {rank}{local}{on} {how}"


def _fields(lines: list[str], at: int) -> dict[str, tuple[int, str]]:
    """The `name : value` fields of the summary block after line `at` (to its `====` end)."""
    fields: dict[str, tuple[int, str]] = {}
    for i in range(at + 1, len(lines)):
        line = lines[i]
        if set(line.strip()) == {"="}:
            break
        found = _FIELD.match(line)
        if found and found.group(1) not in fields:
            fields[found.group(1)] = (i, found.group(2))
    return fields


def root_cause(lines: list[str]) -> RootCause | None:
    """The root cause of torchrun's last summary (None without one)."""
    at = max((i for i, line in enumerate(lines) if line.strip() == _ROOT_CAUSE), default=None)
    if at is None:
        return None
    fields = _fields(lines, at)
    rank = _ROOT_RANK.match(lines[fields["rank"][0]]) if "rank" in fields else None
    code = _EXITCODE.match(fields.get("exitcode", (0, ""))[1])
    where, first = fields.get("traceback", (len(lines), ""))
    error_file: list[str] = []
    if where < len(lines) and _NO_TRACEBACK not in first and not first.startswith("Signal "):
        error_file = [first]
        for more in lines[where + 1 :]:
            if set(more.strip()) == {"="}:
                break
            error_file.append(more[2:] if more.startswith("  ") else more)
    while error_file and not error_file[-1].strip():
        error_file.pop()  # the callstack's own final newline, indented by torchrun
    return RootCause(
        rank=int(rank.group(1)) if rank else None,
        local_rank=int(rank.group(2)) if rank else None,
        host=fields.get("host", (0, ""))[1],
        exitcode=int(code.group(1)) if code else None,
        traceback=first,
        error_file=tuple(error_file),
    )


def first_failure(lines: list[str]) -> list[str] | None:
    """The failing child's traceback chain in a torchrun log (its last line the exception
    that killed it), or None when the log does not end in torchrun's ChildFailedError
    summary (then `last_traceback` or the tail is what to show)."""
    if not any(CHILD_FAILED in line for line in lines[-200:]):
        return None
    cause = root_cause(lines)
    if cause is not None and cause.error_file:
        return list(cause.error_file)
    if cause is not None and cause.killed:
        return None  # a signal: the child printed nothing (the other ranks' errors follow it)
    rank = cause.rank if cause is not None else None
    tag = f"[rank{rank}]: " if rank is not None else None
    starts = _chain_starts(lines)
    for i in starts:  # the root rank's own traceback (printed by torch's excepthook)
        if tag is not None and lines[i].startswith(tag):
            return _chain(lines, i)
    for i in starts:  # a child that failed before init_process_group: no prefix
        body = lines[i] if tag is not None else _RANK_PREFIX.sub("", lines[i])
        if body == _TRACEBACK and not _is_torchrun_own(lines, i):
            return _chain(lines, i)
    return None


def died_of(lines: list[str]) -> list[str]:
    """The lines that say what ended the program: a torchrun child's traceback chain or the
    signal that killed it, else the last traceback chain, else the whole log."""
    cause = root_cause(lines) if any(CHILD_FAILED in line for line in lines[-200:]) else None
    if cause is not None and cause.killed:
        return [cause.traceback]
    return first_failure(lines) or last_traceback(lines) or lines


def last_traceback(lines: list[str]) -> list[str] | None:
    """The traceback chain a Python program died of: the last chain in the log, when no
    more than TRACEBACK_TRAILER lines follow it (an interpreter's exit hooks, NCCL's and
    torch's shutdown warnings); None when there is none (then the tail is shown)."""
    for start in reversed(_chain_starts(lines)):
        chain = _chain(lines, start)
        if _is_torchrun_own(lines, start):
            continue
        if len(lines) - (start + len(chain)) <= TRACEBACK_TRAILER:
            return chain
        return None
    return None


def _is_torchrun_own(lines: list[str], start: int) -> bool:
    """Whether the traceback at `start` is torchrun's (it ends in ChildFailedError)."""
    return any(CHILD_FAILED in line for line in _chain(lines, start)[-1:])
