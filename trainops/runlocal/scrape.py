"""A local run as Prometheus would scrape it on the cluster: each replica's trainer metrics
endpoint (the container port named `metrics`, mapped to a free local port by the plan) as a
scrape target carrying the labels prometheus-operator gives the targets of the job's
ServiceMonitor, so the training alerts `trainops render` delivers read the local series exactly
as they read the cluster's (`TrainingStalled` takes the job from the `service` label).

The targets are written in the format of Prometheus' file-based service discovery
(`file_sd_configs`: a JSON list of `{"targets": [...], "labels": {...}}`), which Prometheus
re-reads when the file changes; docs/run-local.md shows the scrape config that uses it.

Labels, as prometheus-operator v0.93 sets them for a ServiceMonitor endpoint
(pkg/prometheus/promcfg.go, see trainops/facts/monitoring.py): `namespace`, `service` (the
Service's name, `<job>-metrics`), `job` (also the Service's name: no `jobLabel` is rendered),
`pod` (the pod's name), `endpoint` (the Service port's name). Pod names are those run-local
gives its replicas (`<job>-master-0`), the Training Operator's names; a TrainJob's JobSet pods
are named otherwise on the cluster.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from trainops.core.errors import InputError, Problem
from trainops.facts.monitoring import METRICS_PORT_NAME, METRICS_SERVICE_SUFFIX
from trainops.runlocal.adapt import LOCAL_HOST
from trainops.runlocal.plan import Plan


def targets(plan: Plan, namespace: str) -> list[dict[str, Any]]:
    """One file_sd target group per replica that has a metrics port, in replica order."""
    service = f"{plan.job}{METRICS_SERVICE_SUFFIX}"
    groups: list[dict[str, Any]] = []
    for launch in plan.launches:
        port = launch.ports.get(METRICS_PORT_NAME)
        if port is None:
            continue
        groups.append(
            {
                "targets": [f"{LOCAL_HOST}:{port}"],
                "labels": {
                    "namespace": namespace,
                    "service": service,
                    "job": service,
                    "pod": launch.replica.pod_name(plan.job),
                    "endpoint": METRICS_PORT_NAME,
                },
            }
        )
    return groups


def endpoints(plan: Plan) -> list[str]:
    """`master-0 http://127.0.0.1:40123/metrics`, one line per replica serving metrics."""
    return [
        f"{launch.name} http://{LOCAL_HOST}:{launch.ports[METRICS_PORT_NAME]}/metrics"
        for launch in plan.launches
        if METRICS_PORT_NAME in launch.ports
    ]


def check_writable(path: Path) -> None:
    """Refuse a targets file whose directory does not exist, before anything starts."""
    if not path.parent.is_dir():
        raise InputError(
            Problem(
                "--prometheus-targets",
                None,
                None,
                f"{path.parent} is not a directory: create it, or name a file in an existing one",
            )
        )


def write_targets(path: Path, groups: list[dict[str, Any]]) -> None:
    """Write the file whole or not at all: Prometheus re-reads it on every change, and a half
    written file would be read as invalid (its targets dropped until the next change)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(groups, out, indent=2, sort_keys=True)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
