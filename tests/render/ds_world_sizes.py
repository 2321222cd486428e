"""Run DeepSpeed's own config parser at each world size (a subprocess of the test).

DeepSpeedConfig takes the data-parallel size from an `mpu` object when
torch.distributed is initialised; a one-process gloo group makes that real.
Prints one JSON line: {world_size: null | "error message"}.
"""

import json
import os
import sys

os.environ.update(
    DS_ACCELERATOR="cpu", MASTER_ADDR="127.0.0.1", RANK="0", WORLD_SIZE="1", LOCAL_RANK="0"
)

import deepspeed
from deepspeed.runtime.config import DeepSpeedConfig


class DataParallel:
    def __init__(self, size: int) -> None:
        self.size = size

    def get_data_parallel_world_size(self) -> int:
        return self.size


config = json.loads(sys.argv[1])
sizes = [int(s) for s in sys.argv[2:]]
deepspeed.init_distributed(dist_backend="gloo")
result = {}
for size in sizes:
    try:
        parsed = DeepSpeedConfig(dict(config), mpu=DataParallel(size))
        assert parsed.train_batch_size == (
            parsed.train_micro_batch_size_per_gpu * parsed.gradient_accumulation_steps * size
        )
        result[size] = None
    except AssertionError as err:
        result[size] = str(err)
print("RESULT " + json.dumps(result))
