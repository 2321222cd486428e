"""`core.git`: the commands `--changed` runs together (issue 39), on a real repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.tools import require_tool
from trainops.core.git import GitError, git, git_together


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    require_tool("git")
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    (tmp_path / "tracked.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@example.com",
         "commit", "-q", "-m", "one"],
        check=True,
    )  # fmt: skip
    return tmp_path


def test_each_command_answers_in_the_order_asked(repo: Path) -> None:
    (repo / "tracked.txt").write_text("two\n")
    (repo / "new.txt").write_text("new\n")
    diff, untracked = git_together(
        repo, ("diff", "--name-only", "main"), ("ls-files", "--others", "--exclude-standard")
    )
    assert diff.decode().split() == ["tracked.txt"]
    assert untracked.decode().split() == ["new.txt"]


def test_a_failing_command_raises_with_gits_own_words(repo: Path) -> None:
    with pytest.raises(GitError, match="no-such-ref"):
        git_together(repo, ("ls-files",), ("diff", "--name-only", "no-such-ref"))
    with pytest.raises(GitError, match="no-such-ref"):
        git(repo, "show", "no-such-ref:tracked.txt")
