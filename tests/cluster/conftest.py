"""Fixtures for the cluster-facing commands: an API emulator, a repository, a kubeconfig.

These tests use an API emulator (kmock, a real HTTP server on 127.0.0.1), not a
Kubernetes cluster: none can run on the build machines. See trainops/cluster/emulator.py
for what it does like a real API server and where it had to be taught to. The steps to
try the same commands on a real cluster (kind + Training Operator) are in docs/cluster.md.
"""

from __future__ import annotations

import copy
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, UPSTREAM, require_tool, require_upstream, shared_required
from trainops.cli import main
from trainops.cluster.emulator import CRD_KINDS, DECLARED, kinds_from_crds
from trainops.cluster.emulator_thread import RunningEmulator, serve
from trainops.core.manifest import Manifest
from trainops.jobspec.load import load_repository
from trainops.validate.repo import build_overlay

RESPONSES = Path(__file__).parent / "responses"
CONTEXT = "trainops-test"
JOB_UID = "9d8c7b6a-5f4e-4d3c-8b2a-190817263544"
CREATED = "2026-11-23T08:00:00Z"


def response(file: str, key: str) -> Any:
    """A recorded shape from tests/cluster/responses/<file>.yaml."""
    data = yaml.safe_load((RESPONSES / f"{file}.yaml").read_text(encoding="utf-8"))
    return copy.deepcopy(data[key] if key else data)


@pytest.fixture(scope="session")
def kinds() -> dict[tuple[str, str], tuple[str, bool]]:
    """What the emulated cluster serves: the upstream CRDs' kinds where ../shared is there
    (required under CI), else the same kinds written out (the GitHub-hosted workflow)."""
    if UPSTREAM.exists() or shared_required():
        return {**DECLARED, **kinds_from_crds(require_upstream())}
    return {**DECLARED, **CRD_KINDS}


@pytest.fixture
def api(kinds: dict[tuple[str, str], tuple[str, bool]]) -> Iterator[RunningEmulator]:
    """The emulator, serving a cluster with the Training Operator, Kueue and Volcano CRDs
    and the two training namespaces."""
    with serve(kinds) as running:
        running.add(*(namespace(n) for n in ("ml-vision", "ai-training")))
        yield running


def namespace(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "uid": f"ns-{name}", "creationTimestamp": CREATED},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """The shipped jobs and clusters; cloud-h100's profile names its kubeconfig context."""
    if shutil.which("kustomize") is None:
        require_tool("kubectl")  # `kubectl kustomize` builds the overlays
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("jobs", "clusters"):
        shutil.copytree(REPO / name, root / name)
    shutil.copy(REPO / "trainops.yaml", root / "trainops.yaml")
    profile = root / "clusters" / "cloud-h100.yaml"
    profile.write_text(profile.read_text(encoding="utf-8") + f"context: {CONTEXT}\n")
    return root


def write_kubeconfig(path: Path, server: str, current: str = "elsewhere") -> Path:
    """A kubeconfig with the emulator as context `trainops-test` and an unrelated
    current-context (so tests show the profile's context is the one used)."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "emulator", "cluster": {"server": server}},
            {"name": "elsewhere", "cluster": {"server": "https://127.0.0.1:1"}},
        ],
        "users": [{"name": "alice", "user": {"token": "test-token-not-a-secret"}}],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": "emulator", "user": "alice"}},
            {"name": "elsewhere", "context": {"cluster": "elsewhere", "user": "alice"}},
        ],
        "current-context": current,
    }
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


@pytest.fixture
def kubeconfig(tmp_path: Path, api: RunningEmulator) -> Path:
    return write_kubeconfig(tmp_path / "kubeconfig", api.url)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`trainops ARGS` in this process: exit code, stdout, stderr."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def built(root: Path, cluster: str = "cloud-h100") -> list[Manifest]:
    return build_overlay(load_repository(root), cluster)[1]


def find(manifests: list[Manifest], kind: str, name: str) -> dict[str, Any]:
    return next(copy.deepcopy(m.data) for m in manifests if m.kind == kind and m.name == name)


def live(
    obj: dict[str, Any], status: dict[str, Any] | None = None, uid: str = JOB_UID
) -> dict[str, Any]:
    """`obj` as the API server holds it after Flux applied it: server stamps, defaults
    (what `live-diff` must ignore) and, if given, the status the operator wrote."""
    out = copy.deepcopy(obj)
    meta = out["metadata"]
    meta.update(
        uid=uid,
        resourceVersion="981100",
        generation=1,
        creationTimestamp=CREATED,
        managedFields=[
            {
                "manager": "kustomize-controller",
                "operation": "Apply",
                "apiVersion": out["apiVersion"],
                "time": CREATED,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {}},
            }
        ],
    )
    meta.setdefault("labels", {}).update(
        {
            "kustomize.toolkit.fluxcd.io/name": "cloud-h100",
            "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
        }
    )
    if out["kind"] == "PyTorchJob":
        out["spec"].setdefault("runPolicy", {})["suspend"] = False  # Kueue's
        for replica in out["spec"]["pytorchReplicaSpecs"].values():
            replica["template"].setdefault("metadata", {})["creationTimestamp"] = None
    if out["kind"] == "Service":
        out["spec"].update(
            clusterIPs=["None"],
            ipFamilies=["IPv4"],
            ipFamilyPolicy="SingleStack",
            sessionAffinity="None",
            type="ClusterIP",
            internalTrafficPolicy="Cluster",
        )
    if out["kind"] == "PersistentVolumeClaim":
        out["spec"].update(volumeMode="Filesystem", volumeName=f"pvc-{uid}")
        out["spec"]["resources"]["requests"]["storage"] = _canonical(
            out["spec"]["resources"]["requests"]["storage"]
        )
        out["status"] = {"phase": "Bound", "accessModes": out["spec"]["accessModes"]}
    if status is not None:
        out["status"] = status
    return out


def _canonical(quantity: str) -> str:
    """How the API server may rewrite a quantity (`1Ti` -> `1024Gi` style, same value)."""
    if quantity.endswith("Ti"):
        return f"{int(quantity[:-2]) * 1024}Gi"
    if quantity.endswith("Gi"):
        return f"{int(quantity[:-2]) * 1024}Mi"
    return quantity


def pod(
    job: str,
    replica: str,
    index: int,
    status: dict[str, Any],
    *,
    ns: str = "ml-vision",
    node_selector: dict[str, str] | None = None,
    memory: str = "64Gi",
) -> dict[str, Any]:
    """A training pod as the Training Operator creates it (its labels), with `status`."""
    name = f"{job}-{replica}-{index}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"pod-{name}",
            "creationTimestamp": CREATED,
            "labels": {
                "training.kubeflow.org/job-name": job,
                "training.kubeflow.org/operator-name": "pytorchjob-controller",
                "training.kubeflow.org/replica-type": replica,
                "training.kubeflow.org/replica-index": str(index),
            },
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "PyTorchJob",
                    "name": job,
                    "uid": JOB_UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {
                    "name": "pytorch",
                    "image": "ghcr.io/example/trainer:v1.4.0",
                    "resources": {"limits": {"memory": memory, "nvidia.com/gpu": "1"}},
                }
            ],
            "nodeSelector": node_selector or {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
            "restartPolicy": "OnFailure",
            "schedulerName": "default-scheduler",
        },
        "status": status,
    }


SCHEDULER_KINDS = {
    "Workload": "kueue.x-k8s.io/v1beta1",
    "PodGroup": "scheduling.volcano.sh/v1beta1",
}


def owned(kind: str, *, name: str, job: str, ns: str, status: dict[str, Any]) -> dict[str, Any]:
    """A Kueue Workload or Volcano PodGroup owned by PyTorchJob `job` (uid JOB_UID)."""
    return {
        "apiVersion": SCHEDULER_KINDS[kind],
        "kind": kind,
        "metadata": {
            "name": name,
            "namespace": ns,
            "uid": f"{kind.lower()}-{name}",
            "creationTimestamp": CREATED,
            "ownerReferences": [
                {
                    "apiVersion": "kubeflow.org/v1",
                    "kind": "PyTorchJob",
                    "name": job,
                    "uid": JOB_UID,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {},
        "status": status,
    }
