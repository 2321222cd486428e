"""Issue 35 items 1 and 4: the claims a job reaches and the secrets and tokens it reads, every
way it can ask for them.

1. A job cannot adopt the profile's shared claim (a volume of that name with a `size`: its
   delivery would own the platform's claim and delete it with the job), clone a claim it may
   not read (an ephemeral volume's `dataSource`), write a read-only shared claim as a block
   device (`volumeDevices`), or take another team's DRA ResourceClaim.
4. Secret sources and service-account tokens in a `projected` volume are Secret volumes and
   token mounts: refused through `extraVolumes`, `podTemplate`, Trainer v2, the MPI Launcher
   and `--manifests`.

Each is refused at load (file:line, exit 2, nothing written) and by `pod-fence` on manifests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.rules.conftest import make_cluster
from tests.rules.helpers import manifests_from_text, run
from tests.security.test_attacks import _refused
from tests.security.test_pod_fence import KINDS
from tests.tools import trainops
from trainops.facts.pod_fence import PodFence

DATASET = "    claimName: nfsordma-datasets\n"


def _line(path: Path, after: int, needle: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, x in enumerate(lines, 1) if i > after and needle in x)


def test_a_job_cannot_adopt_the_profiles_shared_claim(scratch: Path) -> None:
    """llm-finetune declares the read-only shared `nfsordma-datasets` as its own (a `size`):
    on main it validated, and the overlay rendered a PVC of that name mounted read-write."""
    job = scratch / "jobs/llm-finetune.yaml"
    job.write_text(job.read_text().replace(DATASET, DATASET + "    size: 1Ti\n"))
    err = _refused(scratch)
    line = _line(job, 0, "size: 1Ti")
    assert f"jobs/llm-finetune.yaml:{line}:" in err, err
    assert "claim `nfsordma-datasets` is shared by the cluster profile" in err


def test_only_the_job_the_profile_names_creates_a_shared_claim(scratch: Path) -> None:
    """A claim one job creates for others is shared with `createdBy`: that job may create
    it, no other job may (it would own and delete it)."""
    entry = "    - {name: shared-scratch, createdBy: llm-finetune}\n"
    for name in ("onprem-a100", "cloud-h100"):
        profile = scratch / f"clusters/{name}.yaml"
        text = profile.read_text()
        profile.write_text(text.replace("  sharedClaims:", "  sharedClaims:\n" + entry[:-1], 1))
    scratch_volume = "  scratch: {mountPath: /scratch, claimName: shared-scratch, size: 1Gi}\n"
    creator = scratch / "jobs/llm-finetune.yaml"
    creator.write_text(creator.read_text().replace("volumes:\n", "volumes:\n" + scratch_volume))
    assert trainops(scratch, "render").returncode == 0
    other = scratch / "jobs/tf-distributed.yaml"
    other.write_text(other.read_text().replace("volumes:\n", "volumes:\n" + scratch_volume))
    err = _refused(scratch, "render", "--check")
    assert "jobs/tf-distributed.yaml:" in err and "job `llm-finetune`'s (`createdBy`)" in err


# (what the job appends, the text of the line the error names, what the error says)
CLAIM_ESCAPES = {
    "clone": (
        "podTemplate:\n  spec:\n    volumes:\n      - name: copy\n        ephemeral:\n"
        "          volumeClaimTemplate:\n            spec:\n"
        "              accessModes: [ReadWriteOnce]\n"
        "              resources: {requests: {storage: 1Ti}}\n"
        "              dataSource: {kind: PersistentVolumeClaim, name: other-ckpt}\n",
        "dataSource:", "claim `other-ckpt` is neither created by this job"),
    "block-device": (
        "sidecars:\n  - name: dd\n    image: registry.example/dd:1.0\n"
        "    volumeDevices: [{name: dataset, devicePath: /dev/xvda}]\n",
        "claimName: nfsordma-datasets", "shared claim `nfsordma-datasets` is read-only"),
    "dra-claim": (
        "replicaPodTemplates:\n  Worker:\n    spec:\n"
        "      resourceClaims: [{name: gpu, source: {resourceClaimName: team-b-gpus}}]\n",
        "resourceClaimName", "`resourceClaimName: team-b-gpus` takes an existing ResourceClaim"),
}  # fmt: skip


@pytest.mark.parametrize("escape", sorted(CLAIM_ESCAPES))
def test_claims_reached_around_the_volume_are_refused_at_load(scratch: Path, escape: str) -> None:
    job = scratch / "jobs/llm-finetune.yaml"
    # DRA's pod field changed shape in Kubernetes 1.31: the job targets the 1.30 cluster alone.
    text = job.read_text().replace("  - cluster: cloud-h100\n    replicas: 2\n", "")
    appended, where, says = CLAIM_ESCAPES[escape]
    job.write_text(text + appended)
    err = _refused(scratch)
    after = 0 if escape == "block-device" else len(text.splitlines())
    assert f"jobs/llm-finetune.yaml:{_line(job, after, where)}:" in err, err
    assert says in err


PROJECTED = (
    "extraVolumes:\n  - name: creds\n    projected:\n      sources:\n"
    "        - secret: {name: other-team}\n"
    "podTemplate:\n  spec:\n    volumes:\n      - name: vault-token\n        projected:\n"
    "          sources:\n            - serviceAccountToken: {audience: vault, path: token}\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_projected_secrets_and_tokens_are_refused_at_load_on_every_kind(
    scratch: Path, kind: str
) -> None:
    job = scratch / KINDS[kind]
    text = job.read_text()
    job.write_text(text + PROJECTED)
    err = _refused(scratch)
    after = len(text.splitlines())
    secret, token = _line(job, after, "- secret:"), _line(job, after, "- serviceAccountToken")
    assert f"{KINDS[kind]}:{secret}:" in err and "projects Secret `other-team`" in err, err
    assert f"{KINDS[kind]}:{token}:" in err and "(audience `vault`)" in err, err


LAUNCHER_TOKEN = (
    "replicaPodTemplates:\n  Launcher:\n    spec:\n      volumes:\n        - name: vault-token\n"
    "          projected:\n            sources:\n"
    "              - serviceAccountToken: {audience: vault, path: token}\n"
)


def test_a_projected_token_on_the_mpi_launcher_is_refused(scratch: Path) -> None:
    job = scratch / "jobs/horovod-training.yaml"
    job.write_text(job.read_text() + LAUNCHER_TOKEN)
    err = _refused(scratch)
    assert "projects a token of account `default` (audience `vault`)" in err, err


MANIFEST = """\
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: nfsordma-datasets, namespace: ml-train}
spec: {accessModes: [ReadWriteMany], resources: {requests: {storage: 1Ti}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: copy, namespace: ml-train}
spec:
  accessModes: [ReadWriteOnce]
  resources: {requests: {storage: 1Ti}}
  dataSource: {kind: PersistentVolumeClaim, name: their-ckpt}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: reader, namespace: ml-train}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          automountServiceAccountToken: false
          resourceClaims: [{name: gpu, resourceClaimName: team-b-gpus}]
          containers:
            - name: pytorch
              image: registry.example/train:1.0
              volumeMounts: [{name: shared-ro, mountPath: /data, readOnly: true}]
              volumeDevices: [{name: raw, devicePath: /dev/xvda}]
          imagePullSecrets: [{name: team-b-registry}]
          volumes:
            - {name: shared-ro, persistentVolumeClaim: {claimName: reference-data}}
            - {name: raw, persistentVolumeClaim: {claimName: reference-data}}
            - name: clone
              ephemeral:
                volumeClaimTemplate:
                  spec:
                    accessModes: [ReadWriteOnce]
                    resources: {requests: {storage: 1Ti}}
                    dataSourceRef: {kind: PersistentVolumeClaim, name: their-ckpt}
            - name: creds
              projected:
                sources:
                  - secret: {name: other-team}
                  - serviceAccountToken: {audience: vault, path: token}
            - {name: ceph, cephfs: {monitors: [10.0.0.1], secretRef: {name: ceph-admin}}}
"""
FENCE = PodFence(shared_claims=(("nfsordma-datasets", False), ("reference-data", False)))


def test_pod_fence_holds_claims_secrets_and_tokens_in_manifests() -> None:
    """`validate --manifests --cluster`: each way of reaching a claim, a Secret or a token
    above is one `pod-fence` error on the line that asks for it."""
    findings = [
        f for f in run(manifests_from_text(MANIFEST), make_cluster(job_access=FENCE))
        if f.rule == "pod-fence"
    ]  # fmt: skip
    lines = MANIFEST.splitlines()
    found = sorted((lines[f.line - 1].strip(), f.message) for f in findings if f.line)
    expected = [
        ("- secret: {name: other-team}", "projects Secret `other-team`"),
        ("- serviceAccountToken: {audience: vault, path: token}", "(audience `vault`)"),
        ("imagePullSecrets: [{name: team-b-registry}]", "image pull Secret `team-b-registry`"),
        ("- {name: ceph, cephfs:", "logs in with a Secret"),
        ("- {name: raw, persistentVolumeClaim:", "`reference-data` is read-only for jobs"),
        ("dataSource: {kind: PersistentVolumeClaim, name: their-ckpt}", "a clone of claim"),
        ("dataSourceRef: {kind: PersistentVolumeClaim, name: their-ckpt}", "`their-ckpt`"),
        ("metadata: {name: nfsordma-datasets, namespace: ml-train}", "shared by the cluster"),
        ("resourceClaims: [{name: gpu, resourceClaimName: team-b-gpus}]", "team-b-gpus"),
    ]
    for line, says in expected:
        assert any(seen.startswith(line) and says in m for seen, m in found), (line, found)
    # The read-only mount of the shared claim is allowed: only the block device writes it.
    assert not [m for seen, m in found if seen.startswith("- {name: shared-ro")], found
