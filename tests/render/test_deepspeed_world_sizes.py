"""The rendered DeepSpeed config is accepted by DeepSpeed itself at every allowed world size.

For the elastic example every world size in [min, max] x GPUs per pod is tried;
DeepSpeed's real config parser (not a re-implementation) does the asserting.
The seed-001 config, which pins all three batch sizes, is shown to fail at the
first elastic restart — the reason we derive train_batch_size instead.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.tools import REPO, require_module
from trainops.facts import deepspeed as ds_config
from trainops.jobspec.load import load_repository
from trainops.render import objects

# Seconds to minutes: `make test` runs it, `make test-fast` does not.
pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("ds_world_sizes.py")


def _deepspeed_verdicts(config: dict[str, Any], sizes: list[int]) -> dict[int, str | None]:
    require_module("deepspeed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), json.dumps(config), *map(str, sizes)],
        capture_output=True,
        text=True,
        env={**os.environ, "MASTER_PORT": str(port)},
        timeout=300,
        check=False,
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line, proc.stdout[-2000:] + proc.stderr[-2000:]
    return {int(k): v for k, v in json.loads(line[len("RESULT ") :]).items()}


def test_elastic_example_valid_at_every_world_size() -> None:
    repo = load_repository(REPO)
    job = next(j for j in repo.jobs if j.deepspeed and j.elastic)
    configmap = objects.deepspeed_configmap(job)
    assert configmap is not None
    config = json.loads(configmap["data"][ds_config.CONFIG_FILE])
    sizes = sorted({s for t in job.targets for s in job.world_sizes(t)})
    assert sizes == list(range(16, 65, 8))  # 2..8 pods x 8 GPUs
    verdicts = _deepspeed_verdicts(config, sizes)
    assert verdicts == dict.fromkeys(sizes)
    # Our own pre-check agrees with DeepSpeed.
    assert all(ds_config.batch_error(config, s) is None for s in sizes)


def test_seed_config_pinning_all_three_breaks_elastic_restarts() -> None:
    seed = {
        "train_batch_size": 64,
        "train_micro_batch_size_per_gpu": 2,
        "gradient_accumulation_steps": 8,
        "bf16": {"enabled": True},
    }
    sizes = [4, 16, 32]
    verdicts = _deepspeed_verdicts(seed, sizes)
    assert verdicts[4] is None
    assert verdicts[16] and verdicts[32], "DeepSpeed must reject 64 != 2 x 8 x 16"
    for size in sizes:
        assert (ds_config.batch_error(seed, size) is None) == (verdicts[size] is None)
