"""What run-local decides before it starts anything, on the shipped jobs built by real kustomize.

These run no trainer: they check the env each replica would get, the files and paths it would
see, the program it would run, and the clear errors (exit 2) for what cannot run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from tests.runlocal.conftest import variant_repo
from tests.tools import REPO, require_upstream
from trainops.cli import main
from trainops.core.errors import InputError
from trainops.runlocal.options import Options
from trainops.runlocal.plan import Plan, make_plan
from trainops.runlocal.source import load_built_job, select_job

pytestmark = pytest.mark.usefixtures("needs_kustomize")


def plan(job: str, tmp_path: Path, **options: object) -> Plan:
    built = load_built_job(REPO, job, "cloud-h100")
    return make_plan(built, Options(**options), tmp_path)  # type: ignore[arg-type]


def test_ddp_example_master_and_worker(tmp_path: Path) -> None:
    p = plan("resnet50-ddp", tmp_path)
    assert [launch.name for launch in p.launches] == ["master-0", "worker-0"]
    master, worker = (dict(launch.pod_env) for launch in p.launches)
    for env, rank in ((master, "0"), (worker, "1")):
        assert env["RANK"] == env["PET_NODE_RANK"] == rank
        assert env["WORLD_SIZE"] == "2" and env["PET_NNODES"] == "2"
        assert env["MASTER_ADDR"] == env["PET_MASTER_ADDR"] == "127.0.0.1"
        assert env["PET_NPROC_PER_NODE"] == "1"
        assert env["NCCL_DEBUG"] == "INFO"  # the container's own env is kept
    assert master["MASTER_PORT"] == worker["MASTER_PORT"] != "23456"
    # One network here: each replica's metrics port is its own free port.
    ports = {master["TRAINOPS_METRICS_PORT"], worker["TRAINOPS_METRICS_PORT"], "9090"}
    assert len(ports) == 3
    launch = p.launches[0]
    assert launch.argv[:5] == [sys.executable, "-m", "torch.distributed.run", "-m", "trainer"]
    assert f"--data-path={tmp_path}/claims/resnet50-ddp-dataset/imagenet/train" in launch.argv
    assert launch.env["CUDA_VISIBLE_DEVICES"] == "" and launch.env["DS_ACCELERATOR"] == "cpu"
    assert launch.restart_policy == "OnFailure"
    assert p.success == "master" and p.backoff_limit == 3 and p.clean_pod_policy == "All"
    assert "replicas: 4 pods -> 2 local process groups (--replicas)" in p.changes
    assert any("data-sync" in w and "not run" in w for w in p.warnings)
    assert any("is our trainer" in n for n in p.notes)


def test_trainjob_runs_as_the_pytorchjob_it_amounts_to(tmp_path: Path) -> None:
    """onprem-h200 runs Trainer v2: the built TrainJob and its TrainingRuntime, merged the way
    the Trainer merges them, run as Master + Workers with the same torchrun rendezvous env."""
    built = load_built_job(REPO, "resnet50-ddp", "onprem-h200")
    assert any("TrainJob (Trainer v2) with TrainingRuntime resnet50-ddp" in n for n in built.notes)
    p = make_plan(built, Options(), tmp_path)
    v1 = plan("resnet50-ddp", tmp_path / "v1")
    assert [launch.name for launch in p.launches] == ["master-0", "worker-0"]
    master, worker = (dict(launch.pod_env) for launch in p.launches)
    for env, rank in ((master, "0"), (worker, "1")):
        assert env["PET_NODE_RANK"] == rank and env["PET_NNODES"] == "2"
        assert env["PET_NPROC_PER_NODE"] == "1"
        # From the cluster's runtime (RDMA over RoCE), not from the TrainJob.
        assert (env["NCCL_IB_DISABLE"], env["NCCL_IB_HCA"]) == ("0", "mlx5")
        assert env["NCCL_DEBUG"] == "INFO"  # the TrainJob's own env
    # The same program as on the v1 cluster, with the same volumes.
    assert p.launches[0].argv[:5] == v1.launches[0].argv[:5]
    assert p.launches[0].argv[5:] == [
        a.replace(str(tmp_path / "v1"), str(tmp_path)) for a in v1.launches[0].argv[5:]
    ]
    # backoffLimit comes from the job's own runtime (a TrainJob has none).
    assert (p.backoff_limit, p.launches[0].restart_policy) == (3, "OnFailure")
    assert any("data-sync" in w and "not run" in w for w in p.warnings)


def test_deepspeed_example_elastic_env_and_config_volume(tmp_path: Path) -> None:
    p = plan("llm-finetune", tmp_path)
    built = load_built_job(REPO, "llm-finetune", "cloud-h100")
    (config_map,) = built.config_maps.values()
    first, second = (dict(launch.pod_env) for launch in p.launches)
    assert "MASTER_ADDR" not in first and "RANK" not in first  # Worker-only: none
    assert first["PET_NNODES"] == "2:2" and first["PET_MAX_RESTARTS"] == "10"
    assert first["PET_RDZV_BACKEND"] == "c10d"
    assert first["PET_RDZV_ENDPOINT"] == second["PET_RDZV_ENDPOINT"]
    assert first["PET_RDZV_ENDPOINT"].startswith("127.0.0.1:")
    assert (first["PET_RDZV_CONF"], second["PET_RDZV_CONF"]) == ("is_host=1", "is_host=0")
    assert first["OMP_NUM_THREADS"] != "8"
    assert "HF_TOKEN" not in first
    assert any(w.startswith("HF_TOKEN: secret 'hf-token'") for w in p.warnings)
    argv = p.launches[1].argv
    config = Path(argv[argv.index("--deepspeed-config") + 1])
    assert config == tmp_path / "volumes" / "deepspeed-config" / "ds_config.json"
    assert json.loads(config.read_text()) == json.loads(config_map["data"]["ds_config.json"])
    assert first["HF_HOME"] == f"{tmp_path}/claims/nfsordma-checkpoints/hf-cache"
    assert p.success == "any-worker" and p.shape == "elastic 2-2"


def test_procs_per_replica_scale_world_size(tmp_path: Path) -> None:
    p = plan("resnet50-ddp", tmp_path, replicas=3, procs_per_replica=2)
    envs = [dict(launch.pod_env) for launch in p.launches]
    assert [e["RANK"] for e in envs] == ["0", "1", "2"]
    assert {e["WORLD_SIZE"] for e in envs} == {"6"} and p.world_size == 6
    assert {e["PET_NPROC_PER_NODE"] for e in envs} == {"2"}


def test_arg_edits_and_volume(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    p = plan(
        "llm-finetune",
        tmp_path / "work",
        steps=3,
        set_args=("--model=gpt-tiny", "--seq-len=64"),
        drop_args=("--hf-model",),
        volumes={"dataset": data},
    )
    argv = p.launches[0].argv
    assert "--model=gpt-tiny" in argv and "--model=hf-causal-lm" not in argv
    assert "--seq-len=64" in argv and "--seq-len=4096" not in argv
    assert not any(a.startswith("--hf-model") for a in argv)
    assert argv[-1] == "--steps=3"
    assert f"--data-path={data.resolve()}/train" in argv


def test_dry_run_prints_each_replica(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--root", str(REPO), "run-local", "resnet50-ddp", "--cluster", "cloud-h100",
                 "--dry-run", "--workdir", str(tmp_path)])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "run-local: resnet50-ddp on cloud-h100 (PyTorchJob, Master+Worker)" in out
    assert "[worker-0]   RANK=1" in out and "[master-0]   RANK=0" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope"], "unknown job 'nope'"),
        (["resnet50-ddp"], "targets 3 clusters (onprem-a100, cloud-h100, onprem-h200): pick"),
        (["resnet50-ddp", "--cluster", "moon"], "does not target cluster 'moon'"),
        (["resnet50-ddp", "--cluster", "cloud-h100", "--drop-arg=--nope"], "no --nope"),
        (["resnet50-ddp", "--cluster", "cloud-h100", "--set-arg=lr"], "expected --flag=value"),
        (["resnet50-ddp", "--cluster", "cloud-h100", "--kill-replica", "worker-9"], "worker-9"),
        (["resnet50-ddp", "--cluster", "cloud-h100", "--volume", "dataset"], "NAME=DIR"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--root", str(REPO), "run-local", *argv, "--dry-run"])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err
    assert err.count("\n") == 1


def test_stale_render_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = variant_repo(tmp_path, "resnet50-ddp")
    spec = root / "jobs" / "resnet50-ddp.yaml"
    spec.write_text(spec.read_text().replace("--lr=0.01", "--lr=0.02"))
    code = main(["--root", str(root), "run-local", "resnet50-ddp", "--cluster", "cloud-h100"])
    assert code == 2
    assert "out of date: run `trainops render` first" in capsys.readouterr().err


def test_other_training_kinds_are_refused() -> None:
    """A TFJob (the operator's own example) is not run, and says why; XGBoostJob neither."""
    examples = require_upstream() / "examples/training-operator"
    path = examples / "examples__tensorflow__simple.yaml"
    name = yaml.safe_load(path.read_text())["metadata"]["name"]
    with pytest.raises(InputError, match=r"run-local does not run TFJobs yet: .*TF_CONFIG"):
        select_job(path.read_text(), name, "c", f"jobs/{name}.yaml")
    path = examples / "examples__xgboost__xgboostjob.yaml"
    name = yaml.safe_load(path.read_text())["metadata"]["name"]
    with pytest.raises(
        InputError, match="run-local runs PyTorchJob, MPIJob and TrainJob, got XGBoostJob"
    ):
        select_job(path.read_text(), name, "c", f"jobs/{name}.yaml")


def test_undefined_reference_is_warned(tmp_path: Path) -> None:
    def edit(spec: dict[str, object]) -> None:
        spec["args"] = [a.replace("--lr=0.01", "--lr=$(LEARNING_RATE)") for a in spec["args"]]  # type: ignore[attr-defined]

    root = variant_repo(tmp_path / "repo", "resnet50-ddp", edit)
    p = make_plan(load_built_job(root, "resnet50-ddp", "cloud-h100"), Options(), tmp_path)
    assert "--lr=$(LEARNING_RATE)" in p.launches[0].argv  # verbatim, as Kubernetes passes it
    assert any("$(LEARNING_RATE)" in w and "defined by nothing" in w for w in p.warnings)
    assert yaml.safe_load((root / "jobs" / "resnet50-ddp.yaml").read_text())["name"]


def test_shipped_elastic_jobs_do_not_share_the_rendezvous_store() -> None:
    """Without it a replaced pod never rejoins (found with --kill-replica; docs/run-local.md):
    the rendered base of every shipped elastic job sets it (the renderer's default)."""
    elastic = 0
    for path in sorted((REPO / "jobs").glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        if "elastic" not in spec:
            continue
        elastic += 1
        job = yaml.safe_load((REPO / "base" / spec["name"] / "pytorchjob.yaml").read_text())
        for replica in job["spec"]["pytorchReplicaSpecs"].values():
            env = {
                e["name"]: e.get("value")
                for e in replica["template"]["spec"]["containers"][0]["env"]
            }
            assert env.get("TORCH_DISABLE_SHARE_RDZV_TCP_STORE") == "1", path.name
    assert elastic


def test_home_and_caches_are_each_replicas_own_directory(tmp_path: Path) -> None:
    """The read-only root's HOME and XDG_CACHE_HOME (issue 18) point at the home emptyDir:
    locally one directory per replica, like /tmp, and the process gets those values."""
    p = plan("resnet50-ddp", tmp_path)
    homes = []
    for launch in p.launches:
        env = dict(launch.pod_env)
        home = tmp_path / "pods" / launch.name / "volumes" / "home"
        assert env["HOME"] == launch.env["HOME"] == str(home)
        assert env["XDG_CACHE_HOME"] == f"{home}/.cache"
        assert home.is_dir()
        homes.append(home)
    assert len(set(homes)) == len(p.launches)
    assert any("volume tmp at /tmp: an empty directory per replica" in c for c in p.changes)


def test_each_replica_writes_its_temporary_files_in_its_own_tmp(tmp_path: Path) -> None:
    """The pod's /tmp is an emptyDir, gone with the pod: locally TMPDIR points at its
    directory, so tempfile and torchrun's `torchelastic_*` log folders are not left in this
    machine's /tmp after every run."""
    p = plan("resnet50-ddp", tmp_path)
    for launch in p.launches:
        tmp = tmp_path / "pods" / launch.name / "volumes" / "tmp"
        assert launch.env["TMPDIR"] == str(tmp) and tmp.is_dir()


def test_a_claim_mounted_read_only_is_read_only_here(tmp_path: Path) -> None:
    """Issue 37: the dataset claim is mounted readOnly on the cluster; on main run-local made it
    a writable directory, so a cache pointed into it ran here and failed there."""
    plan("resnet50-ddp", tmp_path)
    dataset = tmp_path / "claims" / "resnet50-ddp-dataset"
    assert dataset.is_dir() and dataset.stat().st_mode & 0o222 == 0
    checkpoints = [d for d in (tmp_path / "claims").iterdir() if "checkpoint" in d.name]
    assert checkpoints and all(d.stat().st_mode & 0o200 for d in checkpoints)
