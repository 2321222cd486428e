"""What every command does the way kubectl and ruff users expect: `-o json|yaml` beside
`--format`, `--color auto|always|never` and `NO_COLOR`, help summaries that are whole
sentences, a did-you-mean for a misspelt command, shell completion (argcomplete)."""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TextIO

from trainops.core.yaml_dump import dump

COLOR_CHOICES = ("auto", "always", "never")
YAML = "yaml"
# The end of a docstring's first sentence: a full stop before a space and a capital or the end.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


def add_color(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--color",
        choices=COLOR_CHOICES,
        default=default,
        help="colour in the output: auto (a terminal, unless NO_COLOR is set), always or never",
    )


def color(args: argparse.Namespace, stream: TextIO | None = None) -> bool:
    """Whether to colour what goes to `stream` (stdout): `--color`, else NO_COLOR
    (https://no-color.org: set and not empty), a dumb terminal, or not a terminal."""
    choice = getattr(args, "color", "auto")
    if choice != "auto":
        return bool(choice == "always")
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return (stream or sys.stdout).isatty()


def summary(doc: str | None, name: str) -> str:
    """A module docstring's first sentence, whole (however many lines it spans)."""
    paragraph = " ".join((doc or name).strip().split("\n\n")[0].split())
    return _SENTENCE_END.split(paragraph, maxsplit=1)[0]


def add_format(
    parser: argparse.ArgumentParser,
    choices: Sequence[str],
    default: str | None,
    help_text: str,
) -> None:
    """`-o/--format`: kubectl's `-o`, with `yaml` beside `json` (the same document)."""
    with_yaml = [*choices, YAML] if "json" in choices and YAML not in choices else list(choices)
    parser.add_argument("-o", "--format", choices=with_yaml, default=default, help=help_text)


def unknown_command(parser: argparse.ArgumentParser, word: str, commands: Sequence[str]) -> None:
    """Exit 2 with the top-level usage and the nearest command (`valdate` -> `validate`)."""
    near = difflib.get_close_matches(word, commands, n=1, cutoff=0.6)
    hint = f"; did you mean `{near[0]}`?" if near else ""
    parser.error(f"unknown command `{word}`{hint} (`trainops --help` lists them)")


@contextlib.contextmanager
def as_yaml(args: argparse.Namespace) -> Iterator[None]:
    """For `-o yaml`: the command writes its JSON document, printed here as YAML."""
    if getattr(args, "format", None) != YAML:
        yield
        return
    args.format = "json"
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):
            yield
    finally:
        text = captured.getvalue()
        try:
            documents = [json.loads(text)] if text.strip() else []
        except ValueError:
            sys.stdout.write(text)
        else:
            sys.stdout.write("".join(dump(d) for d in documents))


def autocomplete(build: Callable[[], argparse.ArgumentParser]) -> None:
    """Answer the shell's completion request (argcomplete sets `_ARGCOMPLETE`) and exit;
    nothing otherwise, and argcomplete is not even imported."""
    if "_ARGCOMPLETE" in os.environ:
        argcomplete: Any = importlib.import_module("argcomplete")
        argcomplete.autocomplete(build())
