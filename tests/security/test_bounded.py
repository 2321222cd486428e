"""Issue 29.7, bounded always: what a pull request can put in the repository cannot make
trainops read outside it, hang or exhaust memory; each is refused at the door (file, exit 2,
nothing written, no traceback)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.security.test_attacks import _refused
from tests.tools import REPO
from trainops import build
from trainops.core import limits
from trainops.facts.deepspeed import MAX_CLUSTER_PODS
from trainops.validate import kubeconform


def test_a_platform_manifest_symlinked_out_of_the_repository_is_not_read(
    scratch: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """It was read and copied into overlays/<cluster>/platform/, where Argo CD applies it."""
    outside = tmp_path_factory.mktemp("outside") / "queue.yaml"
    source = scratch / "clusters" / "onprem-a100" / "manifests" / "volcano.yaml"
    outside.write_text(source.read_text())
    source.unlink()
    os.symlink(outside, source)
    err = _refused(scratch)
    assert "clusters/onprem-a100/manifests/volcano.yaml" in err
    assert "outside the repository" in err


def test_a_platform_directory_symlinked_out_of_the_repository_is_not_read(
    scratch: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside")
    manifests = scratch / "clusters" / "onprem-a100" / "manifests"
    for path in manifests.iterdir():
        (outside / path.name).write_text(path.read_text())
        path.unlink()
    manifests.rmdir()
    os.symlink(outside, manifests)
    assert "outside the repository" in _refused(scratch)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for a reaper that is not there counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@pytest.mark.slow
def test_a_tool_timeout_kills_the_tools_children(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kustomize runs exec plugins and helm as children; `subprocess.run(timeout=)` killed
    only kustomize itself and left them running (and, holding its output pipes, made run()
    wait for them). The whole process group goes. The tool here is a real shell whose child
    outlives it: what we test is our process handling, not kustomize."""
    pidfile = tmp_path / "child.pid"
    script = f"sleep 120 >/dev/null 2>&1 & echo $! > {pidfile}; wait"
    monkeypatch.setattr(build, "kustomize_command", lambda: ["sh", "-c", script, "kustomize"])
    monkeypatch.setattr(limits, "TOOL_TIMEOUT_SECONDS", 1.0)
    with pytest.raises(build.KustomizeError, match="timed out"):
        build.kustomize(tmp_path)
    child = int(pidfile.read_text())
    for _ in range(50):  # SIGKILL is delivered asynchronously
        if not _alive(child):
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("the tool's child outlived the timeout")


@pytest.mark.slow
def test_kubeconform_runs_through_the_same_bounded_runner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "child.pid"
    script = f"sleep 120 >/dev/null 2>&1 & echo $! > {pidfile}; wait"
    monkeypatch.setattr(
        kubeconform, "kubeconform_command", lambda *_: ["sh", "-c", script, "kubeconform"]
    )
    monkeypatch.setattr(limits, "TOOL_TIMEOUT_SECONDS", 1.0)
    code, _ = kubeconform.run_kubeconform("", tmp_path, "1.31")
    assert code == 124
    child = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    else:
        os.kill(child, 9)
        pytest.fail("kubeconform's child outlived the timeout")


HUGE = 2_147_483_647  # the int32 maximum the Kubeflow CRDs accept for replicas

ELASTIC_DEEPSPEED = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: elastic, namespace: ai-training}
spec:
  elasticPolicy: {rdzvBackend: c10d, minReplicas: 1, maxReplicas: %(n)d}
  pytorchReplicaSpecs:
    Worker:
      replicas: %(n)d
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: registry.example/train:1.0
              command: [torchrun, --nproc-per-node=2, train.py, --deepspeed, /config/ds.json]
              resources:
                limits: {nvidia.com/gpu: 2, memory: 64Gi, cpu: "8"}
                requests: {nvidia.com/gpu: 2}
              volumeMounts: [{name: ds, mountPath: /config}]
          volumes: [{name: ds, configMap: {name: ds-config}}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ds-config, namespace: ai-training}
data:
  ds.json: '{"train_batch_size": 64, "train_micro_batch_size_per_gpu": 2}'
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: fixed, namespace: ai-training}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: %(n)d
      restartPolicy: OnFailure
      template:
        spec:
          nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
          containers:
            - name: pytorch
              image: registry.example/train:1.0
              command: [torchrun, --nproc-per-node=8, train.py]
              resources:
                limits: {nvidia.com/gpu: 8, memory: 64Gi, cpu: "8"}
                requests: {nvidia.com/gpu: 8}
"""


def _limit_memory() -> None:
    """2 GiB of address space: far more than validating two objects needs, far less than the
    16-19 GB the per-world-size and per-pod lists reached before the OOM killer."""
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_int32_replicas_in_manifests_are_computed_not_enumerated(tmp_path: Path) -> None:
    """`validate --manifests` reads any PyTorchJob the CRD accepts (replicas up to int32):
    DeepSpeed's world sizes over the elastic range (rules/checks/deepspeed.py) and the gang's
    pods (rules/checks/capacity.py) are counted, not listed."""
    path = tmp_path / "huge.yaml"
    path.write_text(ELASTIC_DEEPSPEED % {"n": HUGE})
    result = subprocess.run(
        [sys.executable, "-m", "trainops", "--root", str(REPO), "validate", "--manifests",
         str(path), "--cluster", "onprem-a100", "--format", "json"],
        capture_output=True, text=True, check=False, preexec_fn=_limit_memory,
    )  # fmt: skip
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    assert result.returncode == 1, result.stderr
    rules = {f["rule"]: f["message"] for f in json.loads(result.stdout)["findings"]}
    assert "gang-unschedulable" in rules  # 2,147,483,647 pods of 8 GPUs on 8 nodes
    assert "deepspeed-elastic-batch" in rules and "in all)" in rules["deepspeed-elastic-batch"]


def test_the_job_schema_caps_pod_counts_at_what_a_cluster_holds() -> None:
    """Every pod count of the job spec stops at Kubernetes' 150,000 pods per cluster."""
    schema = json.loads((REPO / "trainops/schemas/trainingjob.schema.json").read_text())
    counts = [
        schema["properties"]["replicas"],
        schema["properties"]["elastic"]["properties"]["minReplicas"],
        schema["properties"]["elastic"]["properties"]["maxReplicas"],
    ]
    assert {c["maximum"] for c in counts} == {MAX_CLUSTER_PODS}


def test_an_int32_elastic_range_in_a_job_is_refused_at_load(scratch: Path) -> None:
    """It made `render` build a list of two billion world sizes (MemoryError traceback)."""
    job = scratch / "jobs" / "llm-finetune.yaml"
    job.write_text(job.read_text().replace("  maxReplicas: 8\n", f"  maxReplicas: {HUGE}\n"))
    err = _refused(scratch)
    assert "jobs/llm-finetune.yaml:37:" in err and "maximum 150000" in err


@pytest.mark.parametrize(
    ("file", "old", "new", "says"),
    [
        # Argo CD matches AppProject destinations and sourceRepos with github.com/gobwas/glob
        # (argo-cd util/glob/glob.go): `{a,b}` and `[...]` match several servers/repositories.
        (
            "clusters/onprem-a100.yaml",
            "server: https://onprem-a100.k8s.internal:6443",
            "server: https://{onprem-a100,evil}.k8s.internal:6443",
            "must match",
        ),
        (
            "clusters/onprem-a100.yaml",
            "server: https://onprem-a100.k8s.internal:6443",
            "server: https://onprem-a10[0-9].k8s.internal:6443",
            "must match",
        ),
        (
            "trainops.yaml",
            "repoURL: https://github.com/example/trainops.git",
            "repoURL: https://github.com/example/{trainops,evil}.git",
            "must match",
        ),
        (
            "clusters/cloud-h100.yaml",
            "namespaces: [ml-vision, ai-training]",
            "namespaces: [ml-vision, ai-training]\nmonitoringNamespace: kube-system",
            "is not allowed",
        ),
    ],
    ids=["server-braces", "server-class", "repo-braces", "monitoring-kube-system"],
)
def test_profile_globs_and_system_namespaces_are_refused(
    scratch: Path, file: str, old: str, new: str, says: str
) -> None:
    path = scratch / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    err = _refused(scratch)
    line = next(
        i for i, x in enumerate(path.read_text().splitlines(), 1) if new.splitlines()[-1] in x
    )
    assert f"{file}:{line}" in err and says in err


def test_a_training_namespace_cannot_be_the_flux_namespace(scratch: Path) -> None:
    """Flux's namespace holds the GitRepository (and its credentials) and the Kustomizations
    that impersonate the delivery account: a job there could read or change them."""
    settings = scratch / "trainops.yaml"
    settings.write_text(settings.read_text() + "fluxNamespace: ai-training\n")
    err = _refused(scratch)
    assert "clusters/cloud-h100.yaml:" in err and "fluxNamespace" in err
