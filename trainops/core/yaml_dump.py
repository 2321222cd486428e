"""Deterministic YAML out: sorted keys, block style, literal blocks for multi-line strings,
no aliases — the same bytes on every machine (generated files are committed and diffed)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import Any

import yaml

_BaseDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# The tag a plain scalar's text reads as (`true`, `1.5`, `null`...): a pure function of the
# text without path resolvers, which the emitter asks for every scalar it writes, of a few
# thousand distinct texts over a whole rendered repository. Emptied when full.
_RESOLVED: dict[str, str] = {}
_MAX_RESOLVED = 100_000


class _Dumper(_BaseDumper):  # type: ignore[misc, valid-type]
    """Block style, no aliases, literal blocks for multi-line strings.

    The rendered repository is tens of thousands of files of plain JSON data: `represent_data`
    builds the nodes of dicts, lists and strings directly, as SafeRepresenter's own functions
    do with aliases ignored and `default_flow_style=False` (the output is byte for byte the
    same, tests/core/test_yaml_dump.py), and hands every other type to them.
    """

    def ignore_aliases(self, data: Any) -> bool:
        return True

    def represent_data(self, data: Any) -> yaml.Node:
        kind = type(data)
        if kind is str:
            return yaml.ScalarNode(_STR, data, style="|" if "\n" in data else self.default_style)
        if self.default_flow_style is None:  # a style chosen per node: SafeRepresenter's way
            node: yaml.Node = super().represent_data(data)
            return node
        if kind is dict:
            items = list(data.items())
            if self.sort_keys:
                with contextlib.suppress(TypeError):  # mixed key types: as they come
                    items.sort()
            pairs = [(self.represent_data(k), self.represent_data(v)) for k, v in items]
            return yaml.MappingNode(_MAP, pairs, flow_style=self.default_flow_style)
        if kind is list:
            values = [self.represent_data(item) for item in data]
            return yaml.SequenceNode(_SEQ, values, flow_style=self.default_flow_style)
        other: yaml.Node = super().represent_data(data)
        return other

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is not yaml.ScalarNode or self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)
        if not implicit[0]:  # no implicit resolver applies
            return self.DEFAULT_SCALAR_TAG
        tag = _RESOLVED.get(value)
        if tag is None:
            if len(_RESOLVED) > _MAX_RESOLVED:
                _RESOLVED.clear()
            tag = _RESOLVED[value] = super().resolve(kind, value, implicit)
        return tag


# Plain scalars that PyYAML (YAML 1.1) reads as strings but the Go readers of the output do
# not: kustomize (kyaml, YAML 1.2's core schema) and kubectl/the API server (go-yaml v2,
# trainops/core/yaml_go.py) take `1e-4`, `1E5`, `1.0e5` and `-.5` as floats, `0o17` as an
# octal int, and go-yaml `y`/`n` as bools, so an env value written so would reach the API
# server as a number or a bool, which it refuses. Resolved so here, such strings are quoted.
GO_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
GO_OCTAL = re.compile(r"^0o[0-7]+$")
GO_BOOL = re.compile(r"^[yYnN]$")
_Dumper.add_implicit_resolver("tag:yaml.org,2002:float", GO_FLOAT, list("-+.0123456789"))
_Dumper.add_implicit_resolver("tag:yaml.org,2002:int", GO_OCTAL, ["0"])
_Dumper.add_implicit_resolver("tag:yaml.org,2002:bool", GO_BOOL, list("yYnN"))


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
