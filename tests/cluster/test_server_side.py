"""`trainops validate --server-side` against the API emulator (kmock on 127.0.0.1, not a
real cluster: no admission webhook, quota or CEL rule runs here). The refusals a real API
server would send (422 from a webhook, 403 from a ResourceQuota, 404 for a namespace) are
the recorded v1 Status bodies in responses/errors.yaml; what is tested is that pykube-ng
sends a real dry-run server-side apply for every built object and that each refusal
becomes a `server` finding at the right file and line.
"""

from __future__ import annotations

import json
from pathlib import Path

import kmock
import pytest

from tests.cluster.conftest import built, response, run_cli
from tests.tools import REPO
from trainops.cluster.emulator import reply
from trainops.cluster.emulator_thread import RunningEmulator


def _validate(
    capsys: pytest.CaptureFixture[str], repo: Path, kubeconfig: Path, *extra: str
) -> tuple[int, str, str]:
    return run_cli(
        capsys, "--root", str(repo), "validate", "--server-side", "--cluster", "cloud-h100",
        "--kubeconfig", str(kubeconfig), *extra,
    )  # fmt: skip


def test_every_built_object_is_dry_run_applied_and_nothing_is_stored(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = api.call(lambda e: len(list(e.objects)))
    code, out, err = _validate(capsys, repo, kubeconfig, "--format", "json")
    assert code == 0, err
    assert json.loads(out) == {
        "findings": [],
        "summary": {"resources": len(built(repo)), "errors": 0, "warnings": 0},
    }
    patches = [r for r in api.requests if r.method == "PATCH"]
    names = sorted(m.name or "" for m in built(repo))
    assert sorted(r.url.path.rsplit("/", 1)[-1] for r in patches) == names
    for r in patches:
        assert dict(r.params) == {"fieldManager": "trainops", "dryRun": "All", "force": "true"}
        assert r.headers["Content-Type"] == "application/apply-patch+yaml"
    assert api.call(lambda e: len(list(e.objects))) == before  # a dry run stores nothing


def test_refusals_are_server_findings_at_the_repository_file(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(e: RunningEmulator) -> None:
        pytorchjobs = kmock.resource("kubeflow.org", "v1", "pytorchjobs")
        pvcs = kmock.resource("", "v1", "persistentvolumeclaims")
        e["patch", pytorchjobs, kmock.name("resnet50-ddp")] << (
            lambda: reply(422, response("errors", "invalid-pytorchjob"))
        )
        e["patch", pvcs, kmock.name("resnet50-ddp-dataset")] << (
            lambda: reply(403, response("errors", "quota-exceeded-pvc"))
        )
        e.resources.pop(next(r for r in e.resources if r.plural == "servicemonitors"))
        del e.objects[kmock.resource("", "v1", "namespaces"), None, "ai-training"]

    api.call(refuse)
    code, out, err = _validate(capsys, repo, kubeconfig, "--format", "json")
    assert code == 1, err
    findings = json.loads(out)["findings"]
    assert {f["rule"] for f in findings} == {"server"}
    by_object = {(f["kind"], f["name"]): f for f in findings}
    job = by_object[("PyTorchJob", "resnet50-ddp")]
    assert job["file"] == "base/resnet50-ddp/pytorchjob.yaml"
    assert job["message"] == (
        "Invalid: spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image:"
        ' Invalid value: "ghcr.io/example/trainer:latest": images must be pinned by digest'
        " or version tag"
    )
    # The line of the field the server names, in the rendered file (committed in the
    # shipped repository; rendered in memory here).
    rendered = (REPO / job["file"]).read_text(encoding="utf-8").splitlines()
    assert rendered[job["line"] - 1].strip().startswith("image: ")
    assert "Worker:" in "\n".join(rendered[: job["line"]]).rsplit("Master:", 1)[-1]
    quota = by_object[("PersistentVolumeClaim", "resnet50-ddp-dataset")]
    assert quota["file"] == "base/resnet50-ddp/pvc-resnet50-ddp-dataset.yaml"
    assert "exceeded quota: training-storage" in quota["message"]
    monitor = by_object[("ServiceMonitor", "resnet50-ddp")]
    assert monitor["message"].startswith("the cluster does not serve ServiceMonitor")
    missing_ns = [f for f in findings if f["namespace"] == "ai-training"]
    assert {f["kind"] for f in missing_ns} >= {"PyTorchJob", "ConfigMap", "Service"}
    assert all(
        "namespace 'ai-training' does not exist" in f["message"]
        for f in missing_ns
        if f["kind"] != "ServiceMonitor"
    )


def test_rbac_denial_of_the_patch_stops_with_verb_and_resource(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.call(
        lambda e: (
            e["patch", kmock.resource("kubeflow.org", "v1", "pytorchjobs")]
            << (lambda: reply(403, response("errors", "forbidden-patch-pytorchjobs")))
        )
    )
    code, out, err = _validate(capsys, repo, kubeconfig)
    assert (code, out) == (2, "")
    assert err.startswith(
        "error: 403 Forbidden: not allowed to patch pytorchjobs.kubeflow.org in namespace"
    )
    assert 'User "alice" cannot patch resource "pytorchjobs"' in err
    assert len(err.splitlines()) == 1


def test_server_side_needs_a_cluster(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "--root", str(repo), "validate", "--server-side")
    assert (code, out) == (2, "")
    assert err == "error: --server-side: needs --cluster NAME: the cluster to ask\n"


def test_connection_options_need_server_side(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, "--root", str(repo), "validate", "--context", "trainops-test")
    assert (code, out) == (2, "")
    assert err == "error: --context/--kubeconfig: only apply with --server-side\n"


def test_sarif_describes_the_server_rule(
    api: RunningEmulator, repo: Path, kubeconfig: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.call(
        lambda e: (
            e["patch", kmock.resource("kubeflow.org", "v1", "pytorchjobs")]
            << (lambda: reply(422, response("errors", "invalid-pytorchjob")))
        )
    )
    code, out, err = _validate(capsys, repo, kubeconfig, "--format", "sarif")
    assert code == 1, err
    run = json.loads(out)["runs"][0]
    (rule,) = run["tool"]["driver"]["rules"]
    assert rule["id"] == "server"
    assert rule["shortDescription"]["text"].startswith("The cluster's API server refused")
    assert {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    } == {
        "base/llm-finetune/pytorchjob.yaml",
        "base/resnet50-ddp/pytorchjob.yaml",
    }
