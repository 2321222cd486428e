"""Read-only root filesystem (issue 18 item 2): every container built for a cluster has
`readOnlyRootFilesystem: true` and a writable mount for every path the rendered env points
its programs at; the libraries' caches really land there; a job can opt out.

The pods are read from the real `kustomize build` of every overlay (the overlay is where
the Trainer v2 runtimes and the TrainJob's runtime patch meet), not from the renderer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from tests.tools import REPO, replace_once, require_tool, trainops
from trainops import build
from trainops.facts.scratch import HOME_DIR, SCRATCH_ENV


def _built(root: Path) -> list[dict[str, Any]]:
    try:
        build.kustomize_command()
    except build.KustomizeError:
        require_tool("kustomize")
    docs: list[dict[str, Any]] = []
    for overlay in sorted((root / "overlays").iterdir()):
        docs += [d for d in yaml.safe_load_all(build.kustomize(overlay)) if d]
    return docs


def _pod_specs(node: Any) -> Iterator[dict[str, Any]]:
    """Every pod spec (a mapping with `containers`) anywhere in an object."""
    if isinstance(node, dict):
        if isinstance(node.get("containers"), list):
            yield node
        for value in node.values():
            yield from _pod_specs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _pod_specs(value)


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec["containers"]) + list(spec.get("initContainers", []))


def test_every_built_container_has_a_read_only_root_and_writable_tmp_and_home() -> None:
    kinds: set[str] = set()
    for doc in _built(REPO):
        if doc["kind"] == "TrainJob":
            continue  # its runtime patch is a partial pod: the next test
        for spec in _pod_specs(doc):
            for c in _containers(spec):
                where = f"{doc['kind']} {doc['metadata']['name']} container {c['name']}"
                assert c["securityContext"]["readOnlyRootFilesystem"] is True, where
                kinds.add(doc["kind"])
                if doc["kind"] in {"ClusterTrainingRuntime", "TrainingRuntime"}:
                    continue  # the TrainJob's runtime patch adds the mounts (next test)
                mounted = {m["mountPath"] for m in c.get("volumeMounts", [])}
                volumes = {v["name"]: v for v in spec.get("volumes", [])}
                assert {"/tmp", HOME_DIR} <= mounted, where
                for m in c["volumeMounts"]:
                    assert not m.get("readOnly") or m["mountPath"] not in {"/tmp", HOME_DIR}
                    assert m["name"] in volumes, f"{where}: mount of no volume {m['name']}"
                env = {e["name"]: e.get("value") for e in c.get("env", [])}
                assert env.get("HOME", HOME_DIR) == HOME_DIR, where
    # The shipped repository renders every kind trainops knows.
    assert {"PyTorchJob", "TFJob", "MPIJob", "ClusterTrainingRuntime"} <= kinds, kinds


def test_the_trainjob_patch_gives_the_runtime_container_tmp_and_home() -> None:
    jobs = [d for d in _built(REPO) if d["kind"] == "TrainJob"]
    assert jobs, "the shipped repository has a Trainer v2 job"
    for job in jobs:
        env = {e["name"]: e["value"] for e in job["spec"]["trainer"]["env"]}
        assert env["HOME"] == HOME_DIR
        pods = [p for patch in job["spec"]["runtimePatches"] for p in _pod_specs(patch)]
        assert pods
        for spec in pods:
            mounts = {m["mountPath"] for m in spec["containers"][0]["volumeMounts"]}
            assert {"/tmp", HOME_DIR} <= mounts
            assert {"tmp", "home"} <= {v["name"] for v in spec["volumes"]}


def test_the_libraries_caches_resolve_under_the_home_emptydir(tmp_path: Path) -> None:
    """With only the rendered env, torch hub, torch_extensions (DeepSpeed's JIT ops) and the
    Hugging Face cache default under $HOME: nothing is written to the read-only image."""
    home = tmp_path / HOME_DIR.lstrip("/")
    env = {k: v.replace(HOME_DIR, str(home)) for k, v in SCRATCH_ENV}
    code = (
        "import json, torch.hub, torch.utils.cpp_extension as x, huggingface_hub.constants as h;"
        "print(json.dumps([torch.hub.get_dir(), x.get_default_build_root(), h.HF_HOME]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=True,
    )
    for path in json.loads(out.stdout.splitlines()[-1]):
        assert Path(path).is_relative_to(home), path


def test_a_job_opts_out_and_its_own_env_wins(scratch: Path) -> None:
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(
        job,
        "sharedMemory: 8Gi",
        "sharedMemory: 8Gi\nsecurityContext: {readOnlyRootFilesystem: false}",
    )
    replace_once(job, "env:\n", "env:\n  HF_HOME: /data/hf\n  HOME: /home/me\n")
    result = trainops(scratch, "render")
    assert result.returncode == 0, result.stderr
    docs = _built(scratch)
    ours = [
        d
        for d in docs
        if d["metadata"]["name"] == "resnet50-ddp" and d["kind"] not in {"Service", "TrainJob"}
    ]
    seen = 0
    for doc in ours:
        for spec in _pod_specs(doc):
            for c in _containers(spec):
                assert c["securityContext"]["readOnlyRootFilesystem"] is False
                seen += 1
                if c["name"] == "data-sync":
                    continue
                names = [e["name"] for e in c.get("env", [])]
                assert len(names) == len(set(names)), names
                env = {e["name"]: e.get("value") for e in c.get("env", [])}
                if "HOME" in env:
                    assert env["HOME"] == "/home/me" and env["HF_HOME"] == "/data/hf"
                    assert env["XDG_CACHE_HOME"] == f"{HOME_DIR}/.cache"
    assert seen, "the job's pods were built"
    # The shared runtimes stay read-only: the opted-out job has its own TrainingRuntime.
    for doc in docs:
        if doc["kind"] == "ClusterTrainingRuntime":
            for spec in _pod_specs(doc):
                assert spec["containers"][0]["securityContext"]["readOnlyRootFilesystem"]


def test_extra_volumes_may_not_take_the_scratch_names_or_paths(scratch: Path) -> None:
    """An extra volume named `home` or mounted at /tmp would be a second volume of that
    name, or a second mount at that path, in every pod: the API server refuses the pod."""
    path = scratch / "jobs" / "resnet50-ddp.yaml"
    text = path.read_text().replace(
        "targets:\n",
        "extraVolumes:\n  - {name: home, emptyDir: {}}\n  - {name: cfg, emptyDir: {}}\n"
        "extraVolumeMounts:\n  - {name: cfg, mountPath: /tmp}\ntargets:\n",
        1,
    )
    path.write_text(text)
    result = trainops(scratch, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert "volume `home` is already in the pod" in result.stderr
    assert (
        "`/tmp` is already mounted by `tmp emptyDir (read-only root filesystem)`" in result.stderr
    )
