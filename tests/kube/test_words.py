"""The one reader of command lines (`trainops.kube.words`): the kubelet's `$(VAR)` expansion,
the shell's `$VAR` inside `sh -c`, and a script's words."""

from __future__ import annotations

import pytest

from tests.rules.helpers import manifests_from_text
from trainops.core.manifest import Manifest
from trainops.kube.launch import MPI, launches
from trainops.kube.objects import Object
from trainops.kube.words import (
    assignments,
    commands,
    expand_kubelet,
    expand_shell,
    kubelet_env,
    line_words,
)

# Kubernetes' own vectors for Expand: third_party/forked/golang/expansion/expand_test.go
# (kubernetes/kubernetes @ 490ffa432a878f5a75e5b5906d820d06e672556e, doExpansionTest).
CONTEXT = {"VAR_A": "A", "VAR_B": "B", "VAR_C": "C", "VAR_REF": "$(VAR_A)", "VAR_EMPTY": ""}
UPSTREAM = [
    ("$(VAR_A)", "A"),
    ("$(VAR_A)-$(VAR_A)", "A-A"),
    ("$(VAR_A)-1", "A-1"),
    ("___$(VAR_B)___", "___B___"),
    ("___$(VAR_C)", "___C"),
    ("$(VAR_A)_$(VAR_B)_$(VAR_C)", "A_B_C"),
    ("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
    ("$$(VAR_A)_$$(VAR_B)", "$(VAR_A)_$(VAR_B)"),
    ("f000-$$VAR_A", "f000-$VAR_A"),
    ("foo\\$(VAR_C)bar", "foo\\Cbar"),
    ("foo\\\\$(VAR_C)bar", "foo\\\\Cbar"),
    ("foo\\\\\\\\$(VAR_A)bar", "foo\\\\\\\\Abar"),
    ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
    ("$(VAR_A$(VAR_B)", "$(VAR_A$(VAR_B)"),
    ("$(VAR_REF)", "$(VAR_A)"),
    ("%%$(VAR_REF)--$(VAR_REF)%%", "%%$(VAR_A)--$(VAR_A)%%"),
    ("foo$(VAR_EMPTY)bar", "foobar"),
    ("foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
    ("f00__(VAR_A)__", "f00__(VAR_A)__"),
    ("$?_boo_$!", "$?_boo_$!"),
    ("$VAR_A", "$VAR_A"),
    ("$(VAR_DNE)", "$(VAR_DNE)"),
    ("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
    ("$$$$$$(VAR_A)", "$$$(VAR_A)"),
    ("$$$$$$$(GOOD_ODDS)", "$$$$(GOOD_ODDS)"),
    ("$$$$$$$(VAR_A)", "$$$A"),
    ("$VAR_A)", "$VAR_A)"),
    ("${VAR_A}", "${VAR_A}"),
    ("$(VAR_B)_______$(A", "B_______$(A"),
    ("$(VAR_C)_______$(", "C_______$("),
    ("$(VAR_A)foobarzab$", "Afoobarzab$"),
    ("foo-\\$(VAR_A", "foo-\\$(VAR_A"),
    ("--$($($($($--", "--$($($($($--"),
    ("$($($($($--foo$(", "$($($($($--foo$("),
    ("foo0--$($($($(", "foo0--$($($($("),
    ("$(foo$$var)", "$(foo$$var)"),
    ("\n", "\n"),
]


@pytest.mark.parametrize(("text", "expected"), UPSTREAM)
def test_kubelet_expansion_matches_kubernetes(text: str, expected: str) -> None:
    assert expand_kubelet(text, CONTEXT) == expected


def test_kubelet_env_in_order_and_missing_names() -> None:
    """Kubernetes' TestMapReference: each value expands from the ones before it."""
    env = kubelet_env([("FOO", "bar"), ("ZOO", "$(FOO)-1"), ("BLU", "$(ZOO)-2")])
    assert env == {"FOO": "bar", "ZOO": "bar-1", "BLU": "bar-1-2"}
    assert kubelet_env([("A", "$(B)"), ("B", "x")]) == {"A": "$(B)", "B": "x"}
    missing: list[str] = []
    expand_kubelet("--lr=$(LR) --x=$(NOPE) $$(LR) $(NOPE)", {"LR": "0.1"}, missing)
    assert missing == ["NOPE"]


def test_shell_expansion_outside_single_quotes_only() -> None:
    env = {"N": "4", "HOST": "h"}
    assert expand_shell("mpirun -np $N -H ${HOST}:$N x", env) == "mpirun -np 4 -H h:4 x"
    assert expand_shell("echo '$N' \"$N\" $UNKNOWN ${UNKNOWN} $1 $?", env) == (
        "echo '$N' \"4\" $UNKNOWN ${UNKNOWN} $1 $?"
    )
    assert expand_shell("echo \\$N", env) == "echo \\$N"


def test_words_commands_and_assignments() -> None:
    words = line_words('A=1 B="2 3"; export C=4 && torchrun x.py 2>&1 | tee log # note')
    assert [c for c, _ in commands(words)] == [
        ["A=1", "B=2 3"],
        ["export", "C=4"],
        ["torchrun", "x.py"],
        ["tee", "log"],
    ]
    assert [op for _, op in commands(words)] == [";", "&&", "|", ""]
    assert assignments(["A=1", "B=2 3"]) == {"A": "1", "B": "2 3"}
    assert assignments(["export", "C=4", "D"]) == {"C": "4"}
    assert assignments(["A=1", "torchrun"]) == {}  # the command's env, not the shell's


def _container(argv: list[str], env: list[dict[str, str]]) -> Object:
    return Object(
        Manifest(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "command": argv, "env": env}]},
            }
        )
    )


def test_launches_see_the_values_the_kubelet_and_the_shell_hand_over() -> None:
    """Issue 38.2: `horovodrun -np ${RUNAI_MPI_NUM_WORKERS}` with the variable in the
    container's env is `-np 4`; `$(VAR)` is the kubelet's, in an exec argv too."""
    env = [{"name": "RUNAI_MPI_NUM_WORKERS", "value": "4"}, {"name": "SLOTS", "value": "8"}]
    script = _container(
        ["sh", "-c", "N=$((2*2)); horovodrun -np ${RUNAI_MPI_NUM_WORKERS} python t.py"], env
    )
    [_, horovod] = launches(script.pods[0].containers()[0])
    assert horovod.tool == MPI and horovod.option("np") is not None
    assert horovod.option("np")[0] == "4"  # type: ignore[index]
    exec_argv = _container(["mpirun", "-np", "$(SLOTS)", "--", "python", "t.py"], env)
    [mpirun] = launches(exec_argv.pods[0].containers()[0])
    assert mpirun.option("np")[0] == "8"  # type: ignore[index]
    later = _container(["sh", "-c", "export W=2\nmpirun -np $W -x W python t.py"], [])
    [_, run] = launches(later.pods[0].containers()[0])
    assert run.option("np")[0] == "2"  # type: ignore[index]
    assert run.mpi_exports["W"][0] == "2"


def test_folded_and_block_scalars_are_the_argv_they_become() -> None:
    """Issue 38.2: a folded scalar is one argv element (its lines joined by spaces); as the
    argument of `sh -c` it is the script, and a block scalar keeps its lines as commands."""
    text = """
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - name: exec
      command:
        - python
        - train.py
        - >
          --variable_update=horovod
          echo done; sleep infinity
    - name: folded
      command: [sh, -c]
      args:
        - >
          torchrun --standalone train.py
          --lr 0.1
    - name: block
      command: [sh, -c]
      args:
        - |
          export N=2
          mpirun -np $N python t.py
"""
    pod = Object(manifests_from_text(text)[0]).pods[0]
    exec_, folded, block = pod.containers()
    assert [w for w, _ in exec_.argv][2] == "--variable_update=horovod echo done; sleep infinity\n"
    [only] = launches(exec_)
    assert [w for w, _ in only.program][-1].startswith("--variable_update=horovod echo")
    [torchrun] = launches(folded)
    assert [w for w, _ in torchrun.program] == ["train.py", "--lr", "0.1"]
    assert [launch.tool for launch in launches(block)][-1] == MPI
    assert launches(block)[-1].option("np")[0] == "2"  # type: ignore[index]


def test_a_command_substitution_stays_in_its_word() -> None:
    """Its `|` and `;` belong to the inner command (a public PyTorchJob computed its node rank
    with `$(hostname | cut -d- -f4-)` and was read as piping the trainer into `cut`)."""
    words = line_words("composer -n 8 --node_rank $(hostname | cut -d- -f4-) x.py | tee log")
    assert [c for c, _ in commands(words)] == [
        ["composer", "-n", "8", "--node_rank", "$(hostname | cut -d- -f4-)", "x.py"],
        ["tee", "log"],
    ]
    nested = line_words('echo "r=$(echo $(date | cut -c1-2); true)" `id -u | tr -d 0` && go')
    assert nested == [
        "echo",
        "r=$(echo $(date | cut -c1-2); true)",
        "`id -u | tr -d 0`",
        "&&",
        "go",
    ]
    assert line_words("echo $(unclosed | x") == ["echo", "$(unclosed", "|", "x"]
