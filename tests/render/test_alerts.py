"""The training alerts, judged by the program that evaluates them: Prometheus' own `promtool`
(Debian's `prometheus` package, installed by `make setup`).

`promtool check rules` reads every rendered PrometheusRule's groups the way Prometheus loads a
rule file (PromQL parsed, templates of the annotations compiled). `promtool test rules` then
evaluates the alerts over series written here in the labels the real exporters give them, with
each alert firing for one job and not for another:
- the trainer's metrics, scraped through the job's `<job>-metrics` Service by a ServiceMonitor:
  prometheus-operator v0.93 (pkg/prometheus/promcfg.go) labels targets `namespace`, `service`,
  `pod`;
- DCGM exporter 4.x: `DCGM_FI_DEV_GPU_UTIL{namespace, pod, gpu, ...}` (Kubernetes mapping on,
  scraped with honorLabels as the GPU Operator's ServiceMonitor does);
- Training Operator v1.9 (pkg/common/metrics.go):
  `training_operator_jobs_failed_total{job_namespace, framework}`;
- kube-state-metrics v2 (docs/metrics/workload/job-metrics.md): `kube_job_failed{namespace,
  job_name, condition}`.
The thresholds come from the profile, which sets them away from the defaults here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, copy_inputs, require_tool
from trainops.jobspec.load import load_repository
from trainops.render.delivered import monitoring_objects

THRESHOLDS = """
monitoring:
  stalledMinutes: 10
  restartsPerHour: 2
  gpuUtilizationBelow: 70
  ruleLabels: {release: kube-prometheus-stack}
"""


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict[str, Any]]:
    """(cluster, namespace) -> the PrometheusRule rendered there, thresholds set in the profiles."""
    root = copy_inputs(REPO, tmp_path_factory.mktemp("repo"))
    for profile in (root / "clusters").glob("*.yaml"):
        profile.write_text(profile.read_text() + THRESHOLDS)
    repo = load_repository(root)
    found = {}
    for cluster in repo.clusters.values():
        for obj in monitoring_objects(repo, cluster):
            if obj["kind"] == "PrometheusRule":
                found[(cluster.name, obj["metadata"]["namespace"])] = obj
    return found


def _rule_file(directory: Path, rule: dict[str, Any], annotations: bool = True) -> Path:
    groups = rule["spec"]["groups"]
    if not annotations:
        # `promtool test rules` compares annotations too; these tests pin the expressions and
        # labels (the annotations' templates are compiled by `check rules`).
        groups = [
            {**g, "rules": [{k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]]}
            for g in groups
        ]
    path = directory / "rules.yaml"
    path.write_text(yaml.safe_dump({"groups": groups}))
    return path


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    promtool = require_tool("promtool")
    return subprocess.run(
        [promtool, *args], capture_output=True, text=True, check=False, timeout=120
    )


def test_every_rule_loads_in_prometheus(
    rules: dict[tuple[str, str], dict[str, Any]], tmp_path: Path
) -> None:
    """Each shipped cluster's namespaces with jobs get a rule, and promtool accepts each."""
    assert set(rules) >= {
        ("cloud-h100", "ai-training"),
        ("cloud-h100", "ml-vision"),
        ("onprem-h200", "ml-vision"),
    }
    for key, rule in sorted(rules.items()):
        assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack", key
        result = _promtool("check", "rules", str(_rule_file(tmp_path, rule)))
        assert result.returncode == 0, f"{key}: {result.stdout}{result.stderr}"
        assert "4 rules found" in result.stdout, result.stdout


def _labels(**labels: str) -> str:
    return "{" + ", ".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def _series(metric: str, values: str, **labels: str) -> dict[str, str]:
    return {"series": metric + _labels(**labels), "values": values}


NS = "ai-training"
LLM = {"namespace": NS, "service": "llm-finetune-metrics", "pod": "llm-finetune-master-0"}
HVD = {"namespace": NS, "service": "horovod-training-metrics", "pod": "horovod-training-worker-0"}
TF = {"namespace": NS, "service": "tf-distributed-metrics", "pod": "tf-distributed-worker-0"}
OTHER_NS = {
    "namespace": "ml-vision",
    "service": "resnet50-ddp-metrics",
    "pod": "resnet50-ddp-master-0",
}


def _fires(alert: str, at: str, *labels: dict[str, str]) -> dict[str, Any]:
    return {"eval_time": at, "alertname": alert, "exp_alerts": [{"exp_labels": x} for x in labels]}


UNIT_TESTS: dict[str, Any] = {
    "interval": "1m",
    "input_series": [
        # The last-step gauge holds the Unix time of the last step: llm-finetune steps every
        # minute, horovod-training stopped after minute 5, tf-distributed never stepped (0), and
        # a job of another namespace stalled (another namespace's rule judges it).
        _series("trainops_trainer_last_step_timestamp_seconds", "0+60x40", **LLM),
        _series("trainops_trainer_last_step_timestamp_seconds", "0+60x5 300x35", **HVD),
        _series("trainops_trainer_last_step_timestamp_seconds", "0x40", **TF),
        _series("trainops_trainer_last_step_timestamp_seconds", "0+60x5 300x35", **OTHER_NS),
        # Elastic restarts: llm-finetune restarted once, horovod-training three times.
        _series("trainops_trainer_restarts", "0x20 1x20", **LLM),
        _series("trainops_trainer_restarts", "0x10 1x10 2x10 3x10", **HVD),
        # Pods serving trainer metrics (what "training" means for the GPU join).
        _series("trainops_trainer_step", "0+1x40", **LLM),
        _series("trainops_trainer_step", "0+1x40", **HVD),
        # DCGM per GPU: llm-finetune busy, horovod-training starved, a notebook idle (no job).
        _series("DCGM_FI_DEV_GPU_UTIL", "95x40", namespace=NS, pod=LLM["pod"], gpu="0"),
        _series("DCGM_FI_DEV_GPU_UTIL", "90x40", namespace=NS, pod=LLM["pod"], gpu="1"),
        _series("DCGM_FI_DEV_GPU_UTIL", "40x40", namespace=NS, pod=HVD["pod"], gpu="0"),
        _series("DCGM_FI_DEV_GPU_UTIL", "50x40", namespace=NS, pod=HVD["pod"], gpu="1"),
        _series("DCGM_FI_DEV_GPU_UTIL", "1x40", namespace=NS, pod="notebook-0", gpu="0"),
        # The Training Operator counts a failed PyTorchJob in ai-training at minute 20 (and one
        # in ml-vision at minute 5, which is not this namespace's).
        _series(
            "training_operator_jobs_failed_total",
            "0x20 1x20",
            job_namespace=NS,
            framework="pytorch",
        ),
        _series(
            "training_operator_jobs_failed_total",
            "0x5 1x35",
            job_namespace="ml-vision",
            framework="pytorch",
        ),
    ],
    "alert_rule_test": [
        # Stalled: horovod's last step at 300 s; 10 minutes later is 900 s.
        _fires("TrainingStalled", "14m"),
        _fires(
            "TrainingStalled",
            "16m",
            {"namespace": NS, "training_job": "horovod-training", "severity": "critical"},
        ),
        # Restarts: 2 within the hour only from minute 20 (horovod), llm-finetune's 1 never.
        _fires("TrainingRestarting", "15m"),
        _fires(
            "TrainingRestarting",
            "25m",
            {"namespace": NS, "training_job": "horovod-training", "severity": "warning"},
        ),
        # GPU: horovod averages 45 % < 70 %; pending until it has lasted 30 minutes.
        _fires("TrainingGpuUnderutilized", "20m"),
        _fires(
            "TrainingGpuUnderutilized",
            "35m",
            {"namespace": NS, "training_job": "horovod-training", "severity": "warning"},
        ),
        # Failed: nothing counted here before minute 20.
        _fires("TrainingJobFailed", "15m"),
        _fires(
            "TrainingJobFailed",
            "25m",
            {"job_namespace": NS, "framework": "pytorch", "severity": "critical"},
        ),
    ],
}


def test_alerts_fire_and_stay_quiet_as_promtool_evaluates_them(
    rules: dict[tuple[str, str], dict[str, Any]], tmp_path: Path
) -> None:
    """Each alert fires for the job that breaks its threshold, and not before, not for the
    healthy job, not for another namespace's job (promtool test rules)."""
    _rule_file(tmp_path, rules[("cloud-h100", NS)], annotations=False)
    tests = tmp_path / "tests.yaml"
    unit = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": [UNIT_TESTS]}
    tests.write_text(yaml.safe_dump(unit, sort_keys=False))
    result = _promtool("test", "rules", str(tests))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_trainer_v2_jobs_fail_through_kube_state_metrics(
    rules: dict[tuple[str, str], dict[str, Any]], tmp_path: Path
) -> None:
    """On a Trainer v2 cluster a TrainJob runs as JobSet batch Jobs `<trainjob>-<rjob>-<n>`:
    the failed one is the alert, another team's batch Job is not."""
    _rule_file(tmp_path, rules[("onprem-h200", "ml-vision")], annotations=False)
    failed = {"namespace": "ml-vision", "condition": "true"}
    unit = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [
                    _series(
                        "kube_job_failed", "0x10 1x10", job_name="resnet50-ddp-node-0", **failed
                    ),
                    _series("kube_job_failed", "1x20", job_name="nightly-backup", **failed),
                ],
                "alert_rule_test": [
                    _fires("TrainingJobFailed", "5m"),
                    _fires(
                        "TrainingJobFailed",
                        "15m",
                        {
                            "namespace": "ml-vision",
                            "job_name": "resnet50-ddp-node-0",
                            "severity": "critical",
                        },
                    ),
                ],
            }
        ],
    }
    tests = tmp_path / "tests.yaml"
    tests.write_text(yaml.safe_dump(unit, sort_keys=False))
    result = _promtool("test", "rules", str(tests))
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_fraction_of_a_minute_renders_whole_seconds(tmp_path: Path) -> None:
    """`stalledMinutes: 0.25` (the local test's 15 s, tests/runlocal/test_stalled_alert.py) is
    `> 15` in the expression, and the summary says 0.25 minutes, not 0.25000."""
    root = copy_inputs(REPO, tmp_path / "repo")
    for profile in (root / "clusters").glob("*.yaml"):
        profile.write_text(profile.read_text() + "\nmonitoring:\n  stalledMinutes: 0.25\n")
    repo = load_repository(root)
    (rule, *_) = [
        obj
        for obj in monitoring_objects(repo, repo.clusters["cloud-h100"])
        if obj["kind"] == "PrometheusRule"
    ]
    (stalled,) = [r for r in rule["spec"]["groups"][0]["rules"] if r["alert"] == "TrainingStalled"]
    assert stalled["expr"].endswith(") > 15")
    assert "for 0.25 minutes" in stalled["annotations"]["summary"]
