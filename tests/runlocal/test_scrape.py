"""run-local's Prometheus targets (`--prometheus-targets`): each replica's metrics endpoint,
labelled as prometheus-operator v0.93 labels the targets of the job's ServiceMonitor
(pkg/prometheus/promcfg.go: `namespace`, `service`, `pod`, `job` = the Service's name,
`endpoint` = its port's name), in Prometheus' file_sd format. The real Prometheus reads them in
tests/runlocal/test_stalled_alert.py; these check the file itself, without starting anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tools import REPO
from trainops.cli import main
from trainops.runlocal import scrape
from trainops.runlocal.options import Options
from trainops.runlocal.plan import make_plan
from trainops.runlocal.source import load_built_job

pytestmark = pytest.mark.usefixtures("needs_kustomize")


def test_each_replica_is_a_target_on_the_port_its_trainer_serves(tmp_path: Path) -> None:
    built = load_built_job(REPO, "resnet50-ddp", "cloud-h100")
    plan = make_plan(built, Options(), tmp_path)
    groups = scrape.targets(plan, "ml-vision")
    served = [launch.env["TRAINOPS_METRICS_PORT"] for launch in plan.launches]
    assert groups == [
        {
            "targets": [f"127.0.0.1:{port}"],
            "labels": {
                "namespace": "ml-vision",
                "service": "resnet50-ddp-metrics",
                "job": "resnet50-ddp-metrics",
                "pod": f"resnet50-ddp-{replica}",
                "endpoint": "metrics",
            },
        }
        for replica, port in zip(("master-0", "worker-0"), served, strict=True)
    ]
    assert scrape.endpoints(plan) == [
        f"{name} http://127.0.0.1:{port}/metrics"
        for name, port in zip(("master-0", "worker-0"), served, strict=True)
    ]


def test_the_targets_file_is_written_whole(tmp_path: Path) -> None:
    groups = [{"targets": ["127.0.0.1:1"], "labels": {"pod": "a"}}]
    path = tmp_path / "targets.json"
    scrape.write_targets(path, groups)
    assert json.loads(path.read_text()) == groups
    assert [p.name for p in tmp_path.iterdir()] == ["targets.json"]


def test_a_targets_file_in_a_missing_directory_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "nowhere" / "targets.json"
    code = main(["--root", str(REPO), "run-local", "resnet50-ddp", "--cluster", "cloud-h100",
                 "--prometheus-targets", str(target)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert "--prometheus-targets" in err and "is not a directory" in err
    assert "Traceback" not in err
    assert not target.parent.exists()
