"""Reading an MPIJob Launcher's argv back: the program, the author's options, and what trainops
generates itself (-np, -x exports, interface options) removed; and the argv trainops renders
reads back to the spec it came from."""

from __future__ import annotations

from trainops.importer.mpirun import read_mpirun, same_mpirun
from trainops.render.mpijob import interface_options


def test_generated_options_are_removed_and_the_rest_kept_in_order() -> None:
    argv = [
        "mpirun", "--allow-run-as-root", "-np", "32", "-bind-to", "none", "-mca", "pml", "ob1",
        "-x", "NCCL_IB_HCA=mlx5", "-x", "PATH", "-mca", "btl_tcp_if_include", "eth0",
        "python", "train.py", "--lr", "0.1",
    ]  # fmt: skip
    run = read_mpirun(argv, {"NCCL_IB_HCA"})
    assert run is not None
    assert run.program == ["python", "train.py", "--lr", "0.1"]
    assert run.options == [
        "--allow-run-as-root", "-bind-to", "none", "-mca", "pml", "ob1", "-x", "PATH",
    ]  # fmt: skip
    assert (run.processes, run.exported) == ("32", ["NCCL_IB_HCA=mlx5"])
    assert run.interface == ["-mca", "btl_tcp_if_include", "eth0"]


def test_an_option_and_its_value_in_one_element_is_split() -> None:
    run = read_mpirun(["mpirun", "-x NCCL_DEBUG=INFO", "-np", "2", "python", "x.py"], set())
    assert run is not None
    assert (run.options, run.split) == (["-x", "NCCL_DEBUG=INFO"], ["-x NCCL_DEBUG=INFO"])
    assert run.program == ["python", "x.py"]


def test_an_option_value_with_spaces_is_one_word() -> None:
    """Open MPI's `--mca plm_rsh_args "-o StrictHostKeyChecking=no"` hands ssh its own
    options in one word (the corpus's file 24, an EFA NCCL test): it is the value of
    `--mca`, not a fused option, and the program after it is the ranks'. Before, the value was
    split and `StrictHostKeyChecking=no` read as the ranks' program."""
    argv = [
        "mpirun", "--mca", "plm_rsh_args", "-o StrictHostKeyChecking=no", "-x", "PATH",
        "/opt/nccl-tests/all_reduce_perf", "-b", "8", "-o opt",
    ]  # fmt: skip
    run = read_mpirun(argv, set())
    assert run is not None
    assert run.options == ["--mca", "plm_rsh_args", "-o StrictHostKeyChecking=no", "-x", "PATH"]
    assert run.program == ["/opt/nccl-tests/all_reduce_perf", "-b", "8", "-o opt"]
    assert run.split == []


def test_not_mpirun_or_no_program() -> None:
    assert read_mpirun(["horovodrun", "-np", "2", "python", "x.py"], set()) is None
    assert read_mpirun(["mpirun", "-np", "2"], set()) is None
    assert read_mpirun([], set()) is None


def test_what_trainops_renders_is_the_same_run() -> None:
    """The rendered argv (author's options, then -np, -x, interface) equals the original's
    program and options; another program or option is not the same."""
    original = ["mpirun", "-n", "4", "-bind-to", "none", "python", "-m", "trainer"]
    ours = [
        "mpirun", "-bind-to", "none", "-np", "8", "-x", "NCCL_IB_DISABLE",
        *interface_options("Intel", "eth1"), "python", "-m", "trainer",
    ]  # fmt: skip
    assert same_mpirun(original, ours, {"NCCL_IB_DISABLE"})
    assert not same_mpirun([*original[:-1], "other"], ours, {"NCCL_IB_DISABLE"})
    assert not same_mpirun(["mpirun", "python", "-m", "trainer"], ours, {"NCCL_IB_DISABLE"})
