"""`trainops top JOB`: each pod of a running job as Prometheus sees it now: GPU utilisation and
memory (DCGM exporter, joined on namespace/pod), samples/s, loss, step and the age of the last
completed step (the trainer's metrics, scraped through the job's `<job>-metrics` Service).

The metric names and labels are facts/monitoring.py's, the same the alerts and the dashboard
query, so what `top` shows is what they judge.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from trainops.cluster.prometheus import Prometheus
from trainops.core.text import one_line
from trainops.facts import monitoring as m


@dataclass
class PodRow:
    pod: str
    gpu_util_percent: float | None = None
    gpu_memory_mib: float | None = None
    samples_per_second: float | None = None
    loss: float | None = None
    step: float | None = None
    last_step_age_seconds: float | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def queries(namespace: str, job: str) -> dict[str, str]:
    """PodRow field -> the PromQL that gives it, one sample per pod."""
    own = f'namespace="{namespace}", service="{job}{m.METRICS_SERVICE_SUFFIX}"'
    pods = f"group by (namespace, pod) ({m.STEP}{{{own}}})"

    def gpu(metric: str, how: str) -> str:
        joined = f'{metric}{{namespace="{namespace}"}} * on (namespace, pod) group_left {pods}'
        return f"{how} by (pod) ({joined})"

    return {
        "gpu_util_percent": gpu(m.DCGM_GPU_UTIL, "avg"),
        "gpu_memory_mib": gpu(m.DCGM_FB_USED, "sum"),
        "samples_per_second": f"max by (pod) ({m.SAMPLES_PER_SECOND}{{{own}}})",
        "loss": f"max by (pod) ({m.LOSS}{{{own}}})",
        "step": f"max by (pod) ({m.STEP}{{{own}}})",
        "last_step_age_seconds": f"time() - max by (pod) ({m.LAST_STEP_TIMESTAMP}{{{own}}} > 0)",
    }


def collect(prometheus: Prometheus, namespace: str, job: str) -> list[PodRow]:
    """One row per pod that has any of the metrics, by pod name."""
    rows: dict[str, PodRow] = {}
    for field, promql in queries(namespace, job).items():
        for sample in prometheus.query(promql):
            pod = sample.labels.get("pod")
            if pod:
                setattr(rows.setdefault(pod, PodRow(pod)), field, sample.value)
    return [rows[name] for name in sorted(rows)]


COLUMNS = (
    ("POD", "pod", "{}"),
    ("GPU%", "gpu_util_percent", "{:.0f}"),
    ("GPU MEM", "gpu_memory_mib", "{:.0f}Mi"),
    ("SAMPLES/S", "samples_per_second", "{:.1f}"),
    ("LOSS", "loss", "{:.4g}"),
    ("STEP", "step", "{:.0f}"),
    ("LAST STEP", "last_step_age_seconds", "{:.0f}s ago"),
)


def table(rows: list[PodRow]) -> str:
    """The rows as a plain-text table (`-` where a metric has no sample)."""
    cells = [[title for title, _, _ in COLUMNS]]
    for row in rows:
        values = row.to_dict()
        cells.append(  # labels from Prometheus: inert on one line
            [
                "-" if values[key] is None else one_line(fmt.format(values[key]))
                for _, key, fmt in COLUMNS
            ]
        )
    widths = [max(len(r[i]) for r in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines) + "\n"
