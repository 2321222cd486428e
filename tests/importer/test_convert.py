"""Old manifests carried over, not refused (`trainops/importer/convert.py`): the removed
Kubeflow APIs whose shape maps onto a served version are converted, each change noted, and
the result renders; a manifest without `metadata.name` is named after its `generateName` or
its file. Before these conversions each of them was refused (exit 2).

The mappings are the operators' own, read in their sources: TFJob v1beta1's run policy
fields under `spec` (kubeflow/website `content/docs/reference/tfjob/v1beta1/tensorflow.md`)
are v1's `runPolicy`; replica types were read in any case (tf-operator `reconcilePods`
lower-cases them); `Master` is v1's Chief (training-operator
`pkg/apis/kubeflow.org/v1/tensorflow_types.go`: "similar to chief, and kept just for
backwards compatibility"); MPIJob v1alpha1's one template ran both roles, with `gpus: N` cut
into Workers of `--gpus-per-node` GPUs and one hostfile slot per GPU (mpi-operator 0.1.0
`pkg/controllers/mpi_job_controller.go`: `allocateGPUs`, `newConfigMap`, `newLauncher`,
`newWorker`); v1alpha2's `backoffLimit`/`cleanPodPolicy` under `spec` are v2beta1's
`runPolicy` (mpi-operator v0.2.3 `pkg/apis/kubeflow/v1alpha2/types.go`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, copy_inputs, trainops, tree

pytestmark = pytest.mark.slow

TFJOB_V1BETA1 = """\
apiVersion: kubeflow.org/v1beta1
kind: TFJob
metadata: {generateName: mnist-, namespace: kubeflow}
spec:
  cleanPodPolicy: All
  ttlSecondsAfterFinished: 600
  tfReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - {name: tensorflow, image: "example/tf:1.0", command: [python, /mnist.py]}
    WORKER:
      replicas: 2
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - {name: tensorflow, image: "example/tf:1.0", command: [python, /mnist.py]}
"""
MPI_V1ALPHA2 = """\
apiVersion: kubeflow.org/v1alpha2
kind: MPIJob
metadata: {name: resnet}
spec:
  slotsPerWorker: 1
  backoffLimit: 3
  cleanPodPolicy: Running
  mainContainer: trainer
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
            - name: trainer
              image: example/hvd:1.0
              command: [mpirun, -np, "4", --allow-run-as-root, python, /resnet.py]
    Worker:
      replicas: 4
      template:
        spec:
          containers:
            - {name: trainer, image: "example/hvd:1.0", resources: {limits: {nvidia.com/gpu: 1}}}
"""
MPI_V1ALPHA1 = """\
apiVersion: kubeflow.org/v1alpha1
kind: MPIJob
metadata: {name: bench}
spec:
  gpus: GPUS
  template:
    spec:
      containers:
        - name: bench
          image: example/hvd:1.0
          command: [mpirun, python, /bench.py, --model, resnet101]
"""


def _import(tmp_path: Path, name: str, text: str) -> tuple[Path, Any]:
    root = copy_inputs(REPO, tmp_path / "repo")
    source = tmp_path / name
    source.write_text(text)
    result = trainops(
        root, "import", str(source), "--cluster", "cloud-h100", "--namespace", "ml-vision"
    )
    return root, result


def _rendered(root: Path, job: str, kind: str) -> dict[str, Any]:
    assert trainops(root, "render").returncode == 0
    return dict(yaml.safe_load((root / "base" / job / f"{kind}.yaml").read_text()))


@pytest.mark.parametrize("version", ["v1alpha2", "v1beta1"])
def test_tfjob_v1beta1_is_converted_to_v1_and_named_after_its_generate_name(
    tmp_path: Path, version: str
) -> None:
    text = TFJOB_V1BETA1.replace("kubeflow.org/v1beta1", f"kubeflow.org/{version}")
    root, result = _import(tmp_path, "tf.yaml", text)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"tf.yaml:1:1: TFJob kubeflow.org/{version} (removed) converted to kubeflow.org/v1" in (
        result.stdout
    )
    assert f"`spec.cleanPodPolicy` (kubeflow.org/{version}) is `spec.runPolicy.cleanPodPolicy`" in (
        result.stdout
    )
    assert "the `Master` replica is v1's Chief" in result.stdout
    # The old operators lower-cased replica types (tf-operator reconcilePods): `WORKER` ran as
    # the workers, and is v1's `Worker`, not a type to drop.
    assert "the `WORKER` replica is v1's `Worker`" in result.stdout
    assert "named `mnist` after `generateName: mnist-`" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "mnist.yaml").read_text())
    assert spec["tensorflow"]["chief"] is True and spec["replicas"] == 3
    assert spec["runPolicy"]["cleanPodPolicy"] == "All"
    assert spec["runPolicy"]["ttlSecondsAfterFinished"] == 600
    tfjob = _rendered(root, "mnist", "tfjob")
    assert tfjob["apiVersion"] == "kubeflow.org/v1"
    assert set(tfjob["spec"]["tfReplicaSpecs"]) == {"Chief", "Worker"}
    assert tfjob["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 2
    assert tfjob["spec"]["runPolicy"]["cleanPodPolicy"] == "All"


def test_mpijob_v1alpha2_is_converted_to_v2beta1(tmp_path: Path) -> None:
    root, result = _import(tmp_path, "mpi.yaml", MPI_V1ALPHA2)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "MPIJob kubeflow.org/v1alpha2 (removed) converted to kubeflow.org/v2beta1" in (
        result.stdout
    )
    assert "image must run sshd" in result.stdout
    assert "`mainContainer: trainer` dropped" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "resnet.yaml").read_text())
    assert spec["command"] == ["python", "/resnet.py"]
    assert (spec["replicas"], spec["gpusPerReplica"]) == (4, 1)
    assert spec["runPolicy"]["backoffLimit"] == 3
    mpijob = _rendered(root, "resnet", "mpijob")
    assert mpijob["apiVersion"] == "kubeflow.org/v2beta1"
    assert mpijob["spec"]["runPolicy"]["backoffLimit"] == 3
    launcher = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    argv = launcher["containers"][0]["command"] + launcher["containers"][0].get("args", [])
    assert argv[argv.index("-np") + 1] == "4"


def test_mpijob_v1alpha1_gpus_become_workers_of_a_node_each(tmp_path: Path) -> None:
    """`gpus: 16` on 8-GPU nodes: 2 Workers of 8 GPUs, 8 slots each (mpirun's -np 16)."""
    root, result = _import(tmp_path, "bench.yaml", MPI_V1ALPHA1.replace("GPUS", "16"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "`gpus: 16` is 2 Worker(s) of 8 GPUs (8 per node), one slot per GPU" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "bench.yaml").read_text())
    assert (spec["replicas"], spec["gpusPerReplica"]) == (2, 8)
    assert spec["command"] == ["python", "/bench.py"]
    mpijob = _rendered(root, "bench", "mpijob")
    assert mpijob["spec"]["slotsPerWorker"] == 8
    assert mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    launcher = mpijob["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    argv = launcher["containers"][0]["command"] + launcher["containers"][0].get("args", [])
    assert argv[argv.index("-np") + 1] == "16"
    worker = mpijob["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert "sleep" not in worker.get("command", []) + worker.get("args", [])


def test_mpijob_v1alpha1_gpus_the_operator_refused_are_refused(tmp_path: Path) -> None:
    """The 0.1.0 operator refused GPUs that are no multiple of a node's: so does import."""
    root = copy_inputs(REPO, tmp_path / "repo")
    before = tree(root)
    source = tmp_path / "bench.yaml"
    source.write_text(MPI_V1ALPHA1.replace("GPUS", "12"))
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "bench.yaml:5:3: `gpus: 12` is not a multiple of 8 GPUs per node" in result.stderr
    assert tree(root) == before


def test_an_object_without_any_name_is_named_after_its_file(tmp_path: Path) -> None:
    text = TFJOB_V1BETA1.replace("generateName: mnist-, ", "")
    root, result = _import(tmp_path, "My_Job.yaml", text)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "named `my-job` after the file name `My_Job`" in result.stdout
    assert (root / "jobs" / "my-job.yaml").is_file()
