"""Issue 29, items 1 to 4: a job spec cannot run as the delivery account (or any account the
profile does not declare), mount a token, jump the queue or read other teams' secrets, on
any cluster kind. Each escape is refused when the job is loaded (file:line, exit 2, nothing
written); `validate --manifests --cluster` holds any manifest to the same fence (`pod-fence`,
TO650, one function for both: trainops/facts/pod_fence.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.security.test_attacks import _refused
from tests.tools import REPO, trainops
from trainops.facts.pod_fence import DELIVERY_SERVICE_ACCOUNTS, PodFence, escapes
from trainops.render.gitops.flux_rbac import SERVICE_ACCOUNT

# One job per kind each shipped cluster renders: PyTorchJob, TFJob, MPIJob and, on the
# Trainer v2 cluster onprem-h200, TrainJob (resnet50-ddp targets it).
KINDS = {
    "PyTorchJob": "jobs/llm-finetune.yaml",
    "TFJob": "jobs/tf-distributed.yaml",
    "MPIJob": "jobs/horovod-training.yaml",
    "TrainJob": "jobs/resnet50-ddp.yaml",
}

# (what the job appends, the key the error's line must name, what the error says)
ESCAPES = {
    "delivery-account": ("serviceAccountName: trainops-delivery\n", "serviceAccountName",
                         "delivery account"),
    "undeclared-account": ("serviceAccountName: admin\n", "serviceAccountName",
                           "not an account the cluster profile declares"),
    "system-priority": ("priorityClassName: system-node-critical\n", "priorityClassName",
                        "priority class `system-node-critical`"),
    "token": ("podTemplate:\n  spec:\n    automountServiceAccountToken: true\n",
              "automountServiceAccountToken", "mounts the token"),
    "default-scheduler": ("podTemplate:\n  spec:\n    schedulerName: default-scheduler\n",
                          "schedulerName", "scheduler `default-scheduler`"),
    "node-name": ("replicaPodTemplates:\n  Worker:\n    spec:\n      nodeName: cp-1\n",
                  "nodeName", "`nodeName`"),
    "tolerate-all": ("podTemplate:\n  spec:\n    tolerations: [{operator: Exists}]\n",
                     "tolerations", "tolerates every taint"),
    "control-plane": (
        "affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n"
        "      nodeSelectorTerms:\n        - matchExpressions:\n"
        "            - {key: node-role.kubernetes.io/control-plane, operator: Exists}\n",
        "{key: node-role", "control-plane nodes"),
    "secret-volume": ("extraVolumes:\n  - {name: c, secret: {secretName: other-team}}\n",
                      "- {name: c", "Secret volume"),
    "csi-volume": ("podTemplate:\n  spec:\n    volumes:\n"
                   "      - {name: v, csi: {driver: secrets-store.csi.k8s.io}}\n",
                   "- {name: v", "CSI volume"),
    "other-jobs-claim": ("podTemplate:\n  spec:\n    volumes:\n"
                         "      - {name: x, persistentVolumeClaim: {claimName: other-ckpt}}\n",
                         "- {name: x", "claim `other-ckpt` is neither created by this job"),
    "env-from-secret": ("sidecars:\n  - name: s\n    image: registry.example/s:1.0\n"
                        "    envFrom: [{secretRef: {name: other-team}}]\n",
                        "envFrom", "`envFrom` a Secret"),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_every_escape_is_refused_at_load_on_every_kind(
    scratch: Path, kind: str, escape: str
) -> None:
    job = scratch / KINDS[kind]
    text = job.read_text()
    if kind == "MPIJob" and escape == "node-name":
        appended = ESCAPES[escape][0].replace("Worker", "Launcher")
    else:
        appended = ESCAPES[escape][0]
    job.write_text(text + appended)
    _, key, says = ESCAPES[escape]
    err = _refused(scratch)
    lines = job.read_text().splitlines()
    line = next(i for i, x in enumerate(lines, 1) if i > len(text.splitlines()) and key in x)
    assert f"{KINDS[kind]}:{line}:" in err, err
    assert says in err


@pytest.mark.slow
def test_the_shipped_repository_stays_inside_the_fence_on_every_cluster() -> None:
    """Every rendered pod, Trainer v2's included (the onprem-h200 runtimes mounted the default
    account's token: issue 29.4), sets `automountServiceAccountToken: false` and asks for
    nothing beyond its profile."""
    result = trainops(REPO, "validate", "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert not [f for f in report["findings"] if f["rule"] == "pod-fence"]
    runtimes = sorted((REPO / "overlays/onprem-h200/_runtimes").glob("clustertraining*.yaml"))
    runtimes += [REPO / "base/resnet50-ddp/trainer-v2/trainingruntime.yaml"]
    for path in runtimes:
        assert "automountServiceAccountToken: false" in path.read_text(), path


FENCE_FIXTURE = REPO / "tests/rules/fixtures/pod-fence/fail.yaml"
# What the fixture's pod asks for, as each pod-fence message names it.
FENCE_MESSAGES = (
    "delivery account",
    "system-node-critical",
    "`nodeName`",
    "every taint",
    "control-plane",
    "`envFrom`",
    "Secret volume",
    "CSI volume",
    "the token",
)
# What a TrainJob's runtime patch can carry of them (v2.3.0 PodSpecPatch: no priority class,
# scheduler or nodeName; no env on `node`): the rest must come from a runtime.
PATCH_MESSAGES = ("delivery account", "every taint", "control-plane", "Secret volume",
                  "CSI volume", "the token")  # fmt: skip
# The node's own: hostPID and the node's `/` (Pod Security baseline, every kind).
NODE_ESCAPE = {"hostPID": True}
NODE_VOLUME = {"name": "root", "hostPath": {"path": "/"}}


def _escape_pod(container: str) -> dict[str, Any]:
    """The fixture's pod, its training container named `container`, plus the node escape."""
    doc = yaml.safe_load(FENCE_FIXTURE.read_text())
    pod = copy.deepcopy(doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"])
    pod["spec"]["containers"][0]["name"] = container
    pod["spec"].update(NODE_ESCAPE)
    pod["spec"]["volumes"].append(NODE_VOLUME)
    return pod  # type: ignore[no-any-return]


def _replicas(pod: dict[str, Any], *types: str) -> dict[str, Any]:
    return {t: {"replicas": 1, "restartPolicy": "OnFailure", "template": pod} for t in types}


def _trainjob(runtime_pod: dict[str, Any], patch: dict[str, Any] | None) -> list[dict[str, Any]]:
    """A TrainingRuntime whose node pod is `runtime_pod`, and a TrainJob on it (with one
    runtime patch of `patch`'s pod, when given): the node pod is what the two merge to."""
    meta = {"name": "escape", "namespace": "ml-train"}
    node = {"name": "node", "replicas": 1, "template": {
        "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
        "spec": {"template": runtime_pod}}}  # fmt: skip
    runtime_spec = {"mlPolicy": {"numNodes": 1, "torch": {}},
                    "template": {"spec": {"replicatedJobs": [node]}}}  # fmt: skip
    runtime = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainingRuntime",
               "metadata": meta, "spec": runtime_spec}  # fmt: skip
    spec: dict[str, Any] = {
        "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime",
                       "name": "escape"},
        "trainer": {"image": "registry.example/train:1.0", "numNodes": 2},
    }  # fmt: skip
    if patch is not None:
        spec["runtimePatches"] = [{"manager": "example.com/author", "trainingRuntimeSpec": {
            "template": {"spec": {"replicatedJobs": [
                {"name": "node", "template": {"spec": {"template": patch}}}]}}}}]  # fmt: skip
    trainjob = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                "metadata": meta, "spec": spec}  # fmt: skip
    return [runtime, trainjob]


def _patch_only() -> list[dict[str, Any]]:
    """A clean runtime; every escape a runtime patch can carry, in the TrainJob's patch."""
    clean = {"spec": {"containers": [{"name": "node", "image": "registry.example/t:1.0"}]}}
    escape = _escape_pod("node")["spec"]
    patch = {"spec": {k: escape[k] for k in ("serviceAccountName", "tolerations", "nodeSelector",
                                             "volumes")}}  # fmt: skip
    return _trainjob(clean, patch)


def _kv1(kind: str, key: str, container: str, *types: str) -> list[dict[str, Any]]:
    return [{"apiVersion": "kubeflow.org/v1", "kind": kind,
             "metadata": {"name": "escape", "namespace": "ml-train"},
             "spec": {key: _replicas(_escape_pod(container), *types)}}]  # fmt: skip


# Each kind the shipped clusters run, with the cluster that runs it, and the manifests.
FENCE_KINDS: dict[str, tuple[str, Any, tuple[str, ...]]] = {
    "PyTorchJob": ("onprem-a100", lambda: _kv1("PyTorchJob", "pytorchReplicaSpecs", "pytorch",
                                               "Master", "Worker"), FENCE_MESSAGES),
    "TFJob": ("cloud-h100", lambda: _kv1("TFJob", "tfReplicaSpecs", "tensorflow", "Chief",
                                         "Worker"), FENCE_MESSAGES),
    "MPIJob": ("onprem-a100", lambda: [{
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
        "metadata": {"name": "escape", "namespace": "ml-train"},
        "spec": {"slotsPerWorker": 1, "mpiReplicaSpecs": _replicas(
            _escape_pod("mpi"), "Launcher", "Worker")}}], FENCE_MESSAGES),
    "TrainJob": ("onprem-h200", lambda: _trainjob(_escape_pod("node"), None), FENCE_MESSAGES),
    "TrainJob-patch": ("onprem-h200", _patch_only, PATCH_MESSAGES),
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(FENCE_KINDS))
def test_manifests_under_validation_are_held_to_the_profiles_fence(
    tmp_path: Path, kind: str
) -> None:
    """CI validating a manifest it did not write, with a real profile's context: every
    escape is a `pod-fence` error on every kind (a TrainJob's node pod is its runtime's
    with the runtime patches merged, and an escape may sit in either), and the node escape
    (hostPID, the node's `/`) is a Pod Security error with the profile and without one."""
    cluster, manifests, expected = FENCE_KINDS[kind]
    fixture = tmp_path / "escape.yaml"
    fixture.write_text(yaml.safe_dump_all(manifests()))
    with_profile = trainops(
        REPO, "validate", "--manifests", str(fixture), "--cluster", cluster, "--format", "json"
    )
    assert with_profile.returncode == 1, with_profile.stderr
    findings = json.loads(with_profile.stdout)["findings"]
    messages = [f["message"] for f in findings if f["rule"] == "pod-fence"]
    for says in expected:
        assert any(says in m for m in messages), (says, messages)
    pod_security = ("pod-security", "pod-security-baseline")
    node = [f["message"] for f in findings if f["rule"] in pod_security and not f.get("waived")]
    # A runtime patch has no hostPID: its node escape is the hostPath volume.
    node_escapes = ("hostPath",) if kind == "TrainJob-patch" else ("hostPID", "hostPath")
    assert all(any(e in m for m in node) for e in node_escapes), node
    bare = trainops(REPO, "validate", "--manifests", str(fixture), "--format", "json")
    floor = [f["message"] for f in json.loads(bare.stdout)["findings"]
             if f["rule"] == "pod-security-baseline"]  # fmt: skip
    assert all(any(e in m for m in floor) for e in node_escapes), floor


def test_the_fenced_account_is_the_one_the_delivery_renders() -> None:
    assert SERVICE_ACCOUNT in DELIVERY_SERVICE_ACCOUNTS


def test_a_profile_cannot_declare_the_delivery_account_for_jobs(scratch: Path) -> None:
    profile = scratch / "clusters/onprem-a100.yaml"
    profile.write_text(
        profile.read_text() + "jobAccess:\n  serviceAccounts: [{name: trainops-delivery}]\n"
    )
    assert "clusters/onprem-a100.yaml:" in _refused(scratch)


def test_a_shared_claim_is_read_only_unless_the_profile_says_writable(scratch: Path) -> None:
    """llm-finetune's dataset claim is shared read-only: mounting it read-write (and so
    being able to poison every job's data) is refused; its checkpoint claim is declared
    writable by the shipped profiles."""
    job = scratch / "jobs/llm-finetune.yaml"
    text = job.read_text()
    claim = "    claimName: nfsordma-datasets\n"
    job.write_text(text.replace(claim, claim + "    readOnly: false\n"))
    err = _refused(scratch)
    line = text.splitlines().index(claim.rstrip("\n")) + 1  # the claim's line
    assert f"jobs/llm-finetune.yaml:{line}:" in err and "is read-only for jobs" in err


CLAIMS = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: own-ckpt, namespace: ml-vision, labels: {trainops.dev/job: mine}}
spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Ti}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: their-ckpt, namespace: ml-vision, labels: {trainops.dev/job: theirs}}
spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Ti}}}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: mine, namespace: ml-vision, labels: {trainops.dev/job: mine}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          automountServiceAccountToken: false
          containers:
            - name: pytorch
              image: registry.example/train:1.0
              volumeMounts:
                - {name: own, mountPath: /own}
                - {name: theirs, mountPath: /theirs, readOnly: true}
                - {name: unknown, mountPath: /unknown, readOnly: true}
                - {name: datasets-rw, mountPath: /data}
                - {name: datasets-ro, mountPath: /data-ro, readOnly: true}
                - {name: shared-ckpt, mountPath: /shared}
          volumes:
            - {name: own, persistentVolumeClaim: {claimName: own-ckpt}}
            - {name: theirs, persistentVolumeClaim: {claimName: their-ckpt}}
            - {name: unknown, persistentVolumeClaim: {claimName: team-b-data}}
            - {name: datasets-rw, persistentVolumeClaim: {claimName: nfsordma-datasets}}
            - {name: datasets-ro, persistentVolumeClaim: {claimName: nfsordma-datasets}}
            - {name: shared-ckpt, persistentVolumeClaim: {claimName: nfsordma-checkpoints}}
"""


def test_claims_under_validation_are_held_to_the_profile(tmp_path: Path) -> None:
    """Issue 29.3 under `validate --manifests --cluster`: the claims a pod mounts are its
    job's (created in the set, for it) or shared by the profile (onprem-h200 shares
    nfsordma-datasets read-only and nfsordma-checkpoints writable); another job's claim, an
    unknown one and a read-only shared one mounted read-write are errors. Without a profile
    nothing says which claims are shared: the check does not run."""
    manifest = tmp_path / "claims.yaml"
    manifest.write_text(CLAIMS)
    args = ("validate", "--manifests", str(manifest), "--format", "json")
    with_profile = trainops(REPO, *args, "--cluster", "onprem-h200")
    claims = {
        f["line"]: f["message"]
        for f in json.loads(with_profile.stdout)["findings"]
        if f["rule"] == "pod-fence"
    }
    lines = CLAIMS.splitlines()
    flagged = sorted(lines[n - 1].split("claimName: ")[1].rstrip("}") for n in claims)
    assert flagged == ["nfsordma-datasets", "team-b-data", "their-ckpt"], claims
    assert any("is read-only for jobs" in m for m in claims.values())
    assert with_profile.returncode == 1
    bare = trainops(REPO, *args)
    assert not [f for f in json.loads(bare.stdout)["findings"] if f["rule"] == "pod-fence"]


def test_an_unlisted_toleration_is_quoted_as_yaml() -> None:
    """The toleration is shown as the user would write it in `jobAccess.tolerations` (a public
    NRP job's four tolerations were printed as Python dicts: `{'key': ...}`)."""
    pod = {"containers": [], "automountServiceAccountToken": False,
           "tolerations": [{"effect": "NoSchedule", "key": "nautilus.io/hardware",
                            "operator": "Equal", "value": "large-gpu"}]}  # fmt: skip
    [(path, message)] = list(escapes(pod, PodFence(), token_default=False))
    assert path == ("tolerations", 0)
    assert message.startswith(
        "toleration {key: nautilus.io/hardware, operator: Equal, value: large-gpu,"
        " effect: NoSchedule} is not one"
    ), message
