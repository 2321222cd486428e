"""`trainops import` as a user runs it: what it writes, what it says it could not carry, and
the refusals (removed APIs, a namespace the cluster does not allow, an existing job file):
exit 2, file:line, nothing written."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.tools import REPO, copy_inputs, trainops, tree

SEED000 = REPO / "tests" / "rules" / "seeds" / "seed000.yaml"
MPI_V1ALPHA2 = """\
apiVersion: kubeflow.org/v1alpha2
kind: MPIJob
metadata: {name: old, namespace: ml-vision}
spec: {}
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
    source.write_text(PYTORCHJOB + "---\n" + MPI_V1ALPHA2)
    before = tree(root)
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    line = PYTORCHJOB.count("\n") + 2
    assert f"old.yaml:{line}:" in result.stderr
    assert "MPIJob kubeflow.org/v1alpha2 was removed" in result.stderr
    assert "kubeflow.org/v2beta1" in result.stderr
    assert tree(root) == before, "nothing is written"


def test_other_kinds_are_listed_not_dropped(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    text = SEED000.read_text().replace("namespace: default", "namespace: ml-vision")
    source = tmp_path / "seed000.yaml"
    source.write_text(text)
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 1, "a TFJob was not imported"
    assert "TFJob kubeflow.org/v1 not imported" in result.stdout
    # The claim beside the job becomes one trainops creates under its own name; the
    # storage class the cluster does not offer is named.
    spec = yaml.safe_load((root / "jobs" / "resnet-distributed-training.yaml").read_text())
    assert spec["volumes"]["dataset"]["claimName"] == "imagenet-dataset"
    assert spec["volumes"]["dataset"]["size"] == "500Gi"
    assert "storage class `fast-ssd` is not offered by cluster `cloud-h100`" in result.stdout
    assert spec["metricsPort"] == 8000
    assert "Service training-metrics: re-rendered" in result.stdout


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
