"""The `trainops` command line: one small module per subcommand.

Each subcommand module has `add_arguments(parser)` and `run(args) -> int`.
Only this layer prints to the terminal and maps outcomes to exit codes:
0 clean (warnings allowed), 1 error findings or stale output, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from trainops import __version__
from trainops.cli import build, diff, render, rules, run_local, validate
from trainops.errors import InputError

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

# name -> module; the order is the order of `trainops --help`.
COMMANDS: dict[str, ModuleType] = {
    "render": render,
    "validate": validate,
    "build": build,
    "diff": diff,
    "rules": rules,
    "run-local": run_local,
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainops",
        description="Turn training-job specs into validated Kubernetes manifests.",
    )
    parser.add_argument("--version", action="version", version=f"trainops {__version__}")
    parser.add_argument(
        "--root",
        type=Path,
        default=Path("."),
        help="repository root holding jobs/ and clusters/ (default: current directory)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        doc = (module.__doc__ or name).strip().splitlines()[0]
        sub_parser = sub.add_parser(name, help=doc, description=module.__doc__)
        module.add_arguments(sub_parser)
        sub_parser.set_defaults(run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
    except InputError as err:
        for problem in err.problems:
            print(f"error: {problem}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as err:
        # A path the user gave that cannot be read or written (--output into a file,
        # a read-only checkout): their environment, not a bug, so no traceback.
        where = f"{err.filename}: " if err.filename else ""
        print(f"error: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    return code
