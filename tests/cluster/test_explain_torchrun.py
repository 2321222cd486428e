"""`explain` on a torchrun job shows the failing child's first traceback, not torchrun's summary.

The logs here are real: a tiny script runs under the real torchrun (torch.distributed.run,
the torch in .venv, gloo on CPU, two processes); one rank raises. torchrun prints the
child's exception (torch's `_distributed_excepthook` prefixes each line `[rank1]: `,
torch/distributed/distributed_c10d.py) and then its own `ChildFailedError` summary, whose
"Root Cause" block names the rank and, when the child used `@record`, holds the child's
traceback from its error file (torch/distributed/elastic/multiprocessing/errors/, torch
2.13). The combined output is served as the pod's log by the API emulator.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cluster.conftest import pod, response
from tests.cluster.test_explain import JOB, _explain, _job
from tests.tools import require_module
from trainops.cluster.emulator_thread import RunningEmulator
from trainops.cluster.logs import first_failure

CHILD = """
import os
import torch.distributed as dist
{record_import}

{decorator}
def main():
    dist.init_process_group("gloo")
    for step in range(3):
        print(f"step {{step}} rank {{dist.get_rank()}}", flush=True)
    if dist.get_rank() == 1:
        config = {{"batch_size": 32}}
        print(config["lr"])
    dist.barrier()

main()
"""


def _torchrun(tmp_path: Path, record: bool) -> list[str]:
    """The container log of a real torchrun run whose rank 1 fails with KeyError('lr')."""
    require_module("torch")
    script = tmp_path / "train.py"
    script.write_text(
        CHILD.format(
            record_import="from torch.distributed.elastic.multiprocessing.errors import record"
            if record
            else "",
            decorator="@record" if record else "",
        )
    )
    run = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node",
         "2", "--max-restarts", "0", str(script)],
        capture_output=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=120, cwd=tmp_path, check=False,
        env={**os.environ, "TMPDIR": str(tmp_path)},  # where torchrun leaves its log folder
    )  # fmt: skip
    assert run.returncode != 0, run.stdout
    assert "ChildFailedError" in run.stdout, run.stdout
    return run.stdout.splitlines()


@pytest.mark.slow
def test_first_failure_is_the_failing_ranks_traceback(tmp_path: Path) -> None:
    lines = _torchrun(tmp_path, record=False)
    child = first_failure(lines)
    assert child is not None, "\n".join(lines)
    assert child[0] == "[rank1]: Traceback (most recent call last):"
    assert child[-1] == "[rank1]: KeyError: 'lr'"
    assert not any("ChildFailedError" in line for line in child)


@pytest.mark.slow
def test_first_failure_reads_the_error_file_torchrun_printed(tmp_path: Path) -> None:
    """With `@record`, torchrun's summary carries the child's traceback itself."""
    lines = _torchrun(tmp_path, record=True)
    child = first_failure(lines)
    assert child is not None, "\n".join(lines)
    assert child[0] == "Traceback (most recent call last):"
    assert any('print(config["lr"])' in line for line in child)
    assert child[-1] == "KeyError: 'lr'"


def test_a_log_without_torchrun_summary_is_tailed() -> None:
    assert first_failure(["step 1", "Traceback (most recent call last):", "KeyError: 'x'"]) is None


@pytest.mark.slow
def test_explain_shows_the_childs_traceback_not_the_last_lines(
    tmp_path: Path,
    api: RunningEmulator,
    repo: Path,
    kubeconfig: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On main, explain showed the last 20 lines: all of torchrun's summary, no KeyError."""
    log = "\n".join(_torchrun(tmp_path, record=False)) + "\n"
    api.add(_job(repo, "restarting"), pod(JOB, "worker", 0, response("pods", "crash-loop")))
    key = ("ml-vision", f"{JOB}-worker-0", "pytorch", True)
    api.call(lambda e: e.logs.update({key: log}))
    code, out, err = _explain(capsys, repo, kubeconfig)
    assert code == 1, err
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Log of pod/"))
    assert lines[at].endswith("(previous run, first traceback of the failing child, "
                              f"{len(lines) - at - 1} lines):")  # fmt: skip
    assert lines[at + 1] == "  [rank1]: Traceback (most recent call last):"
    assert lines[-1] == "  [rank1]: KeyError: 'lr'"
    assert "Root Cause" not in out
