"""The README stays a ten-minute read, and every relative link in it and in docs/ resolves.

Links are checked the way GitHub renders them: a path relative to the Markdown file, and an
optional `#anchor` that must be the slug of a heading in the target (GitHub's slug: lower case,
punctuation other than `-` and `_` dropped, spaces to `-`).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.tools import REPO

README_MAX_LINES = 250  # issue 27: a newcomer reads it in ten minutes; guides live in docs/
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def _markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _prose(path: Path) -> list[tuple[int, str]]:
    """Lines outside fenced code blocks, numbered from 1."""
    out, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line.lstrip()):
            fenced = not fenced
        elif not fenced:
            out.append((number, line))
    return out


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_slug(line.lstrip("#")) for _, line in _prose(path) if re.match(r"^#{1,6} ", line)}


def test_readme_is_short() -> None:
    lines = (REPO / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"


@pytest.mark.parametrize("path", _markdown_files(), ids=lambda p: p.name)
def test_relative_links_resolve(path: Path) -> None:
    broken = []
    for number, line in _prose(path):
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):  # https:, mailto:: not ours to check offline
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.exists():
                broken.append(f"{path.name}:{number}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
                broken.append(f"{path.name}:{number}: {target}: no heading with that anchor")
    assert not broken, "\n".join(broken)
