"""Prometheus metrics, served by LOCAL_RANK 0 of each pod on the configured port.

One endpoint per pod (not per process): the Service/PodMonitor selects pods, and rank-local
numbers of the other local ranks would only repeat rank 0's (data parallel ranks step together).
Names are documented in docs/trainer.md; values are job-wide (global samples per second).
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

PREFIX = "trainops_trainer"
# Step-time buckets from 10 ms (tiny CPU tests) to 2 min (a 13B ZeRO-3 step with accumulation).
STEP_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
# Checkpoint buckets up to 30 min: a 13B model with optimizer state is ~200 GB on shared storage.
CHECKPOINT_BUCKETS = (0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800)


class TrainerMetrics:
    """The documented metric set; `serve()` opens the HTTP endpoint."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.samples_per_second = Gauge(
            f"{PREFIX}_samples_per_second",
            "Global training samples per second (last step)",
            registry=r,
        )
        self.tokens_per_second = Gauge(
            f"{PREFIX}_tokens_per_second",
            "Global training tokens per second (language models)",
            registry=r,
        )
        self.step_seconds = Histogram(
            f"{PREFIX}_step_duration_seconds",
            "Wall time of one optimizer step",
            buckets=STEP_BUCKETS,
            registry=r,
        )
        self.loss = Gauge(
            f"{PREFIX}_loss", "Training loss of the last step (mean over ranks)", registry=r
        )
        self.learning_rate = Gauge(f"{PREFIX}_learning_rate", "Current learning rate", registry=r)
        self.step = Gauge(
            f"{PREFIX}_step", "Optimizer steps completed (global, survives resume)", registry=r
        )
        self.last_step_timestamp = Gauge(
            f"{PREFIX}_last_step_timestamp_seconds",
            "Unix time at which this pod's rank completed its last optimizer step (0 until the"
            " first step of this process); a hang shows as a value that stops moving",
            registry=r,
        )
        self.samples = Counter(
            f"{PREFIX}_samples",
            "Samples trained on by this process's job since it started (all ranks)",
            registry=r,
        )
        self.checkpoint_seconds = Histogram(
            f"{PREFIX}_checkpoint_duration_seconds",
            "Wall time of a checkpoint save",
            buckets=CHECKPOINT_BUCKETS,
            registry=r,
        )
        self.restarts = Gauge(
            f"{PREFIX}_restarts",
            "Elastic restarts of the worker group (TORCHELASTIC_RESTART_COUNT)",
            registry=r,
        )
        self.world_size = Gauge(f"{PREFIX}_world_size", "Processes in the job", registry=r)

    def serve(self, port: int) -> None:
        """Start the endpoint on all interfaces (the pod IP is what Prometheus scrapes)."""
        start_http_server(port, addr="0.0.0.0", registry=self.registry)
