"""Reading manifest values defensively: a rule sees user YAML, where any field may hold
anything (a string where a number belongs, a list where a map does)."""

from __future__ import annotations

import re
from typing import Any


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_int(value: Any) -> int | None:
    """An int from YAML (`8` or `"8"`); None when it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


# A value a template engine fills in before the manifest is applied: `${VAR}`, `$VAR`,
# `<YOUR_IMAGE>`, `{{ .Values.x }}`, `__TOKEN__`, and the capitals a `sed` script replaces
# (`PLACEHOLDER_IMAGE`, `YOUR_HF_TOKEN`, `REPLACE_ME`). It is not the value a rule would judge.
_PLACEHOLDER_TEXT = (
    r"(\$\{[^}]*\}|\$[A-Za-z_]\w*|<[^<>]+>|\{\{.*\}\}|__\w+__"
    r"|\b(PLACEHOLDER|YOUR|REPLACE|CHANGE)_[A-Z0-9_]+\b|\b(REPLACE|CHANGE)_?ME\b)"
)
_PLACEHOLDER = re.compile(f"^{_PLACEHOLDER_TEXT}$")
_HAS_PLACEHOLDER = re.compile(_PLACEHOLDER_TEXT)


def is_placeholder(value: str) -> bool:
    """The whole value is a template placeholder."""
    return bool(_PLACEHOLDER.match(value.strip()))


def has_placeholder(value: str) -> bool:
    """Some of the value is a template placeholder (`${RUN}-train`): its final text is unknown."""
    return bool(_HAS_PLACEHOLDER.search(value))
