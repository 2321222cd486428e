"""The `trainops` command line: one small module per subcommand.

Each subcommand module has `add_arguments(parser)` and `run(args) -> int`.
Only this layer prints to the terminal and maps outcomes to exit codes:
0 clean (warnings allowed), 1 error findings or stale output, 2 bad input or usage.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path

from trainops import __version__
from trainops.cli import conventions
from trainops.cluster.errors import ClusterError
from trainops.core.errors import InputError
from trainops.core.text import one_line

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2

# name -> module; the order is the order of `trainops --help`. A command imports only its own
# module: CI runs `python -m trainops` per check and the tests hundreds of times, and the
# cluster client (pykube, requests), the importer and the report views are a third of the
# import time `render` and `validate` do not need.
COMMANDS: dict[str, str] = {
    "render": "trainops.cli.render",
    "validate": "trainops.cli.validate",
    "build": "trainops.cli.build",
    "diff": "trainops.cli.diff",
    "capacity": "trainops.cli.capacity",
    "report": "trainops.cli.report",
    "rules": "trainops.cli.rules",
    "status": "trainops.cli.status",
    "explain": "trainops.cli.explain",
    "top": "trainops.cli.top",
    "preflight": "trainops.cli.preflight",
    "live-diff": "trainops.cli.live_diff",
    "doctor": "trainops.cli.doctor",
    "run-local": "trainops.cli.run_local",
    "sandbox": "trainops.cli.sandbox",
    "import": "trainops.cli.import_",
    "upgrade": "trainops.cli.upgrade",
    "completion": "trainops.cli.completion",
}


def _add_root(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--root",
        type=Path,
        default=default,
        help="repository root holding jobs/ and clusters/ (default: current directory)",
    )


def build_parser(
    only: str | None = None, subparsers: dict[str, argparse.ArgumentParser] | None = None
) -> argparse.ArgumentParser:
    """The parser of every command, or of command `only` alone (the same parser for it: what
    `main` uses once it knows the command); each command's parser also goes in `subparsers`."""
    parser = argparse.ArgumentParser(
        prog="trainops",
        description="Turn training-job specs into validated Kubernetes manifests.",
    )
    parser.add_argument("--version", action="version", version=f"trainops {__version__}")
    _add_root(parser, Path("."))
    conventions.add_color(parser, "auto")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            continue
        module = importlib.import_module(module_name)
        doc = conventions.summary(module.__doc__, name)
        sub_parser = sub.add_parser(name, help=doc, description=module.__doc__)
        # Also after the subcommand (`trainops render --root DIR`, as with git or kubectl);
        # SUPPRESS keeps a value given before the subcommand when none is given after it.
        _add_root(sub_parser, argparse.SUPPRESS)
        conventions.add_color(sub_parser, argparse.SUPPRESS)
        module.add_arguments(sub_parser)
        sub_parser.set_defaults(run=module.run)
        if subparsers is not None:
            subparsers[name] = sub_parser
    return parser


def _words_after_root(argv: Sequence[str]) -> list[str]:
    words = list(argv)
    while words[:1] == ["--root"] or (words and words[0].startswith("--root=")):
        words = words[2:] if words[0] == "--root" else words[1:]
    return words


def _command(argv: Sequence[str]) -> str | None:
    """The command `argv` names when it comes first, after `--root` only; else None (help,
    `--version`, a typo: the whole parser answers, listing every command)."""
    words = _words_after_root(argv)
    return words[0] if words and words[0] in COMMANDS else None


def _parse(words: Sequence[str]) -> argparse.Namespace:
    """The arguments; usage errors exit 2 with the usage of the command they are about (a
    misspelt command: the nearest one)."""
    command = _command(words)
    subparsers: dict[str, argparse.ArgumentParser] = {}
    parser = build_parser(command, subparsers)
    first = _words_after_root(words)[:1]
    if command is None and first and not first[0].startswith("-"):
        conventions.unknown_command(parser, first[0], list(COMMANDS))
    args, extra = parser.parse_known_args(words)
    own = subparsers.get(args.command)
    if extra:
        (own or parser).error(f"unrecognized arguments: {' '.join(extra)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    conventions.autocomplete(build_parser)
    words = sys.argv[1:] if argv is None else argv
    args = _parse(words)
    try:
        with conventions.as_yaml(args):
            code: int = args.run(args)
    except InputError as err:
        for problem in err.problems:
            print(f"error: {one_line(str(problem))}", file=sys.stderr)
        if any(p.additions for p in err.problems):
            # A fixed profile may reveal the next addition: list them all in one run.
            print(
                "hint: `trainops upgrade` lists every addition the cluster profiles need at"
                " once (`--write` adds them)",
                file=sys.stderr,
            )
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
