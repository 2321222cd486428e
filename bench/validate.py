"""Benchmark `trainops validate` (`make bench`): results to bench/results/validate.json.

1. Throughput on the same 5,000 core-kind documents (one multi-document file),
   ours vs kubernetes-validate, in the same run: parse + strict validation for
   both (kubernetes-validate is given PyYAML's C loader, its fastest path), so
   the ratio is what a user sees. Validation-only rates are recorded too.
   kubernetes-validate runs on a sample (it manages ~100-150 docs/s).
2. Wall time of `validate_repository` on the shipped repository (render, real
   kustomize build per overlay, validate).
3. The same on a generated repository of 500 jobs x 4 clusters, with a per-phase
   breakdown: main-thread seconds spent in each step (exclusive of nested steps),
   and each overlay's `kustomize build` time (those run concurrently, in worker
   threads, so they overlap the main thread's work and each other).

Run: `python -m bench.validate` from the repository root.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import platform
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import kubernetes_validate
import yaml

from trainops import build
from trainops.core import yamlio
from trainops.spec import load as spec_load
from trainops.validate import pipeline, repo
from trainops.validate.load import documents_to_manifests
from trainops.validate.pipeline import validate_manifests
from trainops.validate.repo import validate_repository
from trainops.validate.schemas import DEFAULT_KUBERNETES_VERSION, SchemaStore

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results" / "validate.json"
DOCUMENTS = 5000
# kubernetes-validate takes ~7 ms per document: a sample keeps the run short
# while measuring a stable rate.
BASELINE_SAMPLE = 300
TARGET_RATIO = 50.0
GENERATED_JOBS = 500

_TEMPLATES = [
    """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-{i}
  namespace: team-{n}
  labels: {{app: web-{i}}}
spec:
  replicas: 2
  selector:
    matchLabels: {{app: web-{i}}}
  template:
    metadata:
      labels: {{app: web-{i}}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
          ports: [{{containerPort: 80, name: http}}]
          resources:
            requests: {{cpu: 100m, memory: 128Mi}}
            limits: {{cpu: "1", memory: 1Gi}}
          env:
            - {{name: MODE, value: production}}
          readinessProbe:
            httpGet: {{path: /healthz, port: http}}
""",
    """apiVersion: v1
kind: Service
metadata:
  name: web-{i}
  namespace: team-{n}
spec:
  selector: {{app: web-{i}}}
  ports:
    - {{name: http, port: 80, targetPort: http}}
""",
    """apiVersion: v1
kind: ConfigMap
metadata:
  name: config-{i}
  namespace: team-{n}
data:
  settings.yaml: |
    level: info
    replicas: 2
""",
    """apiVersion: batch/v1
kind: Job
metadata:
  name: migrate-{i}
  namespace: team-{n}
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: migrate
          image: ghcr.io/example/migrate:1.0
          command: [migrate, up]
""",
]


def core_documents(count: int) -> str:
    return "---\n".join(_TEMPLATES[i % 4].format(i=i, n=i % 7) for i in range(count))


def measure_throughput() -> dict[str, Any]:
    text = core_documents(DOCUMENTS)
    # ours: a cold store (compilation counted), parse with positions, validate.
    start = time.perf_counter()
    store = SchemaStore(DEFAULT_KUBERNETES_VERSION)
    manifests, problems = documents_to_manifests(yamlio.load_text(text, "bench.yaml"))
    parsed = time.perf_counter()
    findings = validate_manifests(manifests, None, store, checkers=[])
    ours_total = time.perf_counter() - start
    ours_validate = time.perf_counter() - parsed
    assert not problems and not findings, findings[:3]
    # Our parsed documents would otherwise stay alive and slow the baseline's
    # garbage collections: measure it on a clean heap.
    del manifests, store
    gc.collect()

    sample = list(yaml.load_all(text, Loader=yaml.CSafeLoader))[:BASELINE_SAMPLE]
    sample_text = "---\n".join(
        _TEMPLATES[i % 4].format(i=i, n=i % 7) for i in range(BASELINE_SAMPLE)
    )
    start = time.perf_counter()
    docs = list(yaml.load_all(sample_text, Loader=yaml.CSafeLoader))
    kv_parse = time.perf_counter() - start
    for doc in docs:
        kubernetes_validate.validate(doc, DEFAULT_KUBERNETES_VERSION, strict=True)
    kv_total = time.perf_counter() - start
    assert len(sample) == BASELINE_SAMPLE

    ours_rate = DOCUMENTS / ours_total
    kv_rate = BASELINE_SAMPLE / kv_total
    return {
        "documents": DOCUMENTS,
        "kubernetes_version": DEFAULT_KUBERNETES_VERSION,
        "ours_docs_per_s": round(ours_rate, 1),
        "ours_validate_only_docs_per_s": round(DOCUMENTS / ours_validate, 1),
        "kubernetes_validate_sample": BASELINE_SAMPLE,
        "kubernetes_validate_docs_per_s": round(kv_rate, 1),
        "kubernetes_validate_validate_only_docs_per_s": round(
            BASELINE_SAMPLE / (kv_total - kv_parse), 1
        ),
        "ratio": round(ours_rate / kv_rate, 1),
        "target_ratio": TARGET_RATIO,
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
        (repo, "render_repository", "render"),
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
    """500 copies of a shipped job, each on 4 clusters (two copies of each shipped profile)."""
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
        for suffix in ("", "-b"):
            clusters.append(name + suffix)
            (dest / "clusters" / f"{name}{suffix}.yaml").write_text(
                text.replace(f"name: {name}\n", f"name: {name}{suffix}\n")
            )
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
    results: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "throughput": measure_throughput(),
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
