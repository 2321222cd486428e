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
- the operators' job conditions (`type: Failed, status: "True"`, as the Training Operator
  v1.9.4, the MPI Operator v0.8 and the Trainer v2.3 write them), exported by
  kube-state-metrics v2.17 under the configuration trainops renders
  (`gitops/monitoring/<cluster>.yaml`): the series are computed from job objects by the port
  of its code in `ksm_port.py` (held to its own tests in test_ksm_port.py).
The thresholds come from the profile, which sets them away from the defaults here.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.render import ksm_port
from tests.tools import REPO, add_monitoring, copy_inputs, require_tool
from trainops.jobspec.load import load_repository
from trainops.render import kube_state_metrics as ksm
from trainops.render.delivered import monitoring_objects, targets_on
from trainops.render.objects import job_objects

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
        add_monitoring(profile, THRESHOLDS)
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
        assert "5 rules found" in result.stdout, result.stdout


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


RUNNING = [{"type": "Created", "status": "True"}, {"type": "Running", "status": "True"}]
FAILED = [
    {"type": "Created", "status": "True"},
    {"type": "Running", "status": "False"},
    {"type": "Failed", "status": "True", "reason": "PyTorchJobFailed"},
]
SUCCEEDED = [
    {"type": "Created", "status": "True"},
    {"type": "Running", "status": "False"},
    {"type": "Succeeded", "status": "True"},
]


def _job(api: str, kind: str, name: str, namespace: str, conditions: list[Any]) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace}
    return {"apiVersion": api, "kind": kind, "metadata": meta, "status": {"conditions": conditions}}


def _exported(
    kinds: list[tuple[str, str]], timeline: list[tuple[int, list[dict[str, Any]]]], end: int = 40
) -> list[dict[str, str]]:
    """The series kube-state-metrics exports, minute by minute, under the configuration
    trainops renders for `kinds`: `timeline` is (from minute, the job objects then)."""
    (chart,) = ksm.values(kinds).values()
    resources = {
        (f"{r['groupVersionKind']['group']}/{r['groupVersionKind']['version']}",
         r["groupVersionKind"]["kind"]): r
        for r in chart["customResourceState"]["config"]["spec"]["resources"]
    }  # fmt: skip
    samples: dict[tuple[str, tuple[tuple[str, str], ...]], dict[int, float]] = {}
    for at, (start, objects) in enumerate(timeline):
        stop = timeline[at + 1][0] if at + 1 < len(timeline) else end + 1
        for obj in objects:
            for name, labels, value in ksm_port.series(
                resources[obj["apiVersion"], obj["kind"]], obj
            ):
                for minute in range(start, stop):
                    samples.setdefault((name, tuple(sorted(labels.items()))), {})[minute] = value
    return [
        _series(name, " ".join(f"{v[t]:g}" if t in v else "_" for t in range(end + 1)),
                **dict(labels))
        for (name, labels), v in sorted(samples.items())
    ]  # fmt: skip


V1 = [
    ("kubeflow.org/v1", "PyTorchJob"),
    ("kubeflow.org/v1", "TFJob"),
    ("kubeflow.org/v2beta1", "MPIJob"),
]


def _failing_jobs() -> list[dict[str, str]]:
    llm = ("kubeflow.org/v1", "PyTorchJob", "llm-finetune", NS)
    hvd = ("kubeflow.org/v2beta1", "MPIJob", "horovod-training", NS)
    tf = ("kubeflow.org/v1", "TFJob", "tf-distributed", NS)
    foreign = ("kubeflow.org/v1", "PyTorchJob", "someone-elses", NS)
    other_ns = ("kubeflow.org/v1", "PyTorchJob", "resnet50-ddp", "ml-vision")

    def at(llm_c: list[Any], hvd_c: list[Any], tf_c: list[Any]) -> list[dict[str, Any]]:
        return [_job(*llm, llm_c), _job(*hvd, hvd_c), _job(*tf, tf_c), _job(*foreign, FAILED),
                _job(*other_ns, FAILED)]  # fmt: skip

    return _exported(
        V1,
        [(0, at(RUNNING, RUNNING, RUNNING)), (20, at(FAILED, RUNNING, SUCCEEDED)),
         (30, at(FAILED, FAILED, SUCCEEDED))],
    )  # fmt: skip


def _failed_labels(job: str, kind: str, namespace: str = NS) -> dict[str, str]:
    return {"namespace": namespace, "training_job": job, "customresource_kind": kind,
            "severity": "critical"}  # fmt: skip


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
        *_failing_jobs(),
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
        # Failed: llm-finetune's Failed condition from minute 20 (backoffLimit: no counter),
        # horovod-training's (MPI Operator) from minute 30; tf-distributed succeeded, another
        # team's PyTorchJob and another namespace's failed job are not this rule's.
        _fires("TrainingJobFailed", "15m"),
        _fires("TrainingJobFailed", "25m", _failed_labels("llm-finetune", "PyTorchJob")),
        _fires(
            "TrainingJobFailed",
            "35m",
            _failed_labels("horovod-training", "MPIJob"),
            _failed_labels("llm-finetune", "PyTorchJob"),
        ),
        # kube-state-metrics exports the namespace's job conditions: nothing missing.
        _fires("TrainingJobConditionsMissing", "30m"),
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


def test_trainer_v2_jobs_fail_through_their_condition(
    rules: dict[tuple[str, str], dict[str, Any]], tmp_path: Path
) -> None:
    """On a Trainer v2 cluster the TrainJob's own `Failed` condition (Trainer v2.3
    `TrainJobFailed`) is the alert: a JobSet restarting a failed batch Job is not a failed job."""
    _rule_file(tmp_path, rules[("onprem-h200", "ml-vision")], annotations=False)
    kinds = [("trainer.kubeflow.org/v1alpha1", "TrainJob")]
    complete = [{"type": "Complete", "status": "True"}]
    failed = [{"type": "Failed", "status": "True", "reason": "FailedJobs"}]
    series = _exported(
        kinds,
        [
            (0, [_job(kinds[0][0], "TrainJob", "resnet50-ddp", "ml-vision", [])]),
            (10, [_job(kinds[0][0], "TrainJob", "resnet50-ddp", "ml-vision", failed),
                  _job(kinds[0][0], "TrainJob", "nightly", "ml-vision", complete)]),
        ],
        end=20,
    )  # fmt: skip
    unit = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    _fires("TrainingJobFailed", "5m"),
                    _fires(
                        "TrainingJobFailed",
                        "15m",
                        _failed_labels("resnet50-ddp", "TrainJob", "ml-vision"),
                    ),
                ],
            }
        ],
    }
    tests = tmp_path / "tests.yaml"
    tests.write_text(yaml.safe_dump(unit, sort_keys=False))
    result = _promtool("test", "rules", str(tests))
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_kube_state_metrics_without_the_configuration_is_reported(
    rules: dict[tuple[str, str], dict[str, Any]], tmp_path: Path
) -> None:
    """Without trainops' kube-state-metrics values no job condition is exported and
    TrainingJobFailed can never fire: while jobs train, that is an alert of its own."""
    _rule_file(tmp_path, rules[("cloud-h100", NS)], annotations=False)
    unit = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [_series("trainops_trainer_step", "0+1x40", **LLM)],
                "alert_rule_test": [
                    _fires("TrainingJobConditionsMissing", "10m"),
                    _fires(
                        "TrainingJobConditionsMissing",
                        "20m",
                        {"namespace": NS, "severity": "warning"},
                    ),
                ],
            }
        ],
    }
    tests = tmp_path / "tests.yaml"
    tests.write_text(yaml.safe_dump(unit, sort_keys=False))
    result = _promtool("test", "rules", str(tests))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_rules_and_service_monitors_carry_the_prometheus_selection_labels(
    rules: dict[tuple[str, str], dict[str, Any]],
) -> None:
    """Issue 33 item 4: a default kube-prometheus-stack selects ServiceMonitors and
    PrometheusRules by `release`; the profile's `monitoring.prometheusLabels` is on both."""
    repo = load_repository(REPO)
    for cluster in repo.clusters.values():
        assert cluster.watch.prometheus_labels == {"release": "kube-prometheus-stack"}
        for job, target in targets_on(repo, cluster):
            (monitor,) = [
                o for o in job_objects(job, cluster, target) if o["kind"] == "ServiceMonitor"
            ]
            assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert all(
        r["metadata"]["labels"]["release"] == "kube-prometheus-stack" for r in rules.values()
    )


def test_a_fraction_of_a_minute_renders_whole_seconds(tmp_path: Path) -> None:
    """`stalledMinutes: 0.25` (the local test's 15 s, tests/runlocal/test_stalled_alert.py) is
    `> 15` in the expression, and the summary says 0.25 minutes, not 0.25000."""
    root = copy_inputs(REPO, tmp_path / "repo")
    for profile in (root / "clusters").glob("*.yaml"):
        add_monitoring(profile, "  stalledMinutes: 0.25")
    repo = load_repository(root)
    (rule, *_) = [
        obj
        for obj in monitoring_objects(repo, repo.clusters["cloud-h100"])
        if obj["kind"] == "PrometheusRule"
    ]
    (stalled,) = [r for r in rule["spec"]["groups"][0]["rules"] if r["alert"] == "TrainingStalled"]
    assert stalled["expr"].endswith(") > 15")
    assert "for 0.25 minutes" in stalled["annotations"]["summary"]
