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
from trainops.cli import (
    build,
    capacity,
    diff,
    explain,
    import_,
    live_diff,
    preflight,
    render,
    report,
    rules,
    run_local,
    status,
    top,
    validate,
)
from trainops.cluster.errors import ClusterError
from trainops.core.errors import InputError
from trainops.core.text import one_line

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

# name -> module; the order is the order of `trainops --help`.
COMMANDS: dict[str, ModuleType] = {
    "render": render,
    "validate": validate,
    "build": build,
    "diff": diff,
    "capacity": capacity,
    "report": report,
    "rules": rules,
    "status": status,
    "explain": explain,
    "top": top,
    "preflight": preflight,
    "live-diff": live_diff,
    "run-local": run_local,
    "import": import_,
}


def _add_root(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--root",
        type=Path,
        default=default,
        help="repository root holding jobs/ and clusters/ (default: current directory)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trainops",
        description="Turn training-job specs into validated Kubernetes manifests.",
    )
    parser.add_argument("--version", action="version", version=f"trainops {__version__}")
    _add_root(parser, Path("."))
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        doc = (module.__doc__ or name).strip().splitlines()[0]
        sub_parser = sub.add_parser(name, help=doc, description=module.__doc__)
        # Also after the subcommand (`trainops render --root DIR`, as with git or kubectl);
        # SUPPRESS keeps a value given before the subcommand when none is given after it.
        _add_root(sub_parser, argparse.SUPPRESS)
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
            print(f"error: {one_line(str(problem))}", file=sys.stderr)
        return EXIT_USAGE
    except ClusterError as err:
        # The cluster could not be reached or read: one line naming what and what to do.
        print(f"error: {one_line(str(err))}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as err:
        # A path the user gave that cannot be read or written (--output into a file,
        # a read-only checkout): their environment, not a bug, so no traceback.
        where = f"{err.filename}: " if err.filename else ""
        print(one_line(f"error: {where}{err.strerror or err}"), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    return code
