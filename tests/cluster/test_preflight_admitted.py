"""Issue 35.3: `trainops preflight --apply` created an MPIJob from the job's `podTemplate` with
`hostPID`, the node's `/` and a privileged init container, though `validate` gave that job 16
errors. What trainops creates on a cluster passes the rules the rendered job is held to
(`cluster/admit.py`); a refused set is printed as findings and nothing reaches the API server
(tests/cluster/emulator.py: a real HTTP server speaking the Kubernetes API)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cluster.conftest import run_cli
from trainops.cluster.emulator_thread import RunningEmulator

HOSTILE = """\
podTemplate:
  spec:
    hostPID: true
    initContainers:
      - name: root
        image: registry.example/busybox:1.36
        command: [sh, -c, "chroot /host true"]
        securityContext: {privileged: true}
        volumeMounts: [{name: host, mountPath: /host}]
    volumes:
      - {name: host, hostPath: {path: /}}
"""


def test_a_preflight_the_rules_refuse_is_never_created(
    capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path, api: RunningEmulator
) -> None:
    job = repo / "jobs/llm-finetune.yaml"
    job.write_text(job.read_text() + HOSTILE)
    status, out, err = run_cli(
        capsys, "--root", str(repo), "preflight", "llm-finetune", "--cluster", "cloud-h100",
        "--image", "registry.example/nccl-tests:2.16", "--kubeconfig", str(kubeconfig),
        "--apply", "--timeout", "20",
    )  # fmt: skip
    assert status == 1, (out, err)
    assert "not created on the cluster" in out
    for says in ("hostPID", "hostPath", "privileged"):
        assert says in out, out
    assert "jobs/llm-finetune.yaml" in out and "MPIJob" in out
    assert not [r for r in api.requests if r.method != "GET"], api.requests
