"""Benchmark `validate --changed` (issue 28): results to bench/results/changed.json.

All in one run, so the ratios compare numbers measured side by side:

1. A one-job pull request on a fleet of 500 jobs x 6 clusters (bench/fleet.py: the shipped
   jobs over two copies of every shipped cluster, Trainer v2 included): the wall time of
   `python -m trainops validate --changed --base main --format json` as CI runs it (a fresh
   interpreter, imports, loading every spec, the partial build, the report), and of
   `render --check --changed`. Target: <= 5 s.
2. The whole fleet: `python -m trainops validate --format json` against a bare `kustomize
   build` of every overlay of the committed tree, the overlays built as validate builds
   them (one process per core, `trainops.build.build_overlays`). Target: <= 1.3x.
3. `validate --manifests` on 5,000 core documents against kubernetes-validate, and the time
   per document from 5,000 to 50,000 (bench/validate.py's measurements, rerun here; pass
   `--quick` to skip the 50,000-document scaling run).

Each timing is the best of `RUNS` runs. CPU seconds (user + system, children included) are
recorded beside wall seconds: on a shared machine the wall time also counts waiting for a
core, and the load average at the start says how busy it was.

Run: `python -m bench.changed [--quick | --pr-only]` from the repository root (`--pr-only`:
part 1 alone, for a machine too busy for whole-fleet builds: kustomize's own 300 s timeout
per overlay stopped one run on the shared development machine at a load average of 20).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import validate as bench_validate
from bench.fleet import generate
from trainops import build

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "changed.json"
JOBS = 500
COPIES = 2
RUNS = 2
EDITED = "resnet50-ddp-004"
TARGET_PR_SECONDS = 5.0
TARGET_FULL_RATIO = 1.3


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], root: Path) -> dict[str, Any]:
    """Best wall time of `python -m trainops *argv` in `root` over RUNS runs, its CPU time,
    exit code and the summary line(s) it printed."""
    best: dict[str, Any] = {}
    for _ in range(RUNS):
        cpu = _children_cpu()
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "trainops", *argv],
            cwd=root,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            check=False,
        )
        wall = time.perf_counter() - start
        if not best or wall < best["wall_seconds"]:
            best = {
                "wall_seconds": round(wall, 2),
                "cpu_seconds": round(_children_cpu() - cpu, 2),
                "exit_code": done.returncode,
                "stderr": done.stderr.strip().splitlines()[:6],
            }
            if "--format" in argv:
                best["summary"] = json.loads(done.stdout)["summary"]
    return best


def bare_kustomize(root: Path) -> dict[str, Any]:
    """Best wall time of building every committed overlay, as validate builds them."""
    clusters = build.overlays_in(root)
    best = float("inf")
    cpu_used = 0.0
    for _ in range(RUNS):
        cpu = _children_cpu()
        start = time.perf_counter()
        for _name, built in build.build_overlays(root, clusters):
            assert isinstance(built, str), built
        wall = time.perf_counter() - start
        if wall < best:
            best, cpu_used = wall, _children_cpu() - cpu
    return {"wall_seconds": round(best, 2), "cpu_seconds": round(cpu_used, 2)}


def fleet(dest: Path) -> Path:
    """The fleet, rendered and committed on `main`, with one job edited on a branch."""
    generate(dest, JOBS, COPIES)
    _git(dest, "init", "-q", "-b", "main")
    subprocess.run(
        [sys.executable, "-m", "trainops", "render"],
        cwd=dest,
        check=True,
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "fleet")
    _git(dest, "checkout", "-q", "-b", "change")
    spec = dest / "jobs" / f"{EDITED}.yaml"
    spec.write_text(spec.read_text().replace("--epochs=10", "--epochs=12"))
    return dest


def measure_fleet(tmp: Path, pr_only: bool) -> dict[str, Any]:
    root = fleet(tmp / "fleet")
    pr = timed(["validate", "--changed", "--base", "main", "--format", "json"], root)
    out = {
        "fleet": f"{JOBS} jobs x {len(build.overlays_in(root))} clusters (bench/fleet.py)",
        "one_job_pr_validate_changed": pr,
        "one_job_pr_render_check_changed": timed(
            ["render", "--check", "--changed", "--base", "main"], root
        ),
        "target_pr_seconds": TARGET_PR_SECONDS,
    }
    if pr_only:
        return out
    kustomize = bare_kustomize(root)
    full = timed(["validate", "--format", "json"], root)
    return {
        **out,
        "full_validate": full,
        "bare_kustomize_build_all_overlays": kustomize,
        "full_over_kustomize_ratio": round(full["wall_seconds"] / kustomize["wall_seconds"], 2),
        "target_full_ratio": TARGET_FULL_RATIO,
        "pr_over_full_ratio": round(pr["wall_seconds"] / full["wall_seconds"], 3),
    }


def main() -> None:
    quick = "--quick" in sys.argv[1:]
    pr_only = "--pr-only" in sys.argv[1:]
    results: dict[str, Any] = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        }
    }
    with tempfile.TemporaryDirectory(prefix="trainops-bench-") as tmp:
        results["fleet"] = measure_fleet(Path(tmp), pr_only)
        if not pr_only:
            results["manifests_5000_vs_kubernetes_validate"] = bench_validate.measure_throughput(
                Path(tmp)
            )
        if not (quick or pr_only):
            results["manifests_scaling"] = bench_validate.measure_scaling(Path(tmp))
    results["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
