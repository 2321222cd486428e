"""Printing text from outside safely: on one line, inert on a terminal and in a CI log.

A key or value in a spec, an object name, an event, a pod's log line can hold anything:

- a newline: printed as is on a CI runner's log, the next line could start with `::` and be
  read as a GitHub Actions workflow command (`::add-mask::`, `::error ...::`,
  `::stop-commands::`), or forge a line of our own (a rewritten diagnosis);
- ESC and the other control characters: terminal sequences (colours, cursor moves that
  rewrite earlier lines, OSC 52 writing the clipboard);
- `::` at the start of a line (the runner trims leading blanks first) and `##[` anywhere
  (the runner's older command syntax, still parsed).

Every message that may quote outside text goes through `one_line` before the CLI prints it
(issue 35.6); a block of lines (a diff, a table) through `inert_lines`.
"""

from __future__ import annotations

import re

# C0 controls but tab, DEL, C1 controls, and the Unicode line and paragraph separators.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
# A workflow command: `::` first on the line (after blanks), or `##[` anywhere.
_COMMAND = re.compile(r"^(\s*)::|##\[")


def _inert(match: re.Match[str]) -> str:
    blanks = match.group(1)
    return "#\\x23[" if blanks is None else f"{blanks}\\x3a:"


def one_line(text: str) -> str:
    """`text` with every control character written as a Python escape (`\\n`, `\\x1b`) and no
    workflow command left in it (`::` first becomes `\\x3a:`, `##[` becomes `#\\x23[`)."""
    return _COMMAND.sub(_inert, _CONTROL.sub(lambda m: repr(m.group())[1:-1], text))


def inert_lines(text: str) -> str:
    """A block of lines (a diff, a table): each line as `one_line` makes it, the newlines
    that separate them kept."""
    return "\n".join(one_line(line) for line in text.split("\n"))
