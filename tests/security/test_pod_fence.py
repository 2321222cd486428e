"""Issue 29, items 1 to 4: a job spec cannot run as the delivery account (or any account the
profile does not declare), mount a token, jump the queue or read other teams' secrets, on
any cluster kind. Each escape is refused when the job is loaded (file:line, exit 2, nothing
written); `validate --manifests --cluster` holds any manifest to the same fence (`pod-fence`,
TO650, one function for both: trainops/facts/pod_fence.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.security.test_attacks import _refused
from tests.tools import REPO, trainops
from trainops.facts.pod_fence import DELIVERY_SERVICE_ACCOUNTS
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


def test_manifests_under_validation_are_held_to_the_profiles_fence(tmp_path: Path) -> None:
    """CI validating a manifest it did not write, with a real profile's context."""
    fixture = REPO / "tests/rules/fixtures/pod-fence/fail.yaml"
    result = trainops(
        REPO, "validate", "--manifests", str(fixture), "--cluster", "onprem-a100",
        "--format", "json",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    messages = [f["message"] for f in json.loads(result.stdout)["findings"]
                if f["rule"] == "pod-fence"]  # fmt: skip
    for says in (
        "delivery account",
        "system-node-critical",
        "`nodeName`",
        "every taint",
        "control-plane",
        "`envFrom`",
        "Secret volume",
        "CSI volume",
        "the token",
    ):
        assert any(says in m for m in messages), (says, messages)  # fmt: skip


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
    assert "jobs/llm-finetune.yaml:57:" in err and "is read-only for jobs" in err
