"""The cluster commands the docs show exist with the options they use."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.tools import REPO
from trainops.cli import COMMANDS, build_parser

DOCS = (REPO / "docs" / "cluster.md", REPO / "README.md")
COMMANDS_SHOWN = "status|explain|live-diff|doctor|validate --server-side"


def _shown() -> list[list[str]]:
    found = []
    for path in DOCS:
        for line in path.read_text(encoding="utf-8").splitlines():
            match = re.match(rf"^(?:\$ )?trainops ((?:{COMMANDS_SHOWN})\b.*)$", line)
            if match:
                found.append(shlex.split(match.group(1).split("#")[0]))
    return found


@pytest.mark.parametrize("argv", _shown(), ids=" ".join)
def test_documented_cluster_commands_parse(argv: list[str]) -> None:
    assert argv[0] in COMMANDS
    build_parser().parse_args(argv)  # exits (fails the test) on an unknown option


def test_docs_show_every_cluster_command() -> None:
    shown = {argv[0] for argv in _shown()}
    assert shown == {"status", "explain", "live-diff", "doctor", "validate"}
