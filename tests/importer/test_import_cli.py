"""`trainops import` as a user runs it: what it writes, what it says it could not carry, and
the refusals (removed APIs, a namespace the cluster does not allow, an existing job file):
exit 2, file:line, nothing written."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.rules.helpers import seed_text, yaml_blocks
from tests.tools import REPO, copy_inputs, trainops, tree

SEED000 = REPO / "tests" / "rules" / "seeds" / "seed000.yaml"
# Removed, and mapped onto nothing served (converted APIs: tests/importer/test_convert.py).
PYTORCH_V1ALPHA1 = """\
apiVersion: kubeflow.org/v1alpha1
kind: PyTorchJob
metadata: {name: old, namespace: ml-vision}
spec: {}
"""
XGBOOSTJOB = """\
apiVersion: kubeflow.org/v1
kind: XGBoostJob
metadata: {name: boosted, namespace: ml-vision}
spec: {}
"""
MPIJOB_PI = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: pi, namespace: ml-vision}
spec:
  mpiReplicaSpecs:
    Launcher:
      template:
        spec:
          containers:
            - name: launcher
              image: example/pi:1.0
              command: [mpirun, -n, "2", /opt/pi]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: worker, image: example/pi:1.0}]
"""
PYTORCHJOB = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: small, namespace: ml-vision}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: example/train:1.0
              command: [torchrun, --nnodes=2, --nproc_per_node=1, train.py, --lr=0.1]
              resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}, requests: {cpu: "2"}}
              securityContext: {privileged: true}
    Worker:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: example/train:1.0
              command: [torchrun, --nnodes=2, --nproc_per_node=1, train.py, --lr=0.1]
              resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}, requests: {cpu: "2"}}
              securityContext: {privileged: true}
"""


def _repo(tmp_path: Path) -> Path:
    return copy_inputs(REPO, tmp_path / "repo")


def test_import_writes_a_spec_that_renders_and_names_what_it_dropped(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    source = tmp_path / "small.yaml"
    source.write_text(PYTORCHJOB)
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "imported" in result.stdout and "jobs/small.yaml" in result.stdout
    # The torchrun flags the operator's PET_* variables carry are dropped, and said so, with
    # the line of the command.
    line = next(i for i, t in enumerate(PYTORCHJOB.splitlines(), 1) if "command:" in t)
    assert f"small.yaml:{line}:15: torchrun flags" in result.stdout
    assert "torchrun flags --nnodes=2 --nproc_per_node=1 dropped" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "small.yaml").read_text())
    assert spec["command"] == ["python", "train.py"] and spec["args"] == ["--lr=0.1"]
    assert (spec["replicas"], spec["gpusPerReplica"]) == (2, 1)
    assert spec["resources"] == {"cpu": "2", "memory": "8Gi"}
    # What no high-level field says goes into the escape hatch, for every replica type.
    container = spec["podTemplate"]["spec"]["containers"][0]
    assert container["securityContext"] == {"privileged": True}
    assert "replicaPodTemplates" not in spec
    assert trainops(root, "render").returncode == 0
    built = (root / "base" / "small" / "pytorchjob.yaml").read_text()
    assert "privileged: true" in built


def test_removed_apis_are_refused_with_file_and_line(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    source = tmp_path / "old.yaml"
    source.write_text(PYTORCHJOB + "---\n" + PYTORCH_V1ALPHA1)
    before = tree(root)
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    line = PYTORCHJOB.count("\n") + 2
    assert f"old.yaml:{line}:" in result.stderr
    assert "PyTorchJob kubeflow.org/v1alpha1 was removed" in result.stderr
    assert "rewrite it as kubeflow.org/v1" in result.stderr
    assert tree(root) == before, "nothing is written"


def test_seed_jobs_and_the_objects_beside_them(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    for job in (root / "jobs").iterdir():
        job.unlink()
    text = SEED000.read_text().replace("namespace: default", "namespace: ml-vision")
    source = tmp_path / "seed000.yaml"
    source.write_text(text + "---\n" + XGBOOSTJOB)
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 1, "the XGBoostJob was not imported"
    assert "XGBoostJob kubeflow.org/v1 not imported: not a training job kind" in result.stdout
    # The TFJob becomes a `framework: tensorflow` job: the Chief and Workers its replicas.
    tf = yaml.safe_load((root / "jobs" / "tensorflow-distributed.yaml").read_text())
    assert (tf["framework"], tf["replicas"], tf["tensorflow"]) == (
        "tensorflow",
        3,
        {"chief": True, "successPolicy": "ChiefOrWorker0"},
    )
    assert tf["command"] == ["python", "/opt/training/train.py"]
    # The claim beside the job becomes one trainops creates under its own name; the
    # storage class the cluster does not offer is named.
    spec = yaml.safe_load((root / "jobs" / "resnet-distributed-training.yaml").read_text())
    assert spec["volumes"]["dataset"]["claimName"] == "imagenet-dataset"
    assert spec["volumes"]["dataset"]["size"] == "500Gi"
    assert "storage class `fast-ssd` is not offered by cluster `cloud-h100`" in result.stdout
    assert spec["metricsPort"] == 8000
    assert "Service training-metrics: re-rendered" in result.stdout
    assert trainops(root, "render").returncode == 0


def test_mpijob_launcher_argv_is_read_back(tmp_path: Path) -> None:
    """The seed's Horovod MPIJob: the program and the author's mpirun options come back as
    `command`/`args` and `mpi.mpirunArgs`; what trainops generates (-np, the -x exports of
    the cluster's NCCL env) is removed and named with its line; the seed's `-x NAME=VALUE`
    elements are split."""
    root = _repo(tmp_path)
    (root / "jobs" / "horovod-training.yaml").unlink()
    blocks = [b for b in yaml_blocks(seed_text("001")) if "kind: MPIJob" in b]
    source = tmp_path / "horovod.yaml"
    source.write_text(blocks[0] + "\n")
    result = trainops(root, "import", str(source), "--cluster", "onprem-a100")
    assert result.returncode == 0, result.stdout + result.stderr
    spec = yaml.safe_load((root / "jobs" / "horovod-training.yaml").read_text())
    assert spec["framework"] == "mpi"
    assert (spec["command"], spec["args"]) == (["python", "/workspace/train_horovod.py"], [])
    assert (spec["replicas"], spec["gpusPerReplica"]) == (4, 8)
    # onprem-a100 runs the MPI Operator (`installed.mpiJobs` default): v1 is written as v2beta1.
    assert "apiVersion" not in spec["mpi"]
    assert "MPIJob `kubeflow.org/v1` is written for `kubeflow.org/v2beta1`" in result.stdout
    # horovod/horovod runs as root, the user the MPI Operator logs in to the Workers as
    # (issue 37): written, and --allow-run-as-root is then trainops's to generate.
    assert spec["securityContext"]["runAsUser"] == 0
    assert spec["mpi"]["mpirunArgs"] == [
        "-bind-to",
        "none",
        "-map-by",
        "slot",
        "-x",
        "NCCL_DEBUG=INFO",
    ]
    line = next(i for i, t in enumerate(blocks[0].splitlines(), 1) if "- mpirun" in t) - 1
    assert f"horovod.yaml:{line}:" in result.stdout
    assert "-np 32 removed: trainops generates -np 32 (Workers x slots)" in result.stdout
    assert "-x NCCL_IB_DISABLE=0 -x NCCL_IB_HCA=mlx5 removed" in result.stdout
    assert "`-x NCCL_DEBUG=INFO`" in result.stdout and "split" in result.stdout
    assert trainops(root, "render").returncode == 0
    # Imported as written: validate then names the seed's own mistakes (a moving tag, a
    # TTL that GitOps undoes), for the author to fix in the spec.
    validated = trainops(root, "validate")
    assert validated.returncode == 1
    assert "[image-unpinned]" in validated.stdout and "[gitops-rerun-risk]" in validated.stdout


def test_an_mpi_program_that_is_not_python_runs_as_an_executable(tmp_path: Path) -> None:
    """Issue 26: ranks that run a compiled program (the MPI Operator's pi) are imported with
    `mpi.rankProgram: executable`, the note at the Launcher's command line."""
    root = _repo(tmp_path)
    source = tmp_path / "pi.yaml"
    source.write_text(MPIJOB_PI)
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 0, result.stdout + result.stderr
    line = next(i for i, t in enumerate(MPIJOB_PI.splitlines(), 1) if "command:" in t)
    assert f"pi.yaml:{line}:" in result.stdout
    assert "the ranks run `/opt/pi`, not a python program: `mpi.rankProgram:" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "pi.yaml").read_text())
    assert (spec["command"], spec["mpi"]["rankProgram"]) == (["/opt/pi"], "executable")


def test_refusals_write_nothing(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    source = tmp_path / "small.yaml"
    source.write_text(PYTORCHJOB.replace("ml-vision", "kube-system"))
    before = tree(root)
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 2
    assert "namespace `kube-system` is not allowed on cluster `cloud-h100`" in result.stderr
    assert tree(root) == before
    source.write_text(PYTORCHJOB)
    assert trainops(root, "import", str(source), "--cluster", "cloud-h100").returncode == 0
    again = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert again.returncode == 2 and "jobs/small.yaml: exists" in again.stderr
    unknown = trainops(root, "import", str(source), "--cluster", "cloud-h10")
    assert unknown.returncode == 2 and "did you mean `cloud-h100`?" in unknown.stderr
