"""Import against the cluster's pod fence (`jobAccess`, docs/security.md): a toleration the
profile's covers is written as the profile's (the fence admits only those), and what only the
platform team can grant (an existing claim, a Secret volume) is refused where the manifest
writes it, with both ways out. Before, the first was refused and the others were refused as
"(import): the imported spec does not load", without file or line."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.tools import REPO, copy_inputs, trainops, tree
from trainops.importer.adopt import tolerates_all_of

GPU_EXISTS = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}

MPIJOB = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: nccl, namespace: ml-vision}
spec:
  slotsPerWorker: 8
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          tolerations: [{key: nvidia.com/gpu, effect: NoSchedule}]
          containers:
            - name: launcher
              image: example/nccl:1.0
              command: [mpirun, -np, "16", /opt/nccl-tests/all_reduce_perf, -b, "8"]
    Worker:
      replicas: 2
      template:
        spec:
          tolerations: [{key: nvidia.com/gpu, effect: NoSchedule}]
          containers:
            - {name: worker, image: "example/nccl:1.0", resources: {limits: {nvidia.com/gpu: 8}}}
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
              command: [python, train.py]
              resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}, requests: {cpu: "2"}}
              volumeMounts: [{name: data, mountPath: /data}]
          volumes: [VOLUME]
"""


def test_tolerates_all_of_follows_kubernetes_matching() -> None:
    """k8s.io/api core/v1 toleration.go ToleratesTaint: operator defaults to Equal."""
    narrow = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
    assert tolerates_all_of(GPU_EXISTS, narrow)
    assert tolerates_all_of({"operator": "Exists"}, narrow)
    assert not tolerates_all_of(narrow, GPU_EXISTS), "Equal '' tolerates fewer than Exists"
    assert not tolerates_all_of({**GPU_EXISTS, "effect": "NoExecute"}, narrow)
    assert not tolerates_all_of({**GPU_EXISTS, "key": "other"}, narrow)
    assert tolerates_all_of({**GPU_EXISTS, "effect": ""}, {**narrow, "effect": "NoExecute"})


@pytest.mark.slow
def test_a_toleration_the_profiles_covers_is_written_as_the_profiles(tmp_path: Path) -> None:
    """The corpus's EFA NCCL test (24) lets its Launcher tolerate the GPU taint without an
    operator: cloud-h100's `Exists` toleration covers it, so the Launcher keeps landing where
    it did, and the job renders."""
    root = copy_inputs(REPO, tmp_path / "repo")
    source = tmp_path / "nccl.yaml"
    source.write_text(MPIJOB)
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nccl.yaml:11:25: toleration {'key': 'nvidia.com/gpu', 'effect': 'NoSchedule'}" in (
        result.stdout
    )
    assert trainops(root, "render").returncode == 0
    mpijob = yaml.safe_load((root / "base" / "nccl" / "mpijob.yaml").read_text())
    overlay = (root / "overlays" / "cloud-h100").rglob("*.yaml")
    assert mpijob["kind"] == "MPIJob" and any(p.name for p in overlay)
    built = trainops(root, "validate", "--cluster", "cloud-h100", "--format", "json")
    findings = [f for f in yaml.safe_load(built.stdout)["findings"] if f["name"] == "nccl"]
    assert not [f for f in findings if f["rule"] in {"pod-fence", "schema", "build"}], findings


@pytest.mark.slow
@pytest.mark.parametrize(
    ("volume", "says"),
    [
        (
            "{name: data, persistentVolumeClaim: {claimName: team-data}}",
            "small.yaml:16:21: claim `team-data` exists outside these files and cluster"
            " `cloud-h100` does not share it with jobs: import its PersistentVolumeClaim"
            " manifest with the job (trainops then creates the claim for it), or have the"
            " platform team add `{name: team-data, writable: true}` to `jobAccess.sharedClaims`"
            " in clusters/cloud-h100.yaml",
        ),
        (
            "{name: data, secret: {secretName: krb}}",
            "small.yaml:16:21: Secret volume `krb` is not one cluster `cloud-h100` lets jobs"
            " mount: read its keys through `secretEnv`, or have the platform team add it to"
            " `jobAccess.secretVolumes` in clusters/cloud-h100.yaml",
        ),
    ],
)
def test_what_only_the_platform_grants_is_refused_where_it_is_written(
    tmp_path: Path, volume: str, says: str
) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    before = tree(root)
    source = tmp_path / "small.yaml"
    source.write_text(PYTORCHJOB.replace("VOLUME", volume))
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert says in result.stderr
    assert tree(root) == before


@pytest.mark.slow
def test_an_env_from_secret_is_refused_where_it_is_written(tmp_path: Path) -> None:
    """The corpus's file 25 reads all its settings through `envFrom` a Secret: before, the
    refusal named the object's first line and the loader's words about the spec."""
    root = copy_inputs(REPO, tmp_path / "repo")
    text = PYTORCHJOB.replace("volumes: [VOLUME]", "volumes: [{name: data, emptyDir: {}}]")
    text = text.replace("command: [python, train.py]", "envFrom: [{secretRef: {name: sft-env}}]")
    source = tmp_path / "small.yaml"
    source.write_text(text)
    result = trainops(root, "import", str(source), "--cluster", "cloud-h100")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "small.yaml:13:25: `envFrom` Secret `sft-env` exports every key it holds" in (
        result.stderr
    )
    assert "`secretEnv` (`VAR: {secret: sft-env, key: KEY}`)" in result.stderr
