"""Python's interpreter options in a PyTorch job's `command` (`[python, -u, train.py]`, the
habit of every `python -u train.py` log tail): trainops renders torchrun where `python` stood,
and torchrun stops the pod on `unrecognized arguments: -u`. `trainops validate` said ok.

The judges are the consumers themselves: torchrun's own parser
(`torch.distributed.run.get_args_parser`, torch 2.13) refuses every command trainops refuses
and parses every command it lets through, and CPython reaches the same interpreter state from
each environment variable trainops names as from the option it replaces
(trainops/facts/interpreter.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, line_of, replace_once, require_module, trainops
from trainops.core.yamlio import Document
from trainops.facts.interpreter import instead, interpreter_options
from trainops.jobspec.job_checks import check_job
from trainops.jobspec.problems import Collector

REFUSED = [
    ["python", "-u", "train.py"],
    ["python3", "-u", "-m", "trainer"],
    ["python", "-W", "ignore", "train.py"],
    ["python", "-Wignore::DeprecationWarning", "train.py"],
    ["python", "-X", "dev", "-m", "trainer"],
    ["python", "-Xfaulthandler", "train.py"],
    ["python", "-O", "train.py"],
    ["python", "-OO", "train.py"],
    ["python", "-B", "train.py"],
    ["python", "-uB", "train.py"],
    ["python", "-E", "train.py"],
    ["python", "-c", "import trainer"],
    ["python", "-mtrainer"],
]
ACCEPTED = [
    ["python", "train.py"],
    ["python", "-m", "trainer"],
    ["python3", "-m", "trainer", "-u", "-W", "ignore"],  # the program's own arguments
    ["python", "train.py", "-O"],
]


def _torchrun_parses(argv: list[str]) -> bool:
    """Whether torchrun's parser takes `torchrun <argv>` (how trainops renders the command)."""
    run = require_module("torch.distributed.run")
    try:
        run.get_args_parser().parse_args(argv)
    except SystemExit:
        return False
    return True


def _problems(command: list[str], framework: str = "pytorch") -> list[str]:
    spec = yaml.safe_load((REPO / "jobs" / "resnet50-ddp.yaml").read_text())
    spec["command"], spec["framework"] = command, framework
    out = Collector(Document("jobs/resnet50-ddp.yaml", 0, spec))
    check_job(spec, out, "resnet50-ddp")
    return [p.message for p in out.problems]


@pytest.mark.parametrize("command", REFUSED, ids=" ".join)
def test_an_option_torchrun_refuses_is_refused_with_what_to_write(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert not _torchrun_parses(command[1:]), "torchrun takes it: nothing to refuse"
    capsys.readouterr()  # argparse's own message
    (message,) = [m for m in _problems(command) if "torchrun" in m]
    for option in interpreter_options(command):
        assert option in message and instead(option) in message


@pytest.mark.parametrize("command", ACCEPTED, ids=" ".join)
def test_a_command_torchrun_parses_is_let_through(command: list[str]) -> None:
    assert _torchrun_parses(command[1:])
    assert interpreter_options(command) == []
    assert _problems(command) == []


@pytest.mark.parametrize("framework", ["tensorflow", "mpi"])
def test_python_runs_the_program_itself_in_tfjob_and_mpijob(framework: str) -> None:
    """TFJob's container and mpirun's ranks start python directly: its options are its own."""
    assert _problems(["python", "-u", "-W", "ignore", "train.py"], framework) == []


def _state(options: list[str], env: dict[str, str]) -> dict[str, Any]:
    """What CPython's flags, warning options, fault handler, tracemalloc and import-time
    report say, started with `options` and `env`."""
    code = (
        "import faulthandler, json, sys, tracemalloc;"
        "print(json.dumps([str(sys.flags), sys.warnoptions, faulthandler.is_enabled(),"
        " tracemalloc.is_tracing()]))"
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    done = subprocess.run(
        [sys.executable, *options, "-c", code],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return {"state": json.loads(done.stdout), "importtime": "import time:" in done.stderr}


@pytest.mark.parametrize(
    "option",
    ["-W ignore", "-Wignore::DeprecationWarning", "-X dev", "-X faulthandler", "-X importtime",
     "-X tracemalloc", "-X utf8", "-O", "-OO", "-B", "-uB", "-d", "-s", "-v"],
)  # fmt: skip
def test_the_environment_variable_named_does_what_the_option_did(option: str) -> None:
    fix = instead(option)
    assert fix.startswith("set env "), fix
    named = fix.removeprefix("set env ").split(" instead of ")[0].split(", ")
    env = dict(assignment.split("=", 1) for assignment in named)
    with_option = _state(option.split(" ", 1) if " " in option else [option], {})
    # -uB: torchrun runs `python -u` itself; the variables replace the rest.
    assert _state(["-u"] if "u" in option[1:2] else [], env) == with_option


def test_validate_points_at_the_option_and_exits_2(scratch: Path) -> None:
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(job, "command: [python, -m, trainer]", "command: [python, -u, -m, trainer]")
    result = trainops(scratch, "validate")
    assert result.returncode == 2, result.stdout + result.stderr
    line = line_of(job, "command: [python, -u, -m, trainer]")
    column = "command: [python, -u".index("-u") + 1
    assert (
        f"jobs/resnet50-ddp.yaml:{line}:{column}: trainops runs the program under torchrun,"
        " which cannot pass python's -u" in result.stderr
    ), result.stderr
    assert "remove -u: torchrun runs the program with python -u already" in result.stderr
    assert "Traceback" not in result.stderr
