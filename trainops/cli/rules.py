"""List every policy rule: id, slug, severity, one-line summary.

`--format markdown` prints docs/rules.md (generated from the rules' metadata).
"""

from __future__ import annotations

import argparse
import sys

from trainops.cli import conventions
from trainops.rules.docs import FORMATS, render


def add_arguments(parser: argparse.ArgumentParser) -> None:
    conventions.add_format(
        parser,
        FORMATS,
        "text",
        "text (default), json, yaml, or markdown (the content of docs/rules.md)",
    )


def run(args: argparse.Namespace) -> int:
    sys.stdout.write(render(args.format))
    return 0
