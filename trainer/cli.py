"""`python -m trainer`: parse the config, train, map outcomes to exit codes (0 / 2)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from trainer.config import ConfigError, build_parser, parse_args

__all__ = ["build_parser", "main", "parse_args"]


def main(argv: Sequence[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    try:
        cfg = parse_args(argv)
    except ConfigError as exc:
        print(f"python -m trainer: error: {exc}", file=sys.stderr)
        return 2
    from trainer.train import run

    try:
        return run(cfg)
    except ConfigError as exc:
        print(f"python -m trainer: error: {exc}", file=sys.stderr)
        return 2
