"""Correctness at the door (issue 9): what a spec says reaches the built manifests, and
specs that contradict each other are refused instead of one silently winning.

Each test here failed before its fix: per-target `env` was dropped on the way to the model,
two files for one job both loaded (the later one overwrote the other's output), and
`--root` after the subcommand was a usage error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.tools import cli, replace_once, require_tool, trainops, tree
from trainops import build


def _built_job(root: Path, cluster: str, name: str) -> dict[str, Any]:
    """The PyTorchJob as the real `kustomize build overlays/<cluster>` prints it."""
    try:
        build.kustomize_command()
    except build.KustomizeError:
        require_tool("kustomize")
    docs = yaml.safe_load_all(build.kustomize(root / "overlays" / cluster))
    return next(d for d in docs if d["kind"] == "PyTorchJob" and d["metadata"]["name"] == name)


def _env_of(job: dict[str, Any]) -> list[list[tuple[str, Any]]]:
    """Every pod template's training-container env, as (name, value-or-valueFrom) pairs."""
    out = []
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        container = replica["template"]["spec"]["containers"][0]
        out.append([(e["name"], e.get("value", e.get("valueFrom"))) for e in container["env"]])
    return out


def test_target_env_replaces_job_env_of_the_same_name_and_adds_new(scratch: Path) -> None:
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(
        job,
        "  - cluster: cloud-h100",
        "  - cluster: cloud-h100\n    env: {NCCL_DEBUG: WARN, TORCH_CPP_LOG_LEVEL: INFO}",
    )
    result = trainops(scratch, "render")
    assert result.returncode == 0, result.stderr
    for env in _env_of(_built_job(scratch, "cloud-h100", "resnet50-ddp")):
        names = [name for name, _ in env]
        assert len(names) == len(set(names)), f"one entry per name, got {names}"
        assert dict(env)["NCCL_DEBUG"] == "WARN", "the target's value wins on its cluster"
        assert dict(env)["TORCH_CPP_LOG_LEVEL"] == "INFO", "a new variable is added"
    # The other cluster keeps the job's own value and gets nothing of cloud-h100's.
    for env in _env_of(_built_job(scratch, "onprem-a100", "resnet50-ddp")):
        assert dict(env)["NCCL_DEBUG"] == "INFO"
        assert "TORCH_CPP_LOG_LEVEL" not in dict(env)


def test_target_env_may_not_set_reserved_or_secret_names(scratch: Path) -> None:
    job = scratch / "jobs" / "llm-finetune.yaml"
    replace_once(
        job,
        "    replicas: 2",
        "    replicas: 2\n    env: {NCCL_SOCKET_IFNAME: eth1, HF_TOKEN: plain-text}",
    )
    result = trainops(scratch, "render")
    assert result.returncode == 2, result.stderr
    assert "targets[1].env.NCCL_SOCKET_IFNAME" in result.stderr
    assert "targets[1].env.HF_TOKEN" in result.stderr
    assert "secretEnv" in result.stderr
    assert "Traceback" not in result.stderr


def test_target_errors_name_their_key_path(scratch: Path) -> None:
    job = scratch / "jobs" / "llm-finetune.yaml"
    replace_once(job, "    replicas: 2", "    replicas: 9")
    result = trainops(scratch, "render")
    assert result.returncode == 2
    assert "`targets[1].replicas` must be within elastic [2, 8], got 9" in result.stderr


def test_two_files_for_one_job_are_refused_naming_both(scratch: Path) -> None:
    trainops(scratch, "render")
    before = tree(scratch)
    original = scratch / "jobs" / "resnet50-ddp.yaml"
    twin = scratch / "jobs" / "resnet50-ddp.yml"
    twin.write_text(original.read_text().replace("replicas: 4", "replicas: 2"))
    before["jobs/resnet50-ddp.yml"] = twin.read_bytes()
    result = trainops(scratch, "render")
    assert result.returncode == 2, result.stdout
    line = next(
        n for n, text in enumerate(original.read_text().splitlines(), 1) if text.startswith("name:")
    )
    assert f"jobs/resnet50-ddp.yml:{line}:1:" in result.stderr
    assert f"jobs/resnet50-ddp.yaml:{line}" in result.stderr
    assert tree(scratch) == before, "a refused render writes nothing"


def test_two_files_for_one_cluster_are_refused(scratch: Path) -> None:
    original = scratch / "clusters" / "cloud-h100.yaml"
    (scratch / "clusters" / "cloud-h100.yml").write_text(original.read_text())
    result = trainops(scratch, "render")
    assert result.returncode == 2
    assert "clusters/cloud-h100.yml" in result.stderr
    assert "clusters/cloud-h100.yaml" in result.stderr


def test_root_is_accepted_after_the_subcommand(scratch: Path, tmp_path: Path) -> None:
    for argv in (["--root", str(scratch), "render"], ["render", "--root", str(scratch)]):
        result = cli(*argv, cwd=tmp_path)
        assert result.returncode == 0, (argv, result.stderr)
        assert (scratch / "overlays" / "cloud-h100" / "kustomization.yaml").is_file()


def test_every_pod_runs_non_root_with_an_fs_group_that_owns_the_volumes(scratch: Path) -> None:
    """The trainer image runs as 10001:10001 (trainer/Dockerfile); a freshly provisioned claim
    is root-owned, so without fsGroup its first checkpoint write fails (permission denied)."""
    dockerfile = (Path(__file__).parents[2] / "trainer" / "Dockerfile").read_text()
    assert "USER 10001:10001" in dockerfile, "the defaults below follow the image's user"
    assert trainops(scratch, "render").returncode == 0
    for cluster in ("cloud-h100", "onprem-a100"):
        job = _built_job(scratch, cluster, "resnet50-ddp")
        for replica in job["spec"]["pytorchReplicaSpecs"].values():
            pod = replica["template"]["spec"]
            assert pod["securityContext"]["fsGroup"] == 10001
            assert pod["securityContext"]["runAsUser"] == 10001
            assert pod["securityContext"]["runAsNonRoot"] is True
            for container in pod["containers"] + pod.get("initContainers", []):
                assert container["securityContext"]["allowPrivilegeEscalation"] is False
                assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]


def test_an_image_with_another_user_sets_it_in_the_spec(scratch: Path) -> None:
    job = scratch / "jobs" / "resnet50-ddp.yaml"
    replace_once(
        job, "sharedMemory: 8Gi", "sharedMemory: 8Gi\nsecurityContext: {runAsUser: 0, fsGroup: 100}"
    )
    assert trainops(scratch, "render").returncode == 0
    pod = _built_job(scratch, "cloud-h100", "resnet50-ddp")["spec"]["pytorchReplicaSpecs"]
    context = pod["Master"]["template"]["spec"]["securityContext"]
    assert (context["runAsUser"], context["runAsGroup"], context["fsGroup"]) == (0, 10001, 100)
    assert context["runAsNonRoot"] is False, "a root image cannot start under runAsNonRoot"
