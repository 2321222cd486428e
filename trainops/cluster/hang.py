"""Is a job whose pods all run actually training? A hung job looks Running to Kubernetes.

Evidence, in the order it is trusted:
1. the trainer's watchdog: a line with the prefix `trainops-watchdog:` (it logs every
   rank's stacks and exits when no step completed within its window);
2. the trainer's gauge `trainops_trainer_last_step_timestamp_seconds`, read from each pod's
   metrics port through the API server's pod proxy: the newest older than the window is a
   hang, and the pod with the oldest is the one behind;
3. the last `{"event": "step", ...}` line the trainer logs (trainer/train.py `log_event`,
   JSON on stdout), timed by the kubelet's log timestamps (`timestamps=true`): no step for
   longer than the stall window is a hang;
4. no step at all, and every pod's last lines are NCCL set-up or torchrun rendezvous waits
   older than the window: the job never got past initialisation.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass

from trainops.cluster import nccl_log
from trainops.cluster.logs import Log

WATCHDOG_PREFIX = "trainops-watchdog:"
# The trainer's gauge of the Unix time of its last completed step (issue 24 item 4).
LAST_STEP_GAUGE = "trainops_trainer_last_step_timestamp_seconds"
_GAUGE_LINE = re.compile(rf"^{LAST_STEP_GAUGE}(?:{{[^}}]*}})?\s+(\S+)")
_RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")
# No completed step for this long is a hang. Longer than a slow step plus the trainer's
# log interval, shorter than torch's NCCL collective timeout that the trainer sets (30 min),
# after which the ranks would fail on their own.
DEFAULT_STALL_SECONDS = 900


@dataclass(frozen=True)
class Hang:
    cause: str
    evidence: list[str]


def _time(stamp: str) -> dt.datetime | None:
    """The kubelet's RFC 3339 time (nanoseconds cut to the microseconds Python reads)."""
    found = _RFC3339.match(stamp)
    if found is None:
        return None
    head, fraction, zone = found.groups()
    zone = "+00:00" if zone == "Z" else zone
    return dt.datetime.fromisoformat(f"{head}.{(fraction or '0')[:6]:0<6}{zone}")


def _last_step(log: Log) -> tuple[int, dt.datetime | None] | None:
    for line, stamp in zip(reversed(log.lines), reversed(log.times), strict=False):
        if '"event": "step"' not in line:
            continue
        try:
            step = int(json.loads(line[line.index("{") :])["step"])
        except (ValueError, KeyError, TypeError, RecursionError):  # a pod's line: anything
            continue
        return step, _time(stamp)
    return None


def _age(seconds: float) -> str:
    return f"{int(seconds // 60)} min" if seconds >= 120 else f"{int(seconds)} s"


def last_step_gauge(metrics: str) -> float | None:
    """The value of LAST_STEP_GAUGE in a Prometheus text exposition, if positive (0 means
    no step yet)."""
    for line in metrics.splitlines():
        found = _GAUGE_LINE.match(line)
        if found:
            value = float(found.group(1))
            return value if value > 0 else None
    return None


def _from_gauges(gauges: dict[str, float], now: dt.datetime, stall_seconds: int) -> Hang | None:
    newest = max(gauges.values())
    idle = now.timestamp() - newest
    if idle <= stall_seconds:
        return None
    when = dt.datetime.fromtimestamp(newest, dt.UTC).isoformat()
    behind = min(gauges, key=lambda pod: (gauges[pod], pod))
    evidence = [
        f"{pod}: {LAST_STEP_GAUGE} {dt.datetime.fromtimestamp(t, dt.UTC).isoformat()}"
        for pod, t in sorted(gauges.items())
    ]
    return Hang(
        f"Hung: all pods run but no training step completed for {_age(idle)} (last step at"
        f" {when}, window {_age(stall_seconds)}, from {LAST_STEP_GAUGE}); pod {behind} is"
        " furthest behind",
        evidence,
    )


def detect(
    logs: list[Log], gauges: dict[str, float], now: dt.datetime, stall_seconds: int
) -> Hang | None:
    """The hang the running pods' current logs and last-step gauges show, or None."""
    watchdog = [
        f"{log.pod}: {line.strip()}"
        for log in logs
        for line in log.lines
        if WATCHDOG_PREFIX in line
    ]
    if watchdog:
        return Hang(f"Hung: the trainer's watchdog reports no progress: {watchdog[-1]}", watchdog)
    if gauges:  # the trainer's own clock, per pod: better than rank 0's periodic step line
        return _from_gauges(gauges, now, stall_seconds)
    evidence: list[str] = []
    quiet: list[tuple[float, str]] = []
    for log in logs:
        last = next((_time(t) for t in reversed(log.times) if t), None)
        if last is not None:
            quiet.append(((now - last).total_seconds(), log.pod))
    behind = f"; pod {max(quiet)[1]} has been silent longest" if quiet else ""
    steps = [(found, log.pod) for log in logs if (found := _last_step(log)) is not None]
    if steps:
        (step, when), pod = max(steps, key=lambda s: s[0][0])
        if when is None or (now - when).total_seconds() <= stall_seconds:
            return None
        idle = (now - when).total_seconds()
        evidence.append(f"{pod}: last step {step} at {when.isoformat()} ({_age(idle)} ago)")
        evidence += [f"{p}: last log line {_age(s)} ago" for s, p in sorted(quiet)]
        return Hang(
            f"Hung: all pods run but no training step completed for {_age(idle)} (last step"
            f" {step} at {when.isoformat()}, window {_age(stall_seconds)}){behind}",
            evidence,
        )
    waits = {log.pod: nccl_log.setting_up(log.lines) for log in logs}
    if logs and all(waits.values()) and quiet and min(quiet)[0] > stall_seconds:
        for pod, tail in sorted(waits.items()):
            evidence += [f"{pod}: {line.strip()}" for line in tail]
        return Hang(
            "Hung: all pods run but none has finished NCCL / rendezvous set-up for"
            f" {_age(min(quiet)[0])} (no step yet){behind}; last lines: {evidence[-1]}",
            evidence,
        )
    return None
