"""The rendered jobs launch the trainer with flags it accepts.

Every PyTorchJob running our trainer (`python -m trainer` in the spec; the TFJob and Horovod
examples run their own programs) is taken apart the way the pod would run it: the command
must be `torchrun -m trainer`, and the trainer's own parser
(`trainer.config.parse_args`) must accept the args with the container's env. For
DeepSpeed jobs the rendered ConfigMap is written where the args point, so the
trainer also checks its flags against the real config (precision, batch sizes).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tools import REPO
from trainer import config as trainer_config
from trainops.facts import deepspeed as ds_config
from trainops.jobspec.load import load_repository
from trainops.render import expected_objects


def _placements() -> list[tuple[str, str]]:
    repo = load_repository(REPO)
    return [
        (c, j.name)
        for c in repo.clusters
        for j in repo.jobs
        if any(t.cluster == c for t in j.targets)
        and j.framework == "pytorch"
        and j.command == ("python", "-m", "trainer")
    ]


@pytest.mark.parametrize(("cluster", "job"), _placements())
def test_trainer_parses_rendered_args(tmp_path: Path, cluster: str, job: str) -> None:
    repo = load_repository(REPO)
    objects = expected_objects(repo, repo.clusters[cluster])
    built = next(
        o
        for o in objects
        if o["kind"] in ("PyTorchJob", "TrainJob") and o["metadata"]["name"] == job
    )
    configmap = next(
        (o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith(job)),
        None,
    )
    if built["kind"] == "TrainJob":
        # The node container: the TrainJob's trainer, the metrics port its runtime declares.
        ref = built["spec"]["runtimeRef"]
        runtime = next(o for o in objects if (o["kind"], o["metadata"]["name"]) == (
            ref["kind"], ref["name"]))  # fmt: skip
        (node,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
        ports = node["template"]["spec"]["template"]["spec"]["containers"][0]["ports"]
        containers = [{**built["spec"]["trainer"], "ports": ports}]
    else:
        containers = [
            replica["template"]["spec"]["containers"][0]
            for replica in built["spec"]["pytorchReplicaSpecs"].values()
        ]
    for container in containers:
        assert container["command"] == ["torchrun", "-m", "trainer"]
        env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
        args = list(container["args"])
        if configmap is not None:
            local = tmp_path / ds_config.CONFIG_FILE
            local.write_text(configmap["data"][ds_config.CONFIG_FILE])
            args = [str(local) if a == ds_config.CONFIG_PATH else a for a in args]
        config = trainer_config.parse_args(args, env=env, load_files=True)
        port = next(p["containerPort"] for p in container["ports"] if p["name"] == "metrics")
        assert config.metrics_port == port
        if configmap is not None:
            assert config.engine == "deepspeed"
            rendered = json.loads(configmap["data"][ds_config.CONFIG_FILE])
            assert rendered["bf16"]["enabled"] == (config.precision == "bf16")


def test_contradicting_flag_is_caught(tmp_path: Path) -> None:
    """The same check fails when a job's flags contradict its DeepSpeed config."""
    local = tmp_path / "ds.json"
    local.write_text(
        json.dumps(
            {
                "train_micro_batch_size_per_gpu": 2,
                "gradient_accumulation_steps": 8,
                "bf16": {"enabled": True},
            }
        )
    )
    args = ["--engine=deepspeed", f"--deepspeed-config={local}", "--precision=fp16"]
    with pytest.raises(trainer_config.ConfigError):
        trainer_config.parse_args(args, env={}, load_files=True)
