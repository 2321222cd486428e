"""When the training loop meets the device and the other ranks: the sync points.

Reading a loss (`.item()`) or a stop vote from a collective waits for every queued kernel, so
the host cannot queue the next step while the device runs this one: a bubble every step (on
GPT-medium most of the 7 % the trainer lost to a bare loop, issue 36). The loop therefore
reduces the loss, the stop vote and the step time together, and only at a sync point:

- the first step, every `--log-interval` steps, every checkpoint step and the last step
  (what is logged and saved needs the numbers);
- and whenever `stride` steps have passed since the last sync, where `stride` is agreed at
  each sync as the steps that fill `SYNC_SECONDS` at the measured mean step time: a job with
  long steps (a 13B ZeRO-3 step takes seconds) still votes every step, so SIGTERM is acted on
  within max(one step, `SYNC_SECONDS`) plus the save, as before; a job with 20 ms steps syncs
  at its log interval.

Every rank computes the same points from the same reduced numbers, so all ranks stop at the
same step and save the same checkpoint.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Longest stretch without a stop vote (when a step is shorter than this): a signalled job acts
# on SIGTERM at most this much later than with a vote every step, and pays for one host sync
# per this much training (a bubble of a millisecond or so on a GPU: well under 1 %).
SYNC_SECONDS = 2.0


@dataclass
class SyncCadence:
    """Which steps are sync points; `synced` after each one with the agreed mean step time."""

    log_interval: int
    checkpoint_interval: int
    total_steps: int
    stride: int = 1
    """Steps between syncs when no log, checkpoint or last step comes first."""
    last: int = 0
    """The step of the last sync (0 before the first)."""

    def due(self, step: int) -> bool:
        """Whether the loop reduces loss, vote and step time after `step`."""
        return (
            step == 1
            or step % self.log_interval == 0
            or step % self.checkpoint_interval == 0
            or step >= self.total_steps
            or step - self.last >= self.stride
        )

    def synced(self, step: int, mean_step_seconds: float) -> None:
        """Record the sync at `step` and agree the next stride (same inputs on every rank)."""
        self.last = step
        if mean_step_seconds <= 0 or not math.isfinite(mean_step_seconds):
            self.stride = 1
            return
        self.stride = max(1, math.floor(SYNC_SECONDS / mean_step_seconds))
