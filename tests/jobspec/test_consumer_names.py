"""Issue 33 item 3: names the consumers refuse. `7b-resnet` passed our pattern, rendered and
validated, and every operator refused it; a long name rendered and the MPI Operator or the
Trainer's JobSet refused the names they derive from it. Now each derived name is checked at
load (`facts/derived_names.py`), at the job's `name` line.

The facts carry the consumers' own table-driven test cases as vectors:
- kubeflow/trainer v1.9.4 `pkg/webhooks/pytorch/pytorchjob_webhook_test.go`
  TestValidateV1PyTorchJob "pytorchJob name does not meet DNS1035" (`0-test`);
- kubeflow/mpi-operator v0.8 `pkg/apis/kubeflow/validation/validation_test.go`
  TestValidateMPIJob: "valid with worker (intel)" (`foo`, 3 workers), "valid (intel)" (no
  Worker), "invalid fields" (a 54-character name, 1000 workers), "invalid mpiJob name"
  (`1-foo`);
- kubernetes-sigs/jobset v0.12.0 `pkg/webhooks/jobset_webhook_test.go` TestValidateCreate
  "jobset name will result in job name being too long" (62 a's, `rj`, 101 replicas) and "...
  a pod name being too long" (56 a's, Indexed, 1 completion).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.built_repos import IDS, REPOSITORIES, overlay
from trainops.core.errors import InputError
from trainops.facts import derived_names as dn
from trainops.jobspec.load import load_repository

PYTORCH_WEBHOOK = "pkg/webhooks/pytorch/pytorchjob_webhook.go:79"


def _refused(names: list[dn.DerivedName]) -> bool:
    return bool(dn.refused(names))


def test_training_operator_vectors() -> None:
    assert _refused(dn.training_operator_names("PyTorchJob", "0-test", {"Master": 1}))
    assert not _refused(dn.training_operator_names("PyTorchJob", "test", {"Master": 1}))
    assert dn.training_operator_names("MPIJob", "0-test", {"Worker": 1}) == []  # v1: no check


@pytest.mark.parametrize(
    ("name", "workers", "refused"),
    [
        ("foo", 3, False),
        ("foo", 0, False),
        ("this-name-is-waaaaaaaay-too-long-for-a-worker-hostname", 1000, True),
        ("1-foo", 0, True),
    ],
)
def test_mpi_operator_vectors(name: str, workers: int, refused: bool) -> None:
    assert _refused(dn.mpi_operator_names(name, workers)) is refused


@pytest.mark.parametrize(
    ("name", "replicated", "refused"),
    [
        ("a" * 62, [("rj", 101, None)], True),
        ("a" * 56, [("rj", 1, 1)], True),
        ("test", [("rj", 1, 1)], False),
    ],
)
def test_jobset_vectors(
    name: str, replicated: list[tuple[str, int, int | None]], refused: bool
) -> None:
    names = [n for n in dn.trainjob_names(name, replicated) if n.what != "the TrainJob's name"]
    assert _refused(names) is refused


def _rename(root: Path, old: str, new: str) -> Path:
    path = root / "jobs" / f"{new}.yaml"
    (root / "jobs" / f"{old}.yaml").rename(path)
    path.write_text(path.read_text().replace(f"name: {old}\n", f"name: {new}\n", 1))
    return path


def _problems(root: Path) -> list[str]:
    with pytest.raises(InputError) as err:
        load_repository(root)
    return [str(p) for p in err.value.problems]


def _name_line(path: Path, name: str) -> int:
    return path.read_text().splitlines().index(f"name: {name}") + 1


def test_a_name_starting_with_a_digit_is_refused_once_at_its_line(scratch: Path) -> None:
    path = _rename(scratch, "resnet50-ddp", "7b-resnet")
    (problem,) = _problems(scratch)  # three targets, one mistake
    assert problem.startswith(f"jobs/7b-resnet.yaml:{_name_line(path, '7b-resnet')}:")
    assert "not a DNS-1035 label" in problem and "starting with a letter" in problem
    assert PYTORCH_WEBHOOK in problem and "trainjob_types.go:36" in problem


def test_a_long_name_the_trainers_jobset_refuses(scratch: Path) -> None:
    """53 characters pass our pattern and the Training Operator, but JobSet's pod names
    `<name>-node-0-<index>-abcde` pass 63 on the Trainer v2 cluster."""
    name = "resnet50-ddp-" + "x" * 40
    path = _rename(scratch, "resnet50-ddp", name)
    (problem,) = _problems(scratch)
    assert problem.startswith(f"jobs/{name}.yaml:{_name_line(path, name)}:")
    assert "too long for cluster `onprem-h200`" in problem
    assert "jobset_webhook.go:249" in problem and "longer than 63 characters" in problem


def test_the_mpi_operators_worker_host_names(scratch: Path) -> None:
    name = "horovod-training-" + "x" * 36  # 53 characters
    path = _rename(scratch, "horovod-training", name)
    text = path.read_text()
    assert "\nreplicas: 4\n" in text
    path.write_text(text.replace("\nreplicas: 4\n", "\nreplicas: 1000\n", 1))
    (problem,) = _problems(scratch)
    assert f"`{name}-worker-999` is longer than 63 characters (64)" in problem
    assert "MPI Operator v0.8" in problem and "validation.go:64" in problem


@pytest.mark.slow
@pytest.mark.parametrize("overlay_id", IDS)
def test_the_models_replica_counts_are_the_rendered_ones(overlay_id: str) -> None:
    """`TrainingJob.replica_counts` (what the check derives names from) against the built
    objects: every replica type and count; an elastic job's Workers up to `maxReplicas`."""
    built = overlay(overlay_id)
    repo = load_repository(REPOSITORIES[built.repo])
    jobs = {j.name: j for j in repo.jobs}
    cluster = repo.clusters[built.cluster]
    for obj in built.of_kind("PyTorchJob", "TFJob", "MPIJob"):
        job = jobs[obj["metadata"]["name"]]
        (target,) = [t for t in job.targets if t.cluster == cluster.name]
        spec = obj["spec"]
        specs = spec[next(k for k in spec if k.endswith("ReplicaSpecs"))]
        rendered = {t: s.get("replicas", 1) for t, s in specs.items()}
        if "elasticPolicy" in spec:
            rendered["Worker"] = max(rendered["Worker"], spec["elasticPolicy"]["maxReplicas"])
        assert job.replica_counts(target) == rendered, obj["metadata"]["name"]


def test_a_claim_trainops_creates_is_a_dns_subdomain(scratch: Path) -> None:
    """`claimName` with `size` is a PersistentVolumeClaim trainops creates under that name."""
    path = scratch / "jobs" / "resnet50-ddp.yaml"
    text = path.read_text()
    assert "  checkpoints:\n" in text
    claim = "  checkpoints:\n    claimName: Team_Ckpt\n"
    path.write_text(text.replace("  checkpoints:\n", claim, 1))
    (problem,) = _problems(scratch)
    line = path.read_text().splitlines().index("    claimName: Team_Ckpt") + 1
    assert problem.startswith(f"jobs/resnet50-ddp.yaml:{line}:")
    assert "`Team_Ckpt` is not a DNS-1123 subdomain" in problem
