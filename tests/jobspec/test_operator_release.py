"""Issue 33 item 9: a profile's `operator.version` was read and ignored (`"1.5"` rendered
byte for byte like 1.9). Only the releases trainops renders for load; any other is refused at
the profile's line with what to do (docs/cluster.md#operator-releases)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.tools import trainops
from trainops.core.errors import InputError
from trainops.jobspec.load import load_repository

PROFILE = Path("clusters") / "onprem-a100.yaml"
V2_PROFILE = Path("clusters") / "onprem-h200.yaml"


def _set_operator(root: Path, profile: Path, name: str, version: str) -> int:
    """Write `operator:` into the profile; the line of its `version`."""
    path = root / profile
    text = path.read_text()
    block = f'operator:\n  name: {name}\n  version: "{version}"\n'
    if "\noperator:\n" in text:
        text = re.sub(r"\noperator:\n  name: \S+\n  version: \S+\n", "\n" + block, text)
    else:
        text = text.replace("\nnetwork:\n", "\n" + block + "network:\n", 1)
    path.write_text(text)
    return text.splitlines().index(f'  version: "{version}"') + 1


def _problems(root: Path) -> list[str]:
    try:
        load_repository(root)
    except InputError as err:
        return [str(p) for p in err.problems]
    return []


@pytest.mark.parametrize("version", ["1.7", "1.8.1", "1.9", "1.9.4"])
def test_the_training_operator_releases_trainops_renders_for_load(
    scratch: Path, version: str
) -> None:
    _set_operator(scratch, PROFILE, "training-operator", version)
    assert _problems(scratch) == []


@pytest.mark.parametrize(
    ("version", "advice"),
    [
        ("1.5", "upgrade the operator"),  # no PyTorchJob spec.nprocPerNode
        ("1.6.0", "spec.nprocPerNode"),
        ("1.10", "has not been checked against it"),
        ("2.3", "write `name: trainer`"),
    ],
)
def test_other_training_operator_releases_are_refused_at_the_profiles_line(
    scratch: Path, version: str, advice: str
) -> None:
    line = _set_operator(scratch, PROFILE, "training-operator", version)
    (problem,) = _problems(scratch)
    assert problem.startswith(f"clusters/onprem-a100.yaml:{line}:"), problem
    assert f"'{version}' is not a release trainops renders for (supported: 1.7, 1.8, 1.9)" in (
        problem
    )
    assert advice in problem


@pytest.mark.parametrize(("version", "advice"), [("2.2", "upgrade the Trainer"), ("2.4", "")])
def test_trainer_releases_other_than_2_3_are_refused(
    scratch: Path, version: str, advice: str
) -> None:
    line = _set_operator(scratch, V2_PROFILE, "trainer", version)
    (problem,) = _problems(scratch)
    assert problem.startswith(f"clusters/onprem-h200.yaml:{line}:"), problem
    assert "(supported: 2.3)" in problem and advice in problem


def test_the_cli_exits_2_and_writes_nothing(scratch: Path) -> None:
    line = _set_operator(scratch, PROFILE, "training-operator", "1.5")
    result = trainops(scratch, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"clusters/onprem-a100.yaml:{line}:" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (scratch / "overlays").exists()
