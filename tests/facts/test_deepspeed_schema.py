"""The DeepSpeed config a job gets is one DeepSpeed 0.19.8 accepts, judged by DeepSpeed itself.

- `trainops/schemas/deepspeed.schema.json` is what the installed DeepSpeed's own classes say
  (`deepspeed_schema_gen`: `DeepSpeedZeroConfig`, `DeepSpeedBF16Config`, `DeepSpeedFP16Config`
  `model_fields`, and the top-level keys `DeepSpeedConfig` reads); regenerate with
  `TRAINOPS_UPDATE_GOLDEN=1`.
- The loader's verdict on a config agrees with `deepspeed.runtime.config.DeepSpeedConfig`'s,
  case by case, except where DeepSpeed silently ignores a key (we refuse it).
- Every DeepSpeed config rendered for the shipped and test repositories is accepted by
  `DeepSpeedConfig` (issue 23, item 7: seed 001's `reduce_bucket_size: 5e8` was refused).
"""

from __future__ import annotations

import functools
import json
import os
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from tests.facts import deepspeed_schema_gen
from tests.tools import REPO, copy_inputs, require_module, trainops
from trainops.core.paths import SCHEMA_DIR
from trainops.core.yamlio import Document
from trainops.facts.deepspeed import CONFIG_SCHEMA, DEEPSPEED_VERSION, config_json
from trainops.jobspec.deepspeed_config import check_config
from trainops.jobspec.load import load_repository
from trainops.jobspec.problems import Collector
from trainops.render import render_repository

pytestmark = pytest.mark.slow

UPDATE = os.environ.get("TRAINOPS_UPDATE_GOLDEN") == "1"
BATCH = {"train_micro_batch_size_per_gpu": 1}


@functools.cache
def _distributed() -> None:
    """A one-process gloo group, so that `DeepSpeedConfig` asks the `mpu` for the world size
    (without one it assumes 1; deepspeed/runtime/config.py DeepSpeedConfig.__init__)."""
    require_module("deepspeed")
    import deepspeed.comm  # noqa: PLC0415 (seconds to import)

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # The env:// rendezvous reads these once, at init. Put the environment back afterwards:
    # later tests start torchrun and mpirun children, which would inherit WORLD_SIZE=1 and
    # RANK=0 (an mpirun rank then trains alone: tests/runlocal/test_mpi.py).
    saved = dict(os.environ)
    os.environ.update(
        RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port)
    )
    try:
        deepspeed.comm.init_distributed(
            dist_backend="gloo", auto_mpi_discovery=False, verbose=False
        )
    finally:
        os.environ.clear()
        os.environ.update(saved)


class _DataParallel:
    """The `mpu` DeepSpeed asks for the data-parallel world size (Megatron's interface)."""

    def __init__(self, size: int) -> None:
        self.size = size

    def get_data_parallel_world_size(self) -> int:
        return self.size


def _deepspeed_accepts(config: dict[str, Any], world_size: int = 1) -> bool:
    """Whether DeepSpeed's own `DeepSpeedConfig` takes `config` at `world_size`.

    Without a process group `DeepSpeedConfig` takes the world size to be 1 (`dist.get_rank()`
    raises, deepspeed/runtime/config.py), which is also what the `mpu` says at 1: the group,
    whose first start in a worker compiles DeepSpeed's shm communicator (minutes on two busy
    cores), is started only for a larger world."""
    if world_size != 1:
        _distributed()
    else:
        require_module("deepspeed")
    from deepspeed.runtime.config import DeepSpeedConfig  # noqa: PLC0415 (seconds to import)

    try:
        DeepSpeedConfig(json.loads(json.dumps(config)), mpu=_DataParallel(world_size))
    except Exception:  # pydantic, assertions, DeepSpeedConfigError: any refusal
        return False
    return True


def _ours(config: dict[str, Any]) -> tuple[dict[str, Any], list[str], list[str]]:
    doc = Document("jobs/x.yaml", 0, {"deepspeed": {"config": config}})
    out = Collector(doc)
    coerced, notes = check_config(config, out)
    return coerced, [p.message for p in out.problems], [n.message for n in notes]


def test_the_schema_is_what_the_installed_deepspeed_says() -> None:
    deepspeed = require_module("deepspeed")
    assert deepspeed.__version__ == DEEPSPEED_VERSION == deepspeed_schema_gen.DEEPSPEED_VERSION
    path = SCHEMA_DIR / CONFIG_SCHEMA
    text = deepspeed_schema_gen.text()
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, "run with TRAINOPS_UPDATE_GOLDEN=1"


# (config, DeepSpeed accepts it as written) -> we refuse exactly what DeepSpeed refuses.
AGREEMENT = [
    ({"zero_optimization": {"stage": 3, "overlap_comm": True}}, True),
    ({"zero_optimization": {"stage": 4}}, False),
    ({"zero_optimization": {"stage": "3"}}, True),
    ({"zero_optimization": {"reduce_bucket_size": 0}}, False),
    ({"zero_optimization": {"reduce_bucket_size": 5e8}}, True),
    ({"zero_optimization": {"stage3_prefetch_bucket_size": 5e7}}, True),
    ({"zero_optimization": {"prefetch_bucket_size": 100}}, True),
    ({"zero_optimization": {"overlap_commm": True}}, False),
    ({"zero_optimization": {"offload_optimizer": {"device": "gpu"}}}, False),
    ({"zero_optimization": {"offload_optimizer": {"device": "cpu", "ratio": 2}}}, False),
    ({"zero_optimization": {"offload_param": {"device": "nvme", "nvme_path": "/x"}}}, True),
    ({"fp16": {"enabled": True, "loss_scale": "dynamic"}}, False),
    ({"fp16": {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}}, True),
    ({"bf16": {"enabled": True, "immediate_grad_update": True}}, True),
    ({"bf16": {"enable": True}}, False),
    ({"zero_optimization": {"stage": 2, "reduce_bucket_size": "auto"}}, True),
    ({"elasticity": {"enabled": True}}, False),
]


@pytest.mark.parametrize(("config", "accepted"), AGREEMENT, ids=lambda v: json.dumps(v)[:60])
def test_the_loader_refuses_what_deepspeed_refuses(config: dict[str, Any], accepted: bool) -> None:
    config = {**BATCH, **config}
    assert _deepspeed_accepts(config) is accepted, "the case's premise about DeepSpeed"
    _, problems, _ = _ours(config)
    assert (not problems) is accepted, problems


def test_a_misspelt_top_level_key_deepspeed_ignores_is_refused_with_a_suggestion() -> None:
    """DeepSpeed reads the keys it knows and ignores the rest: ZeRO silently off."""
    config = {**BATCH, "zero_optimisation": {"stage": 3}}
    assert _deepspeed_accepts(config)
    _, problems, _ = _ours(config)
    assert len(problems) == 1
    assert "unknown key `zero_optimisation`" in problems[0]
    assert "did you mean `zero_optimization`?" in problems[0]


def test_a_yaml_1_1_number_string_is_made_the_number_deepspeed_wants_and_said() -> None:
    config = {**BATCH, "zero_optimization": {"reduce_bucket_size": "5e8", "stage": 3}}
    assert not _deepspeed_accepts(config), "DeepSpeed refuses the string"
    coerced, problems, notes = _ours(config)
    assert problems == []
    assert coerced["zero_optimization"]["reduce_bucket_size"] == 500_000_000
    assert _deepspeed_accepts(coerced)
    (note,) = notes
    assert "`deepspeed.config.zero_optimization.reduce_bucket_size`" in note and "5e8" in note
    # A string where DeepSpeed wants a string stays one; so does "auto".
    coerced, _, notes = _ours({"communication_data_type": "1e3", "gradient_clipping": "auto"})
    assert coerced == {"communication_data_type": "1e3", "gradient_clipping": "auto"}
    assert notes == []


def _rendered_configs(root: Path) -> dict[str, dict[str, Any]]:
    files = render_repository(load_repository(root))
    found = {}
    for path, text in files.items():
        for match in re.finditer(r"ds_config\.json=(\{.*\})$", text, re.MULTILINE):
            found[path] = json.loads(match.group(1))
    return found


@pytest.mark.parametrize(
    "source",
    [REPO, REPO / "tests" / "golden" / "rich"],
    ids=["shipped", "rich"],
)
def test_every_rendered_deepspeed_config_is_accepted_by_deepspeed_at_every_world_size(
    source: Path, tmp_path: Path
) -> None:
    """The ConfigMap's config (what `render` writes) at every world size of every target."""
    repo = load_repository(copy_inputs(source, tmp_path))
    rendered = set(map(config_json, _rendered_configs(tmp_path).values()))
    checked = 0
    for job in repo.jobs:
        config = job.deepspeed_config()
        if config is None:
            continue
        assert config_json(config) in rendered, job.name
        for target in job.targets:
            for size in job.world_sizes(target):
                assert _deepspeed_accepts(config, size), (job.name, target.cluster, size)
                checked += 1
    assert checked


def test_seed_001s_bucket_sizes_render_as_numbers_with_a_note_at_their_line(
    tmp_path: Path,
) -> None:
    """Seed 001 writes `reduce_bucket_size: 5e8`: a string to PyYAML, refused by DeepSpeed's
    `DeepSpeedZeroConfig` ("Input should be a valid integer") before this fix."""
    root = copy_inputs(REPO, tmp_path)
    job = root / "jobs" / "llm-finetune.yaml"
    text = job.read_text()
    # The shipped job lets trainops size the buckets from the model: the seed's key added back.
    text = text.replace(
        "      reduce_scatter: true\n",
        "      reduce_scatter: true\n      reduce_bucket_size: 5e8\n",
    )
    job.write_text(text)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "5e8" in t)
    result = trainops(root, "render")
    assert result.returncode == 0, result.stderr
    assert f"note: jobs/llm-finetune.yaml:{line}:" in result.stderr
    validate = trainops(root, "validate", "--format", "json")
    findings = json.loads(validate.stdout)["findings"]
    notes = [f for f in findings if f["rule"] == "spec"]
    assert [(f["severity"], f["file"], f["line"]) for f in notes] == [
        ("warning", "jobs/llm-finetune.yaml", line)
    ]
    for config in _rendered_configs(root).values():
        assert config["zero_optimization"]["reduce_bucket_size"] == 500_000_000
        assert _deepspeed_accepts(config)


def test_a_misspelt_zero_block_is_a_load_error_at_its_line(tmp_path: Path) -> None:
    root = copy_inputs(REPO, tmp_path)
    job = root / "jobs" / "llm-finetune.yaml"
    text = job.read_text().replace("    zero_optimization:", "    zero_optimisation:")
    job.write_text(text)
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "zero_optimisation" in t)
    result = trainops(root, "render")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"jobs/llm-finetune.yaml:{line}:5: unknown key `zero_optimisation`" in result.stderr
    assert "did you mean `zero_optimization`?" in result.stderr
    assert not (root / "base").exists()
