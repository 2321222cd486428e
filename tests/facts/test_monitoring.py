"""The metric names the alerts, the dashboard and `trainops top` query are the ones the trainer
serves (trainer/metrics.py cannot import trainops, so the names are written twice)."""

from __future__ import annotations

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from tests.tools import require_module
from trainops.facts import monitoring


def test_queried_trainer_metrics_are_served() -> None:
    metrics = require_module("trainer.metrics")
    served = metrics.TrainerMetrics()
    served.step_seconds.observe(0.5)
    text = generate_latest(served.registry).decode()
    names = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    assert metrics.PREFIX == monitoring.TRAINER_PREFIX
    for name in (
        monitoring.SAMPLES_PER_SECOND,
        monitoring.TOKENS_PER_SECOND,
        f"{monitoring.STEP_DURATION}_bucket",
        monitoring.LOSS,
        monitoring.STEP,
        monitoring.RESTARTS,
        monitoring.LAST_STEP_TIMESTAMP,
    ):
        assert name in names, name
