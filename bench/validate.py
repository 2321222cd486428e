"""Benchmark `trainops validate` (`make bench`): results to bench/results/validate.json.

1. End to end, all rules on: the CLI (`trainops validate --manifests FILE --format json`:
   argument parsing, loading with positions, strict schema validation, every policy rule,
   the JSON report) on a mix of 5,000 documents (bench/mix.py: Deployments, Services (a
   third), ServiceMonitors, PyTorchJobs, batch Jobs, ConfigMaps, claims), against
   kubernetes-validate on the same mix in the same run (PyYAML's C loader, its fastest path;
   on a 270-document sample of the mix: it manages ~100-200 docs/s). Each tool runs in a fresh
   interpreter of its own, best of two runs there, timed after its imports. The wall time of
   `python -m trainops validate` (interpreter start and imports included) is recorded beside.
2. Time per document from 5,000 to 50,000 documents (each size in a fresh process, best of
   two): the rules index the objects once, so it stays constant.
3. Wall time of `validate_repository` on the shipped repository (render, real
   kustomize build per overlay, validate).
4. The same on a generated repository of 500 jobs x 4 clusters, with a per-phase
   breakdown: main-thread seconds spent in each step (exclusive of nested steps),
   and each overlay's `kustomize build` time (those run concurrently, in worker
   threads, so they overlap the main thread's work and each other).

Run: `python -m bench.validate` from the repository root.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import kubernetes_validate
import yaml

from bench.mix import KINDS, mixed_documents
from trainops import build, render
from trainops.cli import main as cli_main
from trainops.core import yamlio
from trainops.jobspec import load as spec_load
from trainops.validate import pipeline, repo
from trainops.validate.repo import validate_repository
from trainops.validate.schemas import DEFAULT_KUBERNETES_VERSION

ROOT = Path(__file__).resolve().parent.parent
# Each command runs as an installed trainops runs: from bytecode (pip compiles it at install).
# Where PYTHONDONTWRITEBYTECODE is set (this development machine sets it), every run would
# compile ~250 modules again: 0.3 CPU s of a one-job PR. The bytecode goes to a folder of its
# own, never into the checkout.
CLI_ENV = {
    **{name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"},
    "PYTHONPATH": str(ROOT),
    "PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "trainops-bench-bytecode"),
}
RESULTS = ROOT / "bench" / "results" / "validate.json"
DOCUMENTS = 5000
SIZES = (5000, 10000, 25000, 50000)
# kubernetes-validate takes ~8 ms per document: a sample (whole groups of the mix, so every
# kind is in it) keeps the run short while measuring a stable rate.
BASELINE_SAMPLE = 30 * KINDS
TARGET_RATIO = 50.0
TARGET_PER_DOC_SPREAD = 0.20
GENERATED_JOBS = 500


def cli_seconds(path: Path) -> tuple[float, dict[str, Any]]:
    """Seconds `trainops validate --manifests path --format json` takes in this process, and
    its report's summary."""
    out = io.StringIO()
    gc.collect()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = cli_main(["validate", "--manifests", str(path), "--format", "json"])
    seconds = time.perf_counter() - start
    summary = json.loads(out.getvalue())["summary"]
    assert code == 0 and summary["errors"] == 0, summary
    return seconds, summary


_CHILD = """
import json, sys
from pathlib import Path
from bench.validate import cli_seconds, kubernetes_validate_seconds
tool, path, runs = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
if tool == "trainops":
    timings = [cli_seconds(path) for _ in range(runs)]
else:
    text = path.read_text()
    timings = [kubernetes_validate_seconds(text) for _ in range(runs)]
print(json.dumps({"seconds": min(t[0] for t in timings), "detail": timings[-1][1]}))
"""


def fresh_process_run(path: Path, tool: str = "trainops", runs: int = 1) -> tuple[float, Any]:
    """Best of `runs` timings of `tool` on `path` in a fresh interpreter (imports done, no
    heap, cache or garbage-collector state left by the other tool or by an earlier size), and
    what the tool reported (our summary; kubernetes-validate's count of kinds without a
    schema)."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, tool, str(path), str(runs)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        env=CLI_ENV,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return float(result["seconds"]), result["detail"]


def kubernetes_validate_seconds(text: str) -> tuple[float, int]:
    """Parse + strict validation of every document, kubernetes-validate's way; the kinds it
    has no schema for (the CRDs) raise, which it reports as an error, quickly."""
    start = time.perf_counter()
    docs = list(yaml.load_all(text, Loader=yaml.CSafeLoader))
    unknown = 0
    for doc in docs:
        try:
            kubernetes_validate.validate(doc, DEFAULT_KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.SchemaNotFoundError:
            unknown += 1
    return time.perf_counter() - start, unknown


def measure_throughput(tmp: Path) -> dict[str, Any]:
    """Each tool in a fresh interpreter of its own, best of two runs there: measured in one
    process, kubernetes-validate ran 30-60% faster after our run than before it (our loader
    freezes the heap it built, which makes the garbage collector's later passes cheaper)."""
    path = tmp / "mix-5000.yaml"
    path.write_text(mixed_documents(DOCUMENTS))
    sample = tmp / "mix-sample.yaml"
    sample.write_text(mixed_documents(BASELINE_SAMPLE))
    ours, summary = fresh_process_run(path, "trainops", runs=2)
    kv, unknown = fresh_process_run(sample, "kubernetes-validate", runs=2)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "trainops", "validate", "--manifests", str(path), "--format",
         "json"],
        cwd=ROOT, check=True, capture_output=True, env=CLI_ENV,
    )  # fmt: skip
    wall = time.perf_counter() - start
    ours_rate = DOCUMENTS / ours
    kv_rate = BASELINE_SAMPLE / kv
    return {
        "documents": DOCUMENTS,
        "mix": "bench/mix.py: Deployment, 3 Services, ServiceMonitor, ConfigMap, PyTorchJob,"
        " batch Job, PersistentVolumeClaim per group of 9",
        "kubernetes_version": DEFAULT_KUBERNETES_VERSION,
        "resources_checked": summary["resources"],
        "ours_cli_seconds": round(ours, 3),
        "ours_docs_per_s": round(ours_rate, 1),
        "ours_subprocess_wall_seconds": round(wall, 3),
        "ours_subprocess_docs_per_s": round(DOCUMENTS / wall, 1),
        "kubernetes_validate_sample": BASELINE_SAMPLE,
        "kubernetes_validate_no_schema_documents": unknown,
        "kubernetes_validate_docs_per_s": round(kv_rate, 1),
        "ratio": round(ours_rate / kv_rate, 1),
        "ratio_subprocess": round(DOCUMENTS / wall / kv_rate, 1),
        "target_ratio": TARGET_RATIO,
    }


def measure_scaling(tmp: Path) -> dict[str, Any]:
    per_doc: dict[str, float] = {}
    for size in SIZES:
        path = tmp / f"mix-{size}.yaml"
        path.write_text(mixed_documents(size))
        best = min(fresh_process_run(path)[0] for _ in range(2))
        per_doc[str(size)] = round(best / size * 1e6, 1)
        path.unlink()
    values = list(per_doc.values())
    spread = max(values) / min(values) - 1
    return {
        "microseconds_per_document": per_doc,
        "spread": round(spread, 3),
        "target_spread": TARGET_PER_DOC_SPREAD,
    }


class Phases:
    """Exclusive main-thread time per phase: a phase nested in another is not counted twice."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._stack: list[float] = []  # child time accumulated by each open phase

    def wrap(self, phase: str, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread() is not threading.main_thread():
                return func(*args, **kwargs)
            self._stack.append(0.0)
            start = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                children = self._stack.pop()
                self.seconds[phase] = self.seconds.get(phase, 0.0) + elapsed - children
                if self._stack:
                    self._stack[-1] += elapsed

        return timed


@contextlib.contextmanager
def phase_timers(phases: Phases) -> Iterator[None]:
    """Wrap the steps of `validate_repository` (bench only; the library stays untouched)."""
    targets = [
        (spec_load, "load_repository", "load specs"),
        # validate renders a cluster at a time (`render_in_parts`, a generator): its steps.
        (render, "base_files", "render"),
        (render, "overlay_files", "render"),
        (render, "gitops_files", "render"),
        (yamlio, "load_text", "parse YAML with positions"),
        (repo, "documents_to_manifests", "parse YAML with positions"),
        (repo, "_source_index", "map objects to rendered files"),
        (repo, "_attach_sources", "map objects to rendered files"),
        (pipeline, "check_schema", "schema validation"),
    ]
    with contextlib.ExitStack() as stack:
        for module, name, phase in targets:
            wrapped = phases.wrap(phase, getattr(module, name))
            stack.enter_context(mock.patch.object(module, name, wrapped))
        checkers = [phases.wrap("policy rules", c) for c in pipeline.CHECKERS]
        stack.enter_context(mock.patch.object(pipeline, "CHECKERS", checkers))
        yield


def timed_repository(root: Path, breakdown: bool = False) -> dict[str, Any]:
    phases = Phases()
    builds: dict[str, float] = {}

    def timed_build(directory: Path) -> str:
        start = time.perf_counter()
        try:
            return build.kustomize(directory)
        finally:
            builds[directory.name] = round(time.perf_counter() - start, 2)

    start = time.perf_counter()
    try:
        with phase_timers(phases) if breakdown else contextlib.nullcontext():
            result = validate_repository(root, spec_load.load_repository(root), run=timed_build)
    except Exception as err:  # a benchmark records what went wrong, it does not stop
        return {"error": f"{type(err).__name__}: {err}"}
    seconds = time.perf_counter() - start
    out: dict[str, Any] = {
        "seconds": round(seconds, 2),
        "resources": result.resources,
        "errors": sum(1 for f in result.findings if f.severity == "error"),
        "kustomize_build_seconds": dict(sorted(builds.items())),
    }
    if breakdown:
        main = {k: round(v, 2) for k, v in sorted(phases.seconds.items())}
        main["waiting for kustomize, temp files, other"] = round(
            seconds - sum(phases.seconds.values()), 2
        )
        out["main_thread_seconds_by_phase"] = main
        out["parallel_builds"] = build.MAX_PARALLEL_BUILDS
    return out


def generated_repository(dest: Path) -> None:
    """500 copies of a shipped job, each on 4 clusters (two copies of each shipped Training
    Operator v1 profile, with its platform manifests; the Trainer v2 example renders the same
    job as a TrainJob)."""
    (dest / "jobs").mkdir(parents=True)
    (dest / "clusters").mkdir()
    if (ROOT / "trainops.yaml").is_file():
        shutil.copy(ROOT / "trainops.yaml", dest / "trainops.yaml")
    clusters: list[str] = []
    for path in sorted((ROOT / "clusters").glob("*.yaml")):
        text = path.read_text()
        found = re.search(r"^name: (\S+)$", text, re.M)
        if found is None:
            continue
        name = found.group(1)
        if re.search(r"^operator:\s*\n\s+name: trainer\b", text, re.M):
            continue
        for suffix in ("", "-b"):
            clusters.append(name + suffix)
            (dest / "clusters" / f"{name}{suffix}.yaml").write_text(
                text.replace(f"name: {name}\n", f"name: {name}{suffix}\n")
            )
            # Its platform manifests: the queue and network the profile names come from there.
            if (ROOT / "clusters" / name).is_dir():
                shutil.copytree(ROOT / "clusters" / name, dest / "clusters" / f"{name}{suffix}")
    source = (ROOT / "jobs" / "resnet50-ddp.yaml").read_text()
    head, _, _ = source.partition("targets:")
    targets = "targets:\n" + "".join(
        f"  - cluster: {c}\n" + ("    gpuProduct: a100-40gb\n" if "a100" in c else "")
        for c in clusters
    )
    for i in range(GENERATED_JOBS):
        name = f"resnet50-ddp-{i:03d}"
        text = head.replace("name: resnet50-ddp\n", f"name: {name}\n") + targets
        (dest / "jobs" / f"{name}.yaml").write_text(text)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="trainops-bench-") as tmp:
        results: dict[str, Any] = {
            "machine": {
                "python": platform.python_version(),
                "cpus": os.cpu_count(),
                "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
            },
            "end_to_end_all_rules": measure_throughput(Path(tmp)),
            "scaling": measure_scaling(Path(tmp)),
            "shipped_repository": timed_repository(ROOT),
        }
    with tempfile.TemporaryDirectory(prefix="trainops-bench-") as tmp:
        generated_repository(Path(tmp))
        results["generated_500_jobs_x_4_clusters"] = timed_repository(Path(tmp), breakdown=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    print(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
