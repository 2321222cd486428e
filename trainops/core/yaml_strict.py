"""The strict PyYAML loader: PyYAML's safe loader, made to read YAML as Kubernetes does.

Duplicate keys are an error (PyYAML silently keeps the last; the API server refuses them), a
mapping key is a scalar's text, and the values PyYAML would build as `date`, `bytes`, `set` or
tuples stay JSON (see `trainops.core.yamlio`'s module doc for the data model). A value its tag
cannot take is reported at its place. Scalar tags are memoised and the commonest nodes built
directly: most of the loading time of a large manifest stream is spent here.

`trainops.core.yamlio` drives it (bounds, aliases, the fast path, `InputError`s).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

import yaml

from trainops.core import yaml_go

_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _DuplicateKeyError(yaml.MarkedYAMLError):
    """A mapping key given twice: a YAMLError, reported like any other at the key's place."""


_STR_TAG = "tag:yaml.org,2002:str"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAP_TAG = "tag:yaml.org,2002:map"
_MERGE_TAG = "tag:yaml.org,2002:merge"
# Keys that make SafeConstructor rewrite a mapping before building it (merge `<<`,
# value `=`): rare in manifests, so such mappings take PyYAML's own path.
_REWRITING_KEY_TAGS = frozenset({_MERGE_TAG, "tag:yaml.org,2002:value"})


class StrictLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loader that rejects duplicate mapping keys."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._scalar_tags: dict[tuple[str, tuple[bool, bool]], str] = {}
        # An alias needs an anchor (`&name`): without a `&` in the text, no node is
        # shared, so nothing can expand or recurse and PyYAML's per-node bookkeeping
        # (which makes an aliased node one shared object) can be skipped.
        self.tree_only = "&" not in stream

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        """PyYAML's tag resolution, memoised for scalars.

        The composer asks for every scalar's tag, and PyYAML answers by running
        regular expressions; a manifest repeats the same keys and values over and
        over. Without path resolvers (this loader has none) a scalar's tag depends
        only on its text and on whether it was plain or quoted.
        """
        if kind is not yaml.ScalarNode:
            return super().resolve(kind, value, implicit)  # type: ignore[no-any-return]
        key = (value, implicit)
        tag = self._scalar_tags.get(key)
        if tag is None:
            tag = self._scalar_tags[key] = super().resolve(kind, value, implicit)
        return tag

    def construct_sequence(self, node: yaml.Node, deep: bool = False) -> list[Any]:
        if not isinstance(node, yaml.SequenceNode):
            return super().construct_sequence(node, deep=deep)  # type: ignore[no-any-return]
        return [self._construct(child, deep) for child in node.value]

    def _construct(self, node: yaml.Node, deep: bool) -> Any:
        """`construct_object`, minus its bookkeeping for the commonest nodes.

        PyYAML's str constructor returns the scalar's value as it is; most of a
        manifest's nodes are strings, so this is most of the loading time saved.
        In a tree (no aliases) plain mappings and sequences are built directly too.
        """
        if type(node) is yaml.ScalarNode and node.tag == _STR_TAG:
            return node.value
        if self.tree_only:
            if type(node) is yaml.MappingNode and node.tag == _MAP_TAG:
                return self.construct_mapping(node, deep)
            if type(node) is yaml.SequenceNode and node.tag == _SEQ_TAG:
                return [self._construct(child, deep) for child in node.value]
        return self.construct_object(node, deep=deep)

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        """PyYAML's, with a value its tag cannot take (`!!int x`, `!!bool maybe`) reported at
        its place instead of escaping as a bare ValueError or KeyError."""
        try:
            return super().construct_object(node, deep=deep)
        except (ValueError, KeyError) as err:
            tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
            raise yaml.constructor.ConstructorError(
                None, None, f"{tag} cannot take {node.value!r} ({err})", node.start_mark
            ) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[str, Any]:
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]
        seen: dict[str, yaml.Node] = {}
        keys: list[str] = []
        rewrite = False
        for key_node, _ in node.value:
            if key_node.tag in _REWRITING_KEY_TAGS:
                rewrite = True
                if key_node.tag == _MERGE_TAG:
                    continue
            # The common case inline: a scalar key is its text.
            key = key_node.value if type(key_node) is yaml.ScalarNode else _key_text(node, key_node)
            first = seen.get(key)
            if first is not None:
                raise _DuplicateKeyError(
                    problem=(
                        f"duplicate key {key!r} (first at line {first.start_mark.line + 1});"
                        " the API server rejects duplicate keys: keep one"
                    ),
                    problem_mark=key_node.start_mark,
                )
            seen[key] = key_node
            keys.append(key)
        if rewrite:
            # Merge keys (`<<`): PyYAML's own merge, which puts the merged entries
            # first so that the mapping's own keys win; then the same string keys.
            self.flatten_mapping(node)
            return {
                _key_text(node, key_node): self._construct(value_node, deep)
                for key_node, value_node in node.value
            }
        # Keys are built and checked above: build the values, in order, once.
        return {
            key: self._construct(value_node, deep)
            for key, (_, value_node) in zip(keys, node.value, strict=True)
        }

    # Scalars and collections Kubernetes reads differently from PyYAML (see the module doc).

    def construct_yaml_timestamp(self, node: yaml.Node) -> str:
        return str(self.construct_scalar(node))

    def construct_yaml_binary(self, node: yaml.Node) -> str:
        text = "".join(str(self.construct_scalar(node)).split())
        try:
            base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as err:
            raise yaml.constructor.ConstructorError(
                None, None, f"failed to decode base64 data: {err}", node.start_mark
            ) from None
        return text

    def construct_yaml_set(self, node: yaml.MappingNode) -> Iterator[dict[str, None]]:
        data: dict[str, None] = {}
        yield data
        data.update(dict.fromkeys(self.construct_mapping(node)))

    def construct_yaml_pairs(self, node: yaml.Node) -> Iterator[list[Any]]:
        if not isinstance(node, yaml.SequenceNode):
            raise yaml.constructor.ConstructorError(
                "while constructing pairs",
                node.start_mark,
                f"expected a sequence, but found a {type(node).__name__}",
                node.start_mark,
            )
        data: list[Any] = []
        yield data
        data.extend(self._construct(child, deep=True) for child in node.value)


def _key_text(mapping: yaml.Node, key_node: yaml.Node) -> str:
    """A mapping key as Kubernetes reads it: the scalar's text; a collection is an error."""
    if not isinstance(key_node, yaml.ScalarNode):
        raise yaml.constructor.ConstructorError(
            "while constructing a mapping",
            mapping.start_mark,
            f"found a {'mapping' if isinstance(key_node, yaml.MappingNode) else 'list'} used as"
            " a key; Kubernetes keys are strings",
            key_node.start_mark,
        )
    return str(key_node.value)


for _tag, _constructor in {
    "timestamp": StrictLoader.construct_yaml_timestamp,
    "binary": StrictLoader.construct_yaml_binary,
    "set": StrictLoader.construct_yaml_set,
    "omap": StrictLoader.construct_yaml_pairs,
    "pairs": StrictLoader.construct_yaml_pairs,
}.items():
    StrictLoader.add_constructor(f"tag:yaml.org,2002:{_tag}", _constructor)


class KubernetesLoader(StrictLoader):
    """StrictLoader whose plain scalars resolve and build as go-yaml v2's do, as kubectl and the
    API server read a manifest (`trainops.core.yaml_go`): `1e-4` a float, `y` true, `1:30` text.
    Defined after StrictLoader's own constructors are registered: a subclass copies them."""

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: Any) -> str:
        if kind is not yaml.ScalarNode or not implicit[0]:  # quoted: a string, as in PyYAML
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = self._scalar_tags.get(key)
        if tag is None:
            tag = self._scalar_tags[key] = yaml_go.tag(value)
        return tag

    def construct_go_scalar(self, node: yaml.Node) -> Any:
        return yaml_go.value(str(node.tag), str(self.construct_scalar(node)))


for _tag in (yaml_go.BOOL, yaml_go.INT, yaml_go.FLOAT, yaml_go.NULL):
    KubernetesLoader.add_constructor(_tag, KubernetesLoader.construct_go_scalar)
