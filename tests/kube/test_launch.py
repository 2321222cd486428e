"""How launch commands are read: mpirun's option table, exports, and shell scripts."""

from __future__ import annotations

import pytest

from trainops.kube.launch import MPI, classify, launches
from trainops.kube.pods import Container


def _words(command: str) -> list[tuple[str, tuple[str | int, ...]]]:
    return [(w, ("args", i)) for i, w in enumerate(command.split())]


def _program(command: str) -> list[str]:
    return [w for w, _ in classify(_words(command)).program]


HOROVOD = (
    "mpirun --allow-run-as-root -mca pml ob1 -mca btl ^openib -np 16"
    " -x NCCL_IB_DISABLE=0 python train.py --epochs 3"
)


def test_mca_options_take_two_words() -> None:
    launch = classify(_words(HOROVOD))
    assert launch.tool == MPI
    assert [w for w, _ in launch.program] == ["python", "train.py", "--epochs", "3"]
    assert launch.option("np") == ("16", ("args", 9))
    assert launch.options["mca:pml"][0] == "ob1"
    assert launch.options["mca:btl"][0] == "^openib"
    assert launch.mpi_exports == {"NCCL_IB_DISABLE": ("0", ("args", 11))}


@pytest.mark.parametrize(
    "command",
    [
        "mpirun --mca btl_tcp_if_include eth0 -np 4 python train.py",
        "mpirun -gmca plm_rsh_args -p2222 -np 4 python train.py",
        "mpirun --prtemca plm_rsh_agent ssh --pmixmca ptl_base_if_include eth0 -np 4"
        " python train.py",
        "mpirun --omca btl self,tcp -np 4 python train.py",
        # Options with one value, whatever they look like.
        "mpirun --map-by ppr:8:node -bind-to none -H a:8,b:8 -np 4 python train.py",
        # Flags right before the program must not swallow it.
        "mpirun -np 4 --report-bindings --tag-output python train.py",
        "mpiexec -n 4 -genvall -l python train.py",
        "horovodrun -np 4 --gloo --verbose python train.py",
    ],
)
def test_the_program_is_found_after_the_options(command: str) -> None:
    assert _program(command) == ["python", "train.py"]


def test_hydra_env_options_are_exports() -> None:
    launch = classify(_words("mpiexec -genv NCCL_IB_HCA mlx5 -env NCCL_DEBUG INFO -n 8 ./a.out"))
    assert {k: v for k, (v, _) in launch.mpi_exports.items()} == {
        "NCCL_IB_HCA": "mlx5",
        "NCCL_DEBUG": "INFO",
    }
    assert launch.option("np") == ("8", ("args", 8))
    assert _program("mpiexec -genv A 1 -n 8 ./a.out") == ["./a.out"]


def test_bare_x_exports_the_launchers_value() -> None:
    container = Container(
        {
            "name": "launcher",
            "env": [{"name": "NCCL_DEBUG", "value": "WARN"}],
            "command": ["sh", "-c"],
            "args": [
                "export NCCL_IB_DISABLE=1\n"
                "mpirun -x NCCL_DEBUG -x NCCL_IB_DISABLE -x UNSET_VAR python train.py"
            ],
        },
        ("spec",),
        False,
    )
    mpirun = [launch for launch in launches(container) if launch.tool == MPI]
    assert len(mpirun) == 1
    assert {k: v for k, (v, _) in mpirun[0].mpi_exports.items()} == {
        "NCCL_DEBUG": "WARN",
        "NCCL_IB_DISABLE": "1",
    }
