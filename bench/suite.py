"""Benchmark the test suite (issue 39's targets: `make test` under 8 minutes on two cores,
`make test-fast` under 2): results to bench/results/suite.json.

Runs `make test-fast` and (without `--fast`) `make test` as CI runs them (`CI=true`: a test
missing its tool fails instead of skipping), each once, recording wall seconds and CPU seconds
(user + system of every process the command started, kustomize, torchrun and DeepSpeed's
compiler included), the exit code, pytest's summary line and its 20 slowest tests
(`--durations`), and the load average before and after: on a shared machine the wall time
also counts waiting for a core, the CPU time does not.

Run: `python -m bench.suite [--fast]` from the repository root.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "suite.json"
TARGETS = {"test-fast": 120.0, "test": 480.0}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_make(target: str) -> dict[str, Any]:
    """`make <target>` with CI=true: wall and CPU seconds, exit code, summary, slowest tests."""
    load = [round(x, 2) for x in os.getloadavg()]
    cpu = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(
        ["make", target, "PYTEST_ARGS=-q --durations=20 -p no:cacheprovider"],
        cwd=ROOT,
        env={**os.environ, "CI": "true"},
        capture_output=True,
        text=True,
        check=False,
    )
    lines = (done.stdout + done.stderr).splitlines()
    slowest = [line for line in lines if line.split()[:1] and line.split()[0].endswith("s")]
    return {
        "wall_seconds": round(time.perf_counter() - start, 1),
        "cpu_seconds": round(_children_cpu() - cpu, 1),
        "target_wall_seconds": TARGETS[target],
        "exit_code": done.returncode,
        "summary": next((line for line in reversed(lines) if " in " in line), ""),
        "slowest": [line for line in slowest if "::" in line][:20],
        "load_average_before": load,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    targets = ["test-fast"] if "--fast" in sys.argv[1:] else ["test-fast", "test"]
    results: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        **{target: timed_make(target) for target in targets},
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
