"""Print the shell code that completes trainops' commands and options (bash, zsh or fish).

Load it in the shell's start-up file: `eval "$(trainops completion bash)"` in ~/.bashrc,
`eval "$(trainops completion zsh)"` in ~/.zshrc, or `trainops completion fish | source` in
~/.config/fish/config.fish. The completions come from the command line's own parser
(argcomplete), so they are never out of date.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Any

SHELLS = ("bash", "zsh", "fish")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def run(args: argparse.Namespace) -> int:
    argcomplete: Any = importlib.import_module("argcomplete")
    sys.stdout.write(argcomplete.shellcode(["trainops"], shell=args.shell))
    return 0
