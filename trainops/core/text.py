"""Printing user-controlled text safely on one line.

A key or value in a spec can hold a newline; printed as is on a CI runner's log, the
next line could start with `::` and be read as a GitHub Actions workflow command
(`::add-mask::`, `::error ...::`, `::stop-commands::`). Every message that may quote
user text goes through `one_line` before the CLI prints it.
"""

from __future__ import annotations

import re

# C0 controls but tab, DEL, C1 controls, and the Unicode line and paragraph separators.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """`text` with every control character written as a Python escape (`\\n`, `\\x1b`)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
