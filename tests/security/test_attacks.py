"""Attack fixtures (issue 18): each edit is what a pull request could try; each must be
refused at the door with file:line, exit 2, nothing written, no traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from tests.tools import REPO, replace_once, trainops, tree


def _refused(root: Path, *args: str) -> str:
    before = tree(root)
    result = trainops(root, *(args or ("render",)))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert tree(root) == before
    return result.stderr


CLUSTER = "clusters/onprem-a100.yaml"
FLUX_CLUSTER = "clusters/cloud-h100.yaml"
JOB = "jobs/resnet50-ddp.yaml"
NAMESPACES = "namespaces: [ml-vision, ai-training]"


@pytest.mark.parametrize(
    ("file", "old", "new", "says"),
    [
        (CLUSTER, NAMESPACES, 'namespaces: [ml-vision, ai-training, "*"]', "must match"),
        (CLUSTER, NAMESPACES, "namespaces: [ml-vision, ai-training, kube-system]", "system"),
        (FLUX_CLUSTER, NAMESPACES, "namespaces: [ml-vision, ai-training, flux-system]", "system"),
        (CLUSTER, "server: https://onprem-a100.k8s.internal:6443", 'server: "*"', "no wildcard"),
        ("trainops.yaml", "revision: main", "revision: main\nargocdProject: default", "default"),
        (
            "trainops.yaml",
            "repoURL: https://github.com/example/trainops.git",
            'repoURL: "*"',
            "no wildcard",
        ),
    ],
    ids=[
        "ns-wildcard",
        "kube-system",
        "flux-system",
        "server-wildcard",
        "project-default",
        "repo-wildcard",
    ],
)
def test_fence_edits_are_refused(scratch: Path, file: str, old: str, new: str, says: str) -> None:
    replace_once(scratch / file, old, new)
    err = _refused(scratch)
    line = next(
        i
        for i, text in enumerate((scratch / file).read_text().splitlines(), 1)
        if new.splitlines()[-1] in text
    )
    assert f"{file}:{line}" in err
    assert says in err


@pytest.mark.parametrize(
    ("field", "key", "value"),
    [
        ("annotations", "trainops.dev/waive.privileged", "my own job, my rules"),
        ("labels", "kueue.x-k8s.io/queue-name", "vip"),
        ("labels", "kueue.x-k8s.io/priority-class", "high"),
        ("annotations", "argocd.argoproj.io/sync-options", "Prune=false"),
        ("annotations", "argocd.argoproj.io/hook", "PreSync"),
        ("annotations", "kustomize.toolkit.fluxcd.io/ssa", "Override"),
        ("labels", "pod-security.kubernetes.io/enforce", "privileged"),
        # The same keys on the job's pods (first-class fields of the escape hatch).
        ("podAnnotations", "trainops.dev/waive.privileged", "my own job, my rules"),
        ("podLabels", "kueue.x-k8s.io/queue-name", "vip"),
        ("podAnnotations", "k8s.v1.cni.cncf.io/networks", "host-net"),
    ],
)
def test_control_surface_keys_in_a_job_are_refused(
    scratch: Path, field: str, key: str, value: str
) -> None:
    job = scratch / JOB
    job.write_text(job.read_text() + f"{field}:\n  {key}: {value!r}\n")
    err = _refused(scratch)
    assert f"{JOB}:" in err and "control surface" in err and key in err


def test_control_surface_keys_in_a_pod_template_are_refused(scratch: Path) -> None:
    """The escape hatch's pod metadata is fenced like the job's (spec/metadata.py)."""
    job = scratch / JOB
    job.write_text(
        job.read_text()
        + "podTemplate:\n  metadata:\n    annotations:\n"
        + "      argocd.argoproj.io/sync-options: Prune=false\n"
    )
    err = _refused(scratch)
    assert f"{JOB}:" in err and "control surface" in err and "argocd.argoproj.io" in err


@pytest.mark.parametrize(
    ("field", "entry", "says"),
    [
        ("labels", '"bad key!": x', "is invalid"),
        ("labels", "team: " + "x" * 64, "label value"),
        ("annotations", '"Example.COM/x": y', "DNS subdomain"),
    ],
)
def test_metadata_syntax_as_kubernetes_checks_it(
    scratch: Path, field: str, entry: str, says: str
) -> None:
    job = scratch / JOB
    job.write_text(job.read_text() + f"{field}:\n  {entry}\n")
    assert says in _refused(scratch)


def test_a_newline_in_a_key_cannot_inject_a_workflow_command(scratch: Path) -> None:
    job = scratch / JOB
    job.write_text(job.read_text() + 'labels:\n  "a\\n::error title=pwned::x": y\n')
    err = _refused(scratch)
    assert not any(line.startswith("::") for line in err.splitlines()), err
    assert "\\n::error" in err


def test_a_symlink_out_of_the_repository_is_not_read(scratch: Path) -> None:
    os.symlink("/dev/zero", scratch / "jobs" / "zero.yaml")
    err = _refused(scratch)
    assert "jobs/zero.yaml" in err and "outside the repository" in err


def test_a_device_inside_the_repository_is_not_read(scratch: Path, tmp_path: Path) -> None:
    fifo = scratch / "jobs" / "pipe.yaml"
    os.mkfifo(fifo)
    assert "not a regular file" in _refused(scratch)


def test_an_oversized_file_is_refused_before_parsing(scratch: Path) -> None:
    job = scratch / JOB
    job.write_text(job.read_text() + "#" + "x" * (48 * 1024 * 1024) + "\n")
    err = _refused(scratch)
    assert f"{JOB}: file is" in err and "split it" in err


def test_deep_nesting_is_refused_before_the_c_loader(scratch: Path) -> None:
    job = scratch / JOB
    job.write_text(job.read_text() + "labels: " + "[" * 50000 + "]" * 50000 + "\n")
    err = _refused(scratch)
    assert "nests more than" in err


def test_profile_crds_outside_the_repository_are_refused(scratch: Path) -> None:
    replace_once(scratch / CLUSTER, NAMESPACES, NAMESPACES + "\ncrds: ../../../etc")
    trainops(scratch, "render")
    result = trainops(scratch, "validate", "--cluster", "onprem-a100")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "inside the repository" in result.stderr


def test_shipped_repository_is_clean_under_restricted_on_the_tcp_cluster() -> None:
    """The issue's bar: cloud-h100 declares `podSecurity.level: restricted` and validates clean."""
    profile = yaml.safe_load((REPO / FLUX_CLUSTER).read_text())
    assert profile["podSecurity"]["level"] == "restricted"
    assert profile["network"]["transport"] == "tcp"
    result = trainops(REPO, "validate", "--cluster", "cloud-h100", "--format", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["summary"]["errors"] == 0
    assert not [f for f in report["findings"] if f["rule"] == "pod-security"]


def test_a_job_running_as_root_breaks_restricted(scratch: Path) -> None:
    job = scratch / JOB
    job.write_text(job.read_text() + "securityContext: {runAsUser: 0, runAsGroup: 0, fsGroup: 0}\n")
    assert trainops(scratch, "render").returncode == 0
    result = trainops(scratch, "validate", "--cluster", "cloud-h100", "--format", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    found = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "pod-security"]
    assert found and all(f["name"] == "resnet50-ddp" and f["line"] for f in found)
    assert any("Non-root" in f["message"] for f in found)
