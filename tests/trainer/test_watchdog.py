"""Issue 24.4 (hang watchdog) and 24.3 (collective timeout flag).

The slow tests hang one rank of a real `torchrun --nproc_per_node=2` (gloo, CPU) job: a
`sitecustomize` module on the hung rank's PYTHONPATH (test code only, nothing in the trainer)
makes its third `train_step` block forever, the way a rank stuck on a dead file system read or a
lost peer would. The peer then waits in gloo's all-reduce of that step.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests import processes
from tests.tools import REPO
from tests.trainer.launch import TINY_GPT, env, torchrun_cmd
from trainer.watchdog import EXIT_HUNG, FIRST_LINE, Watchdog

# What a log grep (and `trainops explain`) matches: the fixed first line of a dump.
FIRST_LINE_RE = re.compile(
    r"^trainops-watchdog: no step completed for (\d+)s \(last step (\d+) at "
    r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00)\); dumping stacks and exiting$",
    re.MULTILINE,
)

HANG = """
import os, signal, threading
if os.environ.get("RANK") == "{rank}":
    import trainer.engine as engine

    real = engine.DDPEngine.train_step
    calls = []

    def train_step(self, batches):
        calls.append(1)
        if len(calls) == {at}:
            # When the peer fails, torchrun stops the group with SIGTERM and waits 30 s before
            # SIGKILL; the trainer's handler only asks for a stop at the next step, which a hung
            # rank never reaches. Ending here keeps that wait out of the test's time.
            signal.signal(signal.SIGTERM, lambda *_: os._exit(128 + signal.SIGTERM))
            threading.Event().wait()  # never set: this rank hangs here
        return real(self, batches)

    engine.DDPEngine.train_step = train_step
"""


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_first_line_format_is_the_documented_one() -> None:
    line = FIRST_LINE.format(seconds=42, step=7, at="2026-11-26T01:02:03+00:00")
    assert FIRST_LINE_RE.fullmatch(line)
    docs = (REPO / "docs" / "trainer.md").read_text()
    assert "trainops-watchdog: no step completed for" in docs


def test_armed_by_the_first_step_and_paused_by_checkpoints(tmp_path: Path) -> None:
    clock = Clock()
    dog = Watchdog(10, rank=3, clock=clock, exit_fn=lambda code: None)
    clock.now += 1000
    assert dog.overdue() is None  # start-up, model load, first step: not armed
    dog.step_done(1)
    clock.now += 9
    assert dog.overdue() is None
    with dog.paused():
        clock.now += 500  # a checkpoint far longer than the window
        assert dog.overdue() is None
    clock.now += 9
    assert dog.overdue() is None  # the window restarted when the checkpoint ended
    clock.now += 2
    assert dog.overdue() == pytest.approx(11)


def test_fire_writes_first_line_stacks_and_exits(tmp_path: Path) -> None:
    exits: list[int] = []
    out = tmp_path / "stderr"
    with out.open("w") as stream:
        dog = Watchdog(5, rank=1, stream=stream, exit_fn=exits.append)
        dog.step_done(12)
        dog.fire(61.7)
    text = out.read_text()
    first = text.splitlines()[0]
    m = FIRST_LINE_RE.fullmatch(first)
    assert m and m.group(1) == "61" and m.group(2) == "12", first
    assert "most recent call first" in text and "test_fire_writes_first_line" in text
    assert exits == [EXIT_HUNG]


def run_hung_job(tmp_path: Path, *args: str, timeout: float = 180) -> tuple[int, str, float]:
    """torchrun's own output, then each rank's stdout and stderr whole, rank by rank.

    The ranks write to files of their own (torchrun `--redirects 3 --log-dir`): two processes
    dumping stacks into one pipe at the same moment interleave mid-line, which made the stack
    assertions below fail now and then.
    """
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(HANG.format(rank=1, at=3))
    extra = env()
    extra["PYTHONPATH"] = f"{hook}:{extra['PYTHONPATH']}"
    logs = tmp_path / "logs"
    cmd = torchrun_cmd([*TINY_GPT, "--steps", "50", "--log-interval", "1", *args])
    at = cmd.index("-m", 3)  # the trainer's `-m`, after torchrun's own options
    cmd[at:at] = ["--redirects", "3", "--log-dir", str(logs)]
    start = time.monotonic()
    result = processes.run(cmd, cwd=REPO, env=extra, text=True, timeout=timeout)
    seconds = time.monotonic() - start
    ranks = sorted(logs.rglob("std*.log"), key=lambda f: (f.parent.name, f.name))
    out = result.stdout + result.stderr + "".join(f.read_text() for f in ranks)
    return result.returncode, out, seconds


@pytest.mark.slow
def test_hung_rank_every_rank_dumps_and_the_job_exits_non_zero(tmp_path: Path) -> None:
    """Both ranks dump within the window after the last step; torchrun fails the group.

    torchrun (torch 2.13, `torch/distributed/elastic/agent/server/api.py`, `_invoke_run`) sees
    a worker exit non-zero and, with no restarts left, stops the group and exits 1: that is
    what the Training Operator's restart policy acts on.
    """
    code, out, seconds = run_hung_job(tmp_path, "--hang-timeout", "4")
    assert code != 0, out[-3000:]
    assert seconds < 120, seconds  # not the 30-minute collective timeout
    firsts = FIRST_LINE_RE.findall(out)
    assert len(firsts) == 2, out[-4000:]  # one per rank
    assert {int(step) for _, step, _ in firsts} == {2}  # the hang is in step 3
    assert all(int(s) >= 4 for s, _, _ in firsts)
    for rank in (0, 1):
        assert f"trainops-watchdog: rank {rank} pid" in out
        assert f"trainops-watchdog: rank {rank} exiting with code {EXIT_HUNG}" in out
    # the hung rank's stack shows where it hangs; the peer's shows the collective it waits in
    assert re.search(r"sitecustomize.py\", line \d+ in train_step", out), out[-4000:]
    assert re.search(r"engine.py\", line \d+ in train_step", out)  # the peer, in backward
    # the flight recorder (torch 2.13 records gloo too): DDP's gradient all-reduce of step 3
    # is pending on the peer, which has completed more collectives than the hung rank
    recorder = {
        int(rank): json.loads(text)
        for rank, text in re.findall(r"trainops-watchdog: rank (\d) flight recorder: (.*)", out)
    }
    assert set(recorder) == {0, 1}, out[-3000:]
    names = [e["profiling_name"] for e in recorder[0]["pending"]]
    assert names == ["gloo:all_reduce"], recorder[0]
    status = {r: rec["pg_status"]["0"] for r, rec in recorder.items()}
    done = {r: int(st["last_enqueued_collective"]) for r, st in status.items()}
    assert done[0] > done[1], done
    assert re.search(rf"exitcode\s*:\s*{EXIT_HUNG}", out), out[-2000:]  # torchrun's summary


@pytest.mark.slow
def test_collective_timeout_flag_bounds_the_wait(tmp_path: Path) -> None:
    """Watchdog off: the peer's all-reduce fails after `--collective-timeout` seconds (gloo
    honours the process group's timeout), not after the former fixed 30 minutes."""
    code, out, seconds = run_hung_job(tmp_path, "--hang-timeout", "0", "--collective-timeout", "5")
    assert code != 0, out[-3000:]
    assert seconds < 120, seconds
    assert not FIRST_LINE_RE.search(out)
    assert re.search(r"[Tt]imed out|timeout", out), out[-3000:]
