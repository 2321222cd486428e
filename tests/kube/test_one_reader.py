"""Issue 38.4: one mpirun/horovodrun reader (`trainops.kube.launch`) and one shell-word reader
(`trainops.kube.words`), which the rules, import and run-local all read command lines with."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainops.importer.mpirun import read_horovodrun, read_mpirun, script_command
from trainops.kube.launch import classify
from trainops.runlocal.mpi import _mpirun_options, _read_argv

TRAINOPS = Path(__file__).resolve().parents[2] / "trainops"

ARGVS = [
    # `--timeout` takes a value (Open MPI 4 mpirun(1)); main's import read `300` as the program.
    ["mpirun", "--timeout", "300", "-np", "4", "python", "train.py", "--lr", "0.1"],
    ["mpirun", "--report-bindings", "-x", "NCCL_DEBUG=INFO", "-np", "2", "python", "-m", "t"],
    ["mpirun", "-mca", "plm_rsh_args", "-p 2222", "--bind-to", "none", "python", "x.py"],
    ["mpiexec", "-genv", "I_MPI_DEBUG", "5", "-n", "8", "python", "x.py"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: " ".join(a[:3]))
def test_rules_import_and_run_local_read_the_same_program(argv: list[str]) -> None:
    rules = [w for w, _ in classify([(w, ()) for w in argv]).program]
    imported = read_mpirun(argv, set())
    assert imported is not None and imported.program == rules
    local = _read_argv(argv)
    assert [w for w, _ in local.program] == rules
    changes: list[str] = []
    options = _mpirun_options(local, 2, changes)
    assert options[0] == "--oversubscribe" and len(argv) - len(rules) - 1 == len(options) - 1


def test_horovodrun_and_a_script_are_read_by_the_same_reader() -> None:
    run = read_horovodrun(["horovodrun", "-np", "4", "-H", "w0:2,w1:2", "python", "t.py"])
    assert run is not None and (run.processes, run.hosts, run.program) == (
        "4",
        "w0:2,w1:2",
        ["python", "t.py"],
    )
    assert read_horovodrun(["horovodrun", "--gloo", "-np", "2", "python", "t.py"]) is None
    inner = script_command(["sh", "-c", "mpirun -np 2 python t.py 2>&1 | tee log # note"])
    assert inner == (["mpirun", "-np", "2", "python", "t.py"], False)


def test_no_module_splits_shell_words_or_keeps_an_mpirun_table_of_its_own() -> None:
    """shlex is used by `kube/words.py` only, and the MPI option arities live in
    `kube/launch.py` only (main had three tokenisers and two arity tables)."""
    for path in sorted(TRAINOPS.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(TRAINOPS).as_posix()
        if where != "kube/words.py":
            assert "shlex.shlex(" not in text and "shlex.split(" not in text, where
        if where != "kube/launch.py":
            assert "ONE_VALUE" not in text and "TWO_VALUES = " not in text, where
