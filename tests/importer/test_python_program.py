"""The program inside an imported PyTorchJob's command when python's options or torchrun's
`--no-python` stand around it (trainops/importer/launch.py).

`python -u train.py` (the usual way to get unbuffered logs) was read as no program at all and
kept verbatim in `podTemplate`; `torchrun --no-python python3 train.py` (Kubeflow Trainer's own
examples) became `command: [python, python3]`, which renders as `torchrun python3 train.py`:
torchrun then runs `python -u python3`, a file that does not exist. The judge is torchrun's
own parser: what import writes renders to a command it parses, running the same program."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.tools import REPO, copy_inputs, require_module, trainops
from trainops.importer.launch import read_program

READ = [
    (["python", "-u", "train.py", "--lr=1"], ["python", "train.py"], ["--lr=1"]),
    (["python3", "-u", "-m", "pkg.train"], ["python", "-m", "pkg.train"], []),
    (["torchrun", "--no-python", "python3", "train.py", "-u"], ["python", "train.py"], ["-u"]),
    (["torchrun", "--no_python", "python", "-u", "-m", "pkg"], ["python", "-m", "pkg"], []),
    (["torchrun", "--nnodes=2", "-m", "pkg", "--x"], ["python", "-m", "pkg"], ["--x"]),
    (["python", "train.py", "-O"], ["python", "train.py"], ["-O"]),
    (
        ["python3", "-u", "-m", "torch.distributed.run", "--nnodes=2", "train.py", "--lr=1"],
        ["python", "train.py"],
        ["--lr=1"],
    ),
]
NOT_A_PROGRAM = [
    ["python", "-O", "train.py"],
    ["python", "-W", "ignore", "-m", "pkg"],
    ["python", "-c", "import pkg"],
    ["torchrun", "--no-python", "python3", "-c", "import pkg"],
    ["torchrun", "--no-python", "/opt/bench"],
    ["bash", "-c", "python train.py"],
]


@pytest.mark.parametrize(("argv", "command", "args"), READ, ids=" ".join)
def test_the_program_is_read_through_python_options_and_no_python(
    argv: list[str], command: list[str], args: list[str]
) -> None:
    program = read_program(argv, [])
    assert program is not None
    assert (program.command, program.args) == (command, args)
    # Rendered, `torchrun <program> <args>` parses and runs that program.
    run = require_module("torch.distributed.run")
    parsed = run.get_args_parser().parse_args([*command[1:], *args])
    assert parsed.training_script == command[-1]
    assert parsed.module == (command[1] == "-m")
    assert parsed.training_script_args == args


@pytest.mark.parametrize("argv", NOT_A_PROGRAM, ids=" ".join)
def test_what_torchrun_cannot_run_as_a_program_is_not_read_as_one(argv: list[str]) -> None:
    assert read_program(argv, []) is None


PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: unbuffered, namespace: ml-vision}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: example/train:1.0
              command: [python, -u, /opt/train.py, --epochs=1]
              resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_import_drops_python_u_says_so_and_the_spec_renders(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    source = tmp_path / "unbuffered.yaml"
    source.write_text(PYTORCHJOB)
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "python's -u dropped: torchrun runs the program with python -u itself" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "unbuffered.yaml").read_text())
    assert (spec["command"], spec["args"]) == (["python", "/opt/train.py"], ["--epochs=1"])
    assert "podTemplate" not in spec or "command" not in str(spec["podTemplate"])
    assert trainops(root, "render").returncode == 0
    built = yaml.safe_load((root / "base" / "unbuffered" / "pytorchjob.yaml").read_text())
    (pod,) = [r["template"]["spec"] for r in built["spec"]["pytorchReplicaSpecs"].values()]
    container = pod["containers"][0]
    assert [*container["command"], *container.get("args", [])] == [
        "torchrun",
        "/opt/train.py",
        "--epochs=1",
    ]


def test_an_option_torchrun_cannot_pass_keeps_the_command_and_says_why(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    source = tmp_path / "unbuffered.yaml"
    source.write_text(PYTORCHJOB.replace("[python, -u,", "[python, -O,"))
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "python's -O cannot pass through torchrun" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "unbuffered.yaml").read_text())
    assert "command" not in spec
    assert spec["podTemplate"]["spec"]["containers"][0]["command"][:2] == ["python", "-O"]
