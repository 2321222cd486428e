"""What the user asks of `trainops run-local` (its flags), read by the plan and the runner."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Options:
    """What the user asked of the local run (the CLI flags)."""

    replicas: int | None = None
    """Local pods; default min(job's pods, 2)."""
    procs_per_replica: int = 1
    """Processes per pod (the job's nprocPerNode, one per GPU, becomes this)."""
    steps: int | None = None
    """Appends `--steps=N` to our trainer's args (a few steps, not the job's epochs)."""
    set_args: tuple[str, ...] = ()
    """`--flag=value` replacing the same flag in the rendered args, or appended."""
    drop_args: tuple[str, ...] = ()
    """`--flag`s removed from the rendered args (with their value)."""
    tiny: bool = False
    """Our trainer with a tiny model and synthetic data of the job's kind (runlocal/tiny.py)."""
    op_cache: Path | None = None
    """DeepSpeed's op cache (TORCH_EXTENSIONS_DIR), kept between runs (runlocal/op_cache.py)."""
    all_warnings: bool = False
    """Show every warning the replicas print, the installed packages' too."""
    volumes: Mapping[str, Path] = field(default_factory=dict)
    """Pod volume name -> local directory to use instead of an empty one (data sets)."""
    backoff_limit: int | None = None
    """Overrides runPolicy.backoffLimit (and the local limit when the job sets none)."""
    max_restarts: int | None = None
    """Overrides elasticPolicy.maxRestarts (torchrun's worker-group restarts)."""
    allow_any_program: bool = False
    """Run a program that is not our trainer (runlocal/program.py), with a clean environment."""
