"""The stalled-training alert, end to end with the real programs: run-local's replicas serve the
trainer's metrics, the real `prometheus` (Debian's package, `make prometheus`) scrapes them with
the labels prometheus-operator gives the job's ServiceMonitor targets and evaluates the rules
of the PrometheusRule `trainops render` delivers; a replica stopped with SIGSTOP (the process
stays, its steps stop, as a rank stuck in a hung collective) must fire TrainingStalled for its
job, and not for a job beside it that keeps training.

Consumers, and what they do at the releases cited:
- prometheus-operator v0.93 loads a PrometheusRule as a rule file whose content is the CR's
  `spec` marshalled to YAML (`groups: [...]`, pkg/operator/rules.go `generateContent`): the rule
  file below is exactly that. Its ServiceMonitor targets carry `namespace`, `service`, `pod`,
  `job` and `endpoint` (pkg/prometheus/promcfg.go); run-local's `--prometheus-targets` writes
  them (trainops/runlocal/scrape.py).
- Prometheus 2.42 (Debian bookworm's package, what `make prometheus` installs): file_sd targets,
  rules evaluated every `evaluation_interval`, `/api/v1/alerts` listing pending and firing
  alerts with their labels (docs "HTTP API: Alerts").
- A scrape of the stopped replica times out, so Prometheus marks its series stale: the alert
  comes from the other replica's gauge, frozen at the step it waits after (DDP: every rank
  waits for the stopped one in the gradient all-reduce). That is the job-level signal the alert
  groups by (`training_job`); per pod there is no "others still stepping" in a synchronous job,
  so "not for the others" is the job beside it.

The threshold is the profile's documented knob, `monitoring.stalledMinutes: 0.25` (15 s).
Two jobs of the resnet50-ddp shape (PyTorchJob, Master + Worker, our trainer) run a tiny GPT on
synthetic tokens: the stalled one on two replicas, the control on one (2 shared cores).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.processes import marked, reap
from tests.tools import REPO, require_tool
from trainops.cli import main
from trainops.runlocal.supervise import POD_MARKER

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("needs_kustomize")]

NAMESPACE = "ml-vision"
STALLED, CONTROL = "stall-a", "stall-b"
STALLED_MINUTES = 0.25
LAST_STEP = "trainops_trainer_last_step_timestamp_seconds"
DEADLINE = 90.0
"""Seconds any one wait may take before the test gives up (a loaded 2-core machine)."""


def _job(name: str) -> dict[str, Any]:
    spec = yaml.safe_load((REPO / "jobs" / "resnet50-ddp.yaml").read_text())
    for key in ("dataSync", "volumes"):
        spec.pop(key, None)
    spec["name"] = name
    spec["args"] = [
        "--model=gpt-tiny",
        "--data=synthetic-tokens",
        "--seq-len=32",
        "--batch-size=4",
        "--epochs=1000",
        "--lr=0.001",
        "--optimizer=adamw",
        "--precision=fp32",
        "--log-interval=1000",
    ]
    spec["targets"] = [{"cluster": "cloud-h100"}]
    return spec


def _repo(root: Path) -> Path:
    """The shipped clusters, cloud-h100 with the stall threshold at 15 s, and the two jobs."""
    (root / "clusters").mkdir(parents=True)
    for path in (REPO / "clusters").glob("*.yaml"):
        profile = yaml.safe_load(path.read_text())
        if profile["name"] == "cloud-h100":
            profile.setdefault("monitoring", {})["stalledMinutes"] = STALLED_MINUTES
        (root / "clusters" / path.name).write_text(yaml.safe_dump(profile, sort_keys=False))
    for sub in (REPO / "clusters").iterdir():
        if sub.is_dir():
            shutil.copytree(sub, root / "clusters" / sub.name)
    (root / "jobs").mkdir()
    for name in (STALLED, CONTROL):
        (root / "jobs" / f"{name}.yaml").write_text(yaml.safe_dump(_job(name), sort_keys=False))
    assert main(["--root", str(root), "render"]) == 0
    return root


def _rule_file(root: Path, out: Path) -> Path:
    """The namespace's PrometheusRule as prometheus-operator writes its rule file: the spec."""
    rules = [
        doc
        for path in sorted((root / "overlays" / "cloud-h100" / "_monitoring").glob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc and doc["kind"] == "PrometheusRule" and doc["metadata"]["namespace"] == NAMESPACE
    ]
    (rule,) = rules
    out.write_text(yaml.safe_dump(rule["spec"], sort_keys=False))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(base: str, path: str, **params: str) -> Any:
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(f"{base}{path}{query}", timeout=5) as response:
        body = json.load(response)
    assert body["status"] == "success", body
    return body["data"]


def _query(base: str, promql: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = _get(base, "/api/v1/query", query=promql)["result"]
    return result


def _wait(what: str, check: Any, logs: list[Path]) -> Any:
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        with contextlib.suppress(OSError):
            found = check()
            if found:
                return found
        time.sleep(0.5)
    tails = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in logs if p.exists())
    pytest.fail(f"timed out waiting for {what}\n{tails}")


def _replica_pids(run_local: subprocess.Popen[bytes], replica: str) -> list[int]:
    """The processes of one replica of that run-local (its pod marker, supervise.py)."""
    prefix = f"{POD_MARKER}={run_local.pid}-".encode()
    suffix = f"-{replica}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(v.startswith(prefix) and v.endswith(suffix) for v in env):
            pids.append(int(entry.name))
    return pids


@contextlib.contextmanager
def _started(argv: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        # SIGTERM, not SIGINT: a suite run in the background inherits SIGINT ignored, and then
        # each run-local trained on until its wait below ran out (two minutes more per run).
        proc.send_signal(signal.SIGTERM)  # run-local stops its replicas on the way out
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=60)
        # Whatever happened, nothing of this run-local outlives the test: its tree, and the
        # replicas it marked (their own sessions, orphaned if run-local died first).
        reap(proc, also=marked(POD_MARKER, f"{proc.pid}-"))


def _run_local(root: Path, job: str, replicas: int, targets: Path) -> list[str]:
    return [sys.executable, "-m", "trainops", "--root", str(root), "run-local", job,
            "--cluster", "cloud-h100", "--replicas", str(replicas), "--timeout", "300",
            "--prometheus-targets", str(targets)]  # fmt: skip


def _stalled(base: str) -> dict[str, str]:
    """training_job -> state of every TrainingStalled alert now (pending or firing)."""
    alerts = _get(base, "/api/v1/alerts")["alerts"]
    return {
        a["labels"]["training_job"]: a["state"]
        for a in alerts
        if a["labels"]["alertname"] == "TrainingStalled"
    }


def test_a_stopped_replica_fires_training_stalled_for_its_job_only(tmp_path: Path) -> None:
    prometheus = require_tool("prometheus")
    root = _repo(tmp_path / "repo")
    rules = _rule_file(root, tmp_path / "rules.yaml")
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    targets = {job: tmp_path / f"{job}.targets.json" for job in (STALLED, CONTROL)}
    logs = [tmp_path / f"{name}.log" for name in (STALLED, CONTROL, "prometheus")]
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {
                "job_name": "run-local",
                "file_sd_configs": [{"files": [str(p) for p in targets.values()]}],
            }
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    stopped: list[int] = []
    with (
        _started(_run_local(root, STALLED, 2, targets[STALLED]), logs[0]) as stalled_job,
        _started(_run_local(root, CONTROL, 1, targets[CONTROL]), logs[1]),
        _started(
            [
                prometheus,
                f"--config.file={tmp_path / 'prometheus.yml'}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            logs[2],
        ),  # fmt: skip
    ):
        try:
            # Every replica has stepped: three pods with a last-step time (0 until the first).
            _wait(
                "every replica's first step, scraped",
                lambda: len(_query(base, f"{LAST_STEP} > 0")) == 3,
                logs,
            )
            labels = _get(base, "/api/v1/series", **{"match[]": "trainops_trainer_step"})
            pods = sorted((s["service"], s["pod"], s["namespace"]) for s in labels)
            assert pods == [
                (f"{STALLED}-metrics", f"{STALLED}-master-0", NAMESPACE),
                (f"{STALLED}-metrics", f"{STALLED}-worker-0", NAMESPACE),
                (f"{CONTROL}-metrics", f"{CONTROL}-master-0", NAMESPACE),
            ]
            assert _stalled(base) == {}, "nothing is stalled while every job trains"
            stopped = _replica_pids(stalled_job, "worker-0")
            assert stopped, "worker-0's processes"
            for pid in stopped:
                os.kill(pid, signal.SIGSTOP)
            fired = _wait(
                f"TrainingStalled for {STALLED}",
                lambda: STALLED in _stalled(base) and _stalled(base),
                logs,
            )
            assert fired[STALLED] in {"pending", "firing"}
            assert CONTROL not in fired, fired
            # The control still steps: its gauge moved within the threshold.
            fresh = _query(base, f'time() - {LAST_STEP}{{service="{CONTROL}-metrics"}}')
            assert float(fresh[0]["value"][1]) < STALLED_MINUTES * 60, fresh
        finally:
            for pid in stopped:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)
