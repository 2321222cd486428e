"""User-facing input errors: file, line, column and what to do.

Library code raises `InputError`; only the CLI turns it into exit code 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Addition:
    """What a cluster profile must gain for a problem to go: `values` added to the list at
    `path` (created where missing). What `trainops upgrade` collects and writes."""

    cluster: str
    path: tuple[str, ...]
    values: tuple[Any, ...]
    replace: bool = False
    """Set the value at `path` to `values[0]` instead (a scalar such as `podSecurity.level`)."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one input file."""

    file: str
    """Path of the file, as the user named it (relative to the repo root when we found it)."""
    line: int | None
    """1-based line, or None when the problem is about the file as a whole."""
    column: int | None
    """1-based column, or None."""
    message: str
    """What is wrong and what to do, e.g. "`replicas` must be >= 1, got 0"."""
    additions: tuple[Addition, ...] = field(default=(), compare=False)
    """The profile additions that fix it, where it is one an older repository lacks (not
    compared: a problem is its place and message)."""

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        return f"{where}: {self.message}"

    @classmethod
    def whole_file(cls, file: str, message: str) -> Problem:
        """A problem with a file as a whole (unreadable, too large, no document in it), or with
        a directory: there is no line to point at."""
        return cls(file, None, None, message)

    @classmethod
    def about(cls, subject: str, message: str) -> Problem:
        """A problem with something the user named that is not a file: a command-line option
        (`--cluster`), an argument (`JOB`), or a value (`<kubernetes version>`); the subject is
        printed where a file name would be."""
        return cls(subject, None, None, message)


class InputError(Exception):
    """Bad input (unreadable YAML, a spec violating its schema, an unknown cluster).

    Carries every problem found, so the user fixes them all in one go.
    """

    def __init__(self, problems: list[Problem] | Problem) -> None:
        self.problems = [problems] if isinstance(problems, Problem) else list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
