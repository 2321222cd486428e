"""The warnings of a local run, cut to what the user can act on.

A five-step DeepSpeed run printed 54 FutureWarnings, every replica the same ones, all from
inside torch, DeepSpeed and transformers: nothing the job's author can change. A
FutureWarning or DeprecationWarning raised in an installed package (a path under
site-packages or dist-packages) is hidden, with the source line Python prints under it, and
counted; any other warning (the program's own, a UserWarning about the DataLoader's workers)
is shown once, not once per replica. `--all-warnings` shows everything.
"""

from __future__ import annotations

import re
from collections import Counter

# Python's warnings.formatwarning: `path:line: Category: message`, then the source line.
_WARNING = re.compile(r"^(?P<path>\S+?\.py):(?P<line>\d+): (?P<category>\w*Warning): ")
_INSTALLED = re.compile(r"/(?:site|dist)-packages/(?P<package>[^/]+)/")
_NOT_ACTIONABLE = frozenset({"FutureWarning", "DeprecationWarning", "PendingDeprecationWarning"})


class WarningFilter:
    """Decides line by line, per replica, what of a replica's output is shown."""

    def __init__(self) -> None:
        self.hidden: Counter[str] = Counter()
        """Hidden warnings by package."""
        self._seen: set[tuple[str, str, str]] = set()
        self._skip_source: set[str] = set()
        """Replicas whose next line is the source line of a warning not shown."""

    def keep(self, replica: str, line: str) -> bool:
        """Whether `line` of `replica`'s output is shown."""
        if replica in self._skip_source:
            self._skip_source.discard(replica)
            if line.startswith(" "):
                return False
        match = _WARNING.match(line)
        if match is None:
            return True
        installed = _INSTALLED.search(match["path"])
        if installed and match["category"] in _NOT_ACTIONABLE:
            self.hidden[installed["package"]] += 1
            self._skip_source.add(replica)
            return False
        key = (match["path"], match["line"], match["category"])
        if key in self._seen:
            self._skip_source.add(replica)
            return False
        self._seen.add(key)
        return True

    def summary(self) -> str | None:
        """One line on what was hidden, None when nothing was."""
        if not self.hidden:
            return None
        parts = ", ".join(f"{name} {count}" for name, count in sorted(self.hidden.items()))
        return (
            f"{sum(self.hidden.values())} FutureWarning/DeprecationWarning line(s) from"
            f" installed packages hidden ({parts}): nothing in the job changes them;"
            " --all-warnings shows them"
        )
