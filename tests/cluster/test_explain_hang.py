"""`explain` on a job that Kubernetes sees Running: is it training, and over which network?

Logs as the kubelet keeps them (each line with its RFC 3339 time, served without it
unless `timestamps=true` is asked): the trainer's JSON step lines (trainer/train.py
`log_event`), the watchdog's `trainops-watchdog:` line, torchrun's rendezvous waits and
NCCL's `NCCL_DEBUG=INFO` lines. The NCCL lines are our own, written in NCCL 2.x's format
(`<host>:<pid>:<tid> [<dev>] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ...`, then
`NCCL INFO Using network IB`; with no usable HCA `NET/Socket : Using [0]eth0:...` and
`Using network Socket`), as NCCL's issue tracker shows them for 2.x releases.
On main each of these jobs read `Running: 2/2 pods running`, exit 0.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from tests.cluster.conftest import built, find, live, pod, response, run_cli
from tests.cluster.test_explain import JOB, _explain
from trainops.cluster.emulator import reply
from trainops.cluster.emulator_thread import RunningEmulator


def _stamped(lines: list[tuple[float, str]], now: dt.datetime) -> str:
    """Log lines `(minutes ago, text)` with the kubelet's nanosecond timestamps."""
    out = []
    for minutes, text in lines:
        when = now - dt.timedelta(minutes=minutes)
        out.append(f"{when.strftime('%Y-%m-%dT%H:%M:%S')}.{when.microsecond:06d}123Z {text}")
    return "\n".join(out) + "\n"


def _step(step: int) -> str:
    """The trainer's step line (trainer/train.py `log_event("step", ...)`)."""
    fields = {"epoch": 0, "event": "step", "loss": 1.93, "lr": 0.0001, "step": step,
              "samples_per_second": 812.5, "step_seconds": 0.315}  # fmt: skip
    return json.dumps(fields, sort_keys=True)


def _running(
    api: RunningEmulator, repo: Path, logs: dict[str, str], cluster: str = "cloud-h100"
) -> None:
    """PyTorchJob resnet50-ddp Running with two running pods whose current logs are `logs`."""
    job = live(
        find(built(repo, cluster), "PyTorchJob", JOB), response("pytorchjob-status", "running")
    )
    api.add(job, pod(JOB, "master", 0, response("pods", "running")),
            pod(JOB, "worker", 0, response("pods", "running")))  # fmt: skip
    stored = {("ml-vision", f"{JOB}-{p}", "pytorch", False): text for p, text in logs.items()}
    api.call(lambda e: e.logs.update(stored))


def test_no_step_for_longer_than_the_window_is_hung(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.UTC)
    _running(api, repo, {
        "master-0": _stamped([(62, _step(1180)), (41, _step(1200))], now),
        "worker-0": _stamped([(60, "loading shard 3"), (40.5, "saving nothing")], now),
    })  # fmt: skip
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    first = out.splitlines()[0]
    assert first.startswith("Hung: all pods run but no training step completed for 41 min"
                            " (last step 1200 at ")  # fmt: skip
    assert first.endswith(", window 15 min); pod resnet50-ddp-master-0 has been silent longest")
    assert "  resnet50-ddp-worker-0: last log line 40 min ago" in out
    log_reads = [dict(r.params) for r in api.requests if r.url.path.endswith("/log")]
    assert {"container": "pytorch", "timestamps": "true", "tailLines": "2000"} in log_reads


def test_a_recent_step_is_running(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.UTC)
    _running(api, repo, {"master-0": _stamped([(62, _step(1180)), (3, _step(1200))], now)})
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert (code, out.splitlines()[0]) == (0, "Running: 2/2 pods running")
    # The window is the user's: 2 minutes makes the same job Hung.
    code, out, _ = _explain(capsys, repo, kubeconfig, "--stall-after", "120")
    assert code == 1 and out.startswith("Hung: all pods run but no training step completed")


def test_the_trainers_watchdog_line_is_named_first(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.UTC)
    watchdog = "trainops-watchdog: rank 1: no step for 600 s (last step 1200); dumping stacks"
    _running(api, repo, {
        "master-0": _stamped([(3, _step(1200))], now),
        "worker-0": _stamped([(1, watchdog)], now),
    })  # fmt: skip
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.splitlines()[0] == (
        f"Hung: the trainer's watchdog reports no progress: resnet50-ddp-worker-0: {watchdog}"
    )


MASTER = "resnet50-ddp-master-0:57:90 [0]"  # NCCL's `<host>:<pid>:<tid> [<cuda dev>]`


def test_stuck_in_nccl_init_and_rendezvous_is_hung(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.UTC)
    _running(api, repo, {
        "master-0": _stamped([
            (50, f"{MASTER} NCCL INFO Bootstrap : Using eth0:10.244.3.20<0>"),
            (49, f"{MASTER} NCCL INFO NET/Socket : Using [0]eth0:10.244.3.20<0>"),
            (49, f"{MASTER} NCCL INFO Using network Socket"),
        ], now),
        "worker-0": _stamped([
            (48, "[W1123 08:01:12.000000000 socket.cpp:755] [c10d] The client socket has"
                 " failed to connect to [resnet50-ddp-master-0]:23456 (errno: 110 -"
                 " Connection timed out)."),
        ], now),
    })  # fmt: skip
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith("Hung: all pods run but none has finished NCCL / rendezvous set-up"
                            " for 48 min (no step yet)")  # fmt: skip
    assert "resnet50-ddp-worker-0: [W1123 08:01:12.000000000 socket.cpp:755] [c10d]" in first
    assert "  NCCL network: resnet50-ddp-master-0: NET/Socket [0]eth0:10.244.3.20<0>" in out


NCCL_IB = [
    "resnet50-ddp-{pod}:61:61 [0] NCCL INFO Bootstrap : Using net1:192.168.60.{ip}<0>",
    "resnet50-ddp-{pod}:61:61 [0] NCCL INFO NCCL_IB_HCA set to mlx5_0,mlx5_1",
    "resnet50-ddp-{pod}:61:95 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ;"
    " OOB net1:192.168.60.{ip}<0>",
    "resnet50-ddp-{pod}:61:95 [0] NCCL INFO Using network IB",
]
NCCL_SOCKET = [
    "resnet50-ddp-{pod}:61:61 [0] NCCL INFO Bootstrap : Using eth0:10.244.4.{ip}<0>",
    "resnet50-ddp-{pod}:61:95 [0] NCCL INFO NET/IB : No device found.",
    "resnet50-ddp-{pod}:61:95 [0] NCCL INFO NET/Socket : Using [0]eth0:10.244.4.{ip}<0>",
    "resnet50-ddp-{pod}:61:95 [0] NCCL INFO Using network Socket",
]


def _nccl(lines: list[str], pod: str, ip: int, now: dt.datetime) -> str:
    return _stamped([(30, line.format(pod=pod, ip=ip)) for line in lines] + [(1, _step(900))], now)


def test_socket_fallback_on_an_rdma_cluster_is_named_first(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.UTC)
    _running(api, repo, {
        "master-0": _nccl(NCCL_IB, "master-0", 11, now),
        "worker-0": _nccl(NCCL_SOCKET, "worker-0", 12, now),
    }, cluster="onprem-a100")  # fmt: skip
    code, out, _ = run_cli(
        capsys, "--root", str(repo), "explain", JOB, "--cluster", "onprem-a100",
        "--kubeconfig", str(kubeconfig), "--context", "trainops-test",
    )  # fmt: skip
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith(
        "SocketFallback: NCCL runs over TCP sockets, not RDMA, on pod(s) resnet50-ddp-worker-0"
        " of RDMA cluster onprem-a100"
    )
    assert (
        "  NCCL network: resnet50-ddp-master-0: NET/IB [0]mlx5_0:1/IB [1]mlx5_1:1/IB ;"
        " OOB net1:192.168.60.11<0>" in lines
    )
    assert "  NCCL network: resnet50-ddp-worker-0: NET/Socket [0]eth0:10.244.4.12<0>" in lines


def test_sockets_on_a_tcp_cluster_are_no_finding(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.UTC)
    _running(api, repo, {"master-0": _nccl(NCCL_SOCKET, "master-0", 11, now)})
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert (code, out.splitlines()[0]) == (0, "Running: 2/2 pods running")
    assert "  NCCL network: resnet50-ddp-master-0: NET/Socket [0]eth0:10.244.4.11<0>" in out
    assert "SocketFallback" not in out


def _metrics(last_step: float) -> str:
    """The trainer's /metrics as prometheus_client (the trainer's library) exposes it."""
    registry = CollectorRegistry()
    gauge = Gauge(
        "trainops_trainer_last_step_timestamp_seconds",
        "Unix time of the last completed optimizer step",
        registry=registry,
    )
    gauge.set(last_step)
    return generate_latest(registry).decode()


def _with_metrics(api: RunningEmulator, gauges: dict[str, float]) -> None:
    """Give the running pods the trainer's metrics port (as trainops renders it) and serve
    each pod's gauge through the emulator's pod proxy."""
    for name in ("master-0", "worker-0"):
        replica, index = name.split("-")
        p = pod(JOB, replica, int(index), response("pods", "running"))
        p["spec"]["containers"][0]["ports"] = [
            {"containerPort": 9090, "name": "metrics", "protocol": "TCP"}
        ]
        api.add(p)
    served = {("ml-vision", f"{JOB}-{p}:9090", "metrics"): _metrics(v) for p, v in gauges.items()}
    api.call(lambda e: e.proxied.update(served))


def test_the_last_step_gauge_names_the_rank_behind(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gauge is the trainer's own clock per pod: rank 0's step lines (here fresh, as
    its log was just written by a rank still waiting in all-reduce) do not hide the hang."""
    now = dt.datetime.now(dt.UTC)
    _running(api, repo, {"master-0": _stamped([(2, _step(1200))], now)})
    ago = {"master-0": 31.0, "worker-0": 47.0}
    _with_metrics(api, {p: (now - dt.timedelta(minutes=m)).timestamp() for p, m in ago.items()})
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    first = out.splitlines()[0]
    assert first.startswith("Hung: all pods run but no training step completed for 31 min")
    assert first.endswith(
        "from trainops_trainer_last_step_timestamp_seconds); pod resnet50-ddp-worker-0 is"
        " furthest behind"
    )
    proxied = [r.url.path for r in api.requests if "/proxy/" in r.url.path]
    assert "/api/v1/namespaces/ml-vision/pods/resnet50-ddp-worker-0:9090/proxy/metrics" in proxied


def test_a_fresh_gauge_is_running(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.UTC)
    _running(api, repo, {"master-0": _stamped([(50, _step(1200))], now)})  # a long interval
    _with_metrics(api, {"master-0": (now - dt.timedelta(seconds=20)).timestamp()})
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert (code, out.splitlines()[0]) == (0, "Running: 2/2 pods running")


def test_without_pods_proxy_permission_the_logs_still_tell(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = dt.datetime.now(dt.UTC)
    _running(api, repo, {"master-0": _stamped([(41, _step(1200))], now)})
    _with_metrics(api, {})
    forbidden = response("errors", "forbidden-get-pods-log")
    forbidden["message"] = forbidden["message"].replace('"pods/log"', '"pods/proxy"')
    api.call(lambda e: e["get", re.compile(r".*/proxy/metrics")] << (lambda: reply(403, forbidden)))
    code, out, _ = _explain(capsys, repo, kubeconfig)
    assert code == 1
    assert out.startswith("Hung: all pods run but no training step completed for 41 min")
    assert (
        "Could not read:\n  metrics of pod/resnet50-ddp-master-0: 403 Forbidden: not allowed to"
        " get pods/proxy in namespace ml-vision" in out
    )
