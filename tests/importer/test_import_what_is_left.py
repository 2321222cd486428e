"""Issue 38.5: what import now does with an `envFrom` Secret delivered in the same file, a
v1alpha2 MPIJob's `cleanPodPolicy: Completed`, and a Launcher that runs a script file. Each
case failed on main: the first two were refused, the third said only "nothing says what the
ranks run"."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.tools import REPO, copy_inputs, trainops, tree

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parent / "fixtures" / "what-is-left"


def _import(tmp_path: Path, name: str) -> tuple[Path, object]:
    root = copy_inputs(REPO, tmp_path / "repo")
    result = trainops(root, "import", str(FIXTURES / name), "--cluster", "cloud-h100")
    return root, result


def test_an_env_from_secret_in_the_file_becomes_secret_env(tmp_path: Path) -> None:
    """Every key of the Secret is one `secretEnv` entry (the job's own `env` wins for a name
    both set, as the kubelet applies envFrom first); the Secret is not delivered."""
    root, result = _import(tmp_path, "pytorchjob-envfrom-secret.yaml")
    assert result.returncode == 0, result.stderr  # type: ignore[attr-defined]
    spec = yaml.safe_load((root / "jobs" / "qwen3-sft.yaml").read_text())
    assert spec["secretEnv"] == {
        "HF_TOKEN": {"secret": "sft-env", "key": "HF_TOKEN"},
        "WANDB_API_KEY": {"secret": "sft-env", "key": "WANDB_API_KEY"},
    }
    assert spec["env"] == {"MODEL_NAME": "Qwen/Qwen3-0.6B"}
    assert "envFrom" not in yaml.safe_dump(spec)
    assert "create it in the cluster" in result.stdout  # type: ignore[attr-defined]
    assert trainops(root, "render").returncode == 0


def test_v1alpha2_clean_pod_policy_completed_is_converted_with_a_note(tmp_path: Path) -> None:
    """mpi-operator v0.2.3 accepted any value and deleted the Workers for All and Running
    only (isCleanUpPods): `Completed` kept them, as None does; v2beta1 refuses the value."""
    root, result = _import(tmp_path, "mpijob-v1alpha2-completed.yaml")
    assert result.returncode == 0, result.stderr  # type: ignore[attr-defined]
    spec = yaml.safe_load((root / "jobs" / "clara-multinode.yaml").read_text())
    assert spec["runPolicy"]["cleanPodPolicy"] == "Running"
    out = result.stdout  # type: ignore[attr-defined]
    assert "`cleanPodPolicy: Completed` is no policy v2beta1 accepts" in out
    assert "isCleanUpPods" in out and "write `None` to keep the old behaviour" in out


def test_a_launcher_script_file_is_refused_with_what_to_write(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    before = tree(root)
    result = trainops(
        root, "import", str(FIXTURES / "mpijob-launcher-script.yaml"), "--cluster", "cloud-h100"
    )
    said = result.stdout + result.stderr
    assert "the script `./run_horovod.sh` from its image, which import cannot read" in said
    assert "`[horovodrun, -np, '2', python, train.py]`" in said
    assert "`framework: mpi`, `command: [python, train.py]`" in said
    assert not (root / "jobs" / "hvd-script.yaml").exists()
    assert tree(root) == before
