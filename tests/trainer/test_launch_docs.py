"""The launch commands `trainer/train.py`'s docstring shows are the ones that really run.

The first is what a rendered PyTorchJob's container runs: its command must be the rendered
container's `command` (`base/resnet50-ddp/pytorchjob.yaml`, written by `trainops render`), its
arguments must be the rendered job's, and the trainer must accept them. The second, the local
CPU run, must be read by torchrun's own parser (torch/distributed/run.py `get_args_parser`, the
torch the trainer extra pins) as a module run of `trainer` whose arguments the trainer accepts.
"""

from __future__ import annotations

import shlex

import pytest
import yaml

import trainer.train
from tests.tools import REPO, require_module
from trainer.config import parse_args


def documented_commands() -> list[list[str]]:
    """Each indented command block of the docstring, continuation lines joined, as argv."""
    blocks: list[list[str]] = []
    current: list[str] = []
    for line in (trainer.train.__doc__ or "").splitlines():
        if line.startswith("    "):
            current.append(line.strip().removesuffix("\\"))
        elif current:
            blocks.append(shlex.split(" ".join(current)))
            current = []
    return blocks


def rendered_container() -> dict[str, list[str]]:
    path = REPO / "base" / "resnet50-ddp" / "pytorchjob.yaml"
    job = yaml.safe_load(path.read_text(encoding="utf-8"))
    worker = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    (container,) = [c for c in worker["containers"] if c["name"] == "pytorch"]
    return container  # type: ignore[no-any-return]


def test_the_documented_job_command_is_the_rendered_one() -> None:
    rendered, _ = documented_commands()
    container = rendered_container()
    head = len(container["command"])
    assert rendered[:head] == container["command"]
    assert set(rendered[head:]) <= set(container["args"])
    parse_args(rendered[head:], env={}, load_files=False)
    parse_args(container["args"], env={}, load_files=False)


@pytest.mark.slow
def test_the_documented_local_command_is_a_torchrun_module_run_of_the_trainer() -> None:
    require_module("torch")
    from torch.distributed.run import get_args_parser  # noqa: PLC0415 (torch is heavy)

    _, local = documented_commands()
    assert local[0] == "torchrun"
    ns = get_args_parser().parse_args(local[1:])
    assert (ns.standalone, ns.module, ns.training_script) == (True, True, "trainer")
    assert ns.nproc_per_node == "2"
    parse_args(ns.training_script_args, env={}, load_files=False)
