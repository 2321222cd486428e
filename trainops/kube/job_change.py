"""What a change does to one training job that already exists: the fields it changes, and
which of them a consumer refuses to update (`trainops.facts.lifecycle`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from trainops.facts.lifecycle import Immutable, Path, immutable_fields, matches

# Fields the API server and the controllers own: never part of what Git changes.
_NOT_OURS: frozenset[Path] = frozenset(
    {("status",), ("metadata", "generation"), ("metadata", "resourceVersion")}
)


def changed_paths(old: Any, new: Any, at: Path = ()) -> Iterator[Path]:
    """The leaf paths where `old` and `new` differ (list items by index; a list that grew or
    shrank is changed from its first differing index)."""
    if at in _NOT_OURS or old == new:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key in sorted(set(old) | set(new), key=str):
            yield from changed_paths(old.get(key), new.get(key), (*at, str(key)))
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            yield from changed_paths(a, b, (*at, str(i)))
    else:
        yield at


@dataclass(frozen=True)
class Refusal:
    """One changed field a consumer refuses to update."""

    path: Path
    rule: Immutable


@dataclass(frozen=True)
class JobChange:
    """A kept job's change: every changed field, and those refused."""

    changed: tuple[Path, ...]
    refused: tuple[Refusal, ...]

    @property
    def applies(self) -> bool:
        """Whether the consumers accept it as an update (nothing refused)."""
        return not self.refused


def classify(old: Mapping[str, Any], new: Mapping[str, Any], kueue: bool) -> JobChange:
    """`old` (the job as built at the base) becoming `new`, on a cluster running Kueue or not.
    A field set where it had no value is not refused (a CEL transition rule needs both)."""
    changed = tuple(changed_paths(old, new))
    rules = immutable_fields(str(new.get("apiVersion", "")), str(new.get("kind", "")), kueue)
    refused = []
    for path in changed:
        rule = next((r for r in rules if matches(r.path, path)), None)
        if rule is not None and _value(old, rule.path, path) is not None:
            refused.append(Refusal(path, rule))
    return JobChange(changed, tuple(refused))


def _value(obj: Any, pattern: Path, path: Path) -> Any:
    """The old value at the immutable field itself (`path` cut to the pattern's length)."""
    for key in path[: len(pattern)]:
        if isinstance(obj, Mapping):
            obj = obj.get(key)
        elif isinstance(obj, list) and key.isdigit() and int(key) < len(obj):
            obj = obj[int(key)]
        else:
            return None
    return obj


def dotted(path: Path) -> str:
    """`spec.runPolicy.schedulingPolicy.queue`, list items as `[i]`, odd keys quoted."""
    out = ""
    for key in path:
        if key.isdigit():
            out += f"[{key}]"
        elif "." in key or "/" in key:
            out += f'["{key}"]'
        else:
            out += f".{key}" if out else key
    return out
