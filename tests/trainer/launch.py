"""Helpers for tests that run the trainer in real processes (torchrun, gloo, CPU)."""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests import processes
from tests.tools import REPO, session_scratch

# Tiny GPT on the learnable synthetic token task: a step takes tens of milliseconds on CPU.
TINY_GPT = [
    "--model", "gpt-tiny", "--data", "synthetic-tokens", "--seq-len", "32",
    "--batch-size", "8", "--lr", "3e-3", "--num-workers", "0", "--log-interval", "5",
]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def env(**extra: str) -> dict[str, str]:
    """The test's environment plus one thread per process (2 shared cores)."""
    out = dict(os.environ)
    out.update({"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1", "TRAINOPS_METRICS_PORT": "0"})
    out["PYTHONPATH"] = str(REPO) + os.pathsep + out.get("PYTHONPATH", "")
    out.update(extra)
    return out


@functools.cache
def _log_dir() -> Path:
    """Where torchrun keeps its agent's logs: without `--log-dir` each run made a
    `torchelastic_*` folder in /tmp and left it there."""
    return session_scratch("trainops-torchrun-logs-")


def torchrun_cmd(args: list[str], nproc: int = 2, max_restarts: int = 0) -> list[str]:
    """torchrun via its module (the same code as the `torchrun` script, found with torch)."""
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--log-dir={_log_dir()}",
        f"--nproc_per_node={nproc}", f"--max-restarts={max_restarts}", "--monitor-interval=0.1",
        "-m", "trainer", *args,
    ]  # fmt: skip


def run_torchrun(
    args: list[str], nproc: int = 2, timeout: float = 240, **extra: str
) -> subprocess.CompletedProcess[str]:
    # On a timeout the whole tree goes: subprocess.run killed torchrun alone, its workers lived.
    return processes.run(
        torchrun_cmd(args, nproc), cwd=REPO, env=env(**extra), text=True, timeout=timeout
    )


def events(stdout: str, name: str | None = None) -> list[dict[str, Any]]:
    """The trainer's structured log lines (JSON objects), optionally of one event kind."""
    out = []
    for raw in stdout.splitlines():
        line = raw.strip()
        if line.startswith("{") and '"event"' in line:
            obj = json.loads(line)
            if name is None or obj["event"] == name:
                out.append(obj)
    return out


def one(stdout: str, name: str) -> dict[str, Any]:
    found = events(stdout, name)
    assert len(found) == 1, f"expected one {name!r} event, got {found}"
    return found[0]


def worker_pids(parent: int) -> dict[int, int]:
    """RANK -> pid of the trainer workers that torchrun process `parent` started."""
    out = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid != parent:
                continue
            environ = (proc / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        for item in environ:
            if item.startswith(b"RANK="):
                out[int(item[5:])] = int(proc.name)
    return out


def start_single_process(args: list[str]) -> subprocess.Popen[str]:
    """`python -m trainer` without torchrun (no process group), output captured as text."""
    clean = {k: v for k, v in env().items() if k not in {"RANK", "MASTER_ADDR", "WORLD_SIZE"}}
    return subprocess.Popen(
        [sys.executable, "-m", "trainer", *args], cwd=REPO, env=clean,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
