"""Deterministic YAML out: sorted keys, block style, literal blocks for multi-line strings,
no aliases — the same bytes on every machine (generated files are committed and diffed)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """Block style, no aliases, literal blocks for multi-line strings."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _represent_str)


def dump(data: Any) -> str:
    """One document, deterministic: sorted keys, block style, no line wrapping."""
    text: str = yaml.dump(
        data,
        Dumper=_Dumper,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=10_000,
    )
    return text


def dump_all(documents: Iterable[Any]) -> str:
    """Several documents separated by `---`."""
    return "---\n".join(dump(d) for d in documents)
