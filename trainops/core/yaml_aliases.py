"""YAML aliases, bounded: a "billion laughs" document is tiny on disk and huge in memory,
and an alias to an enclosing node expands forever. Counted on the node tree before any data
is built, in linear time."""

from __future__ import annotations

import re

import yaml

from trainops.core.errors import Problem
from trainops.core.limits import MAX_FILE_BYTES

# A Kubernetes manifest has a few hundred nodes; a PyTorchJob with every pod
# field set a few thousand. One million expanded nodes (aliases counted each
# time they are used) is far above any real manifest and far below what would
# exhaust memory when the document is walked.
MAX_EXPANDED_NODES = 1_000_000
# Nodes are not the only measure (issue 35.8): one 200 KB string aliased 5,000 times is 5,000
# nodes and a gigabyte once anything writes the data out (JSON for the schema validator,
# the rendered YAML) — a MemoryError. The scalars' text, counted each time an alias uses it,
# is bounded by what trainops reads from one file.
MAX_EXPANDED_BYTES = MAX_FILE_BYTES


class RecursiveAlias(Exception):
    """`child` is an alias, inside `parent`, to a node that contains it."""

    def __init__(self, parent: yaml.Node, child: yaml.Node) -> None:
        super().__init__()
        self.parent, self.child = parent, child


def expanded_shape(
    node: yaml.Node, memo: dict[int, tuple[int, int, int]], active: set[int]
) -> tuple[int, int, int]:
    """(nodes, depth, bytes of scalar text) once every alias is expanded, memoised per node
    (linear time).

    The depth matters as much as the size: 1,400 anchors each holding an alias of the one
    before nest the data 1,400 levels deep in a file nested two levels deep, and every
    recursive walk of the data after loading (the JSON Schema validator's among them) ends
    in a RecursionError. An anchor precedes its aliases, so the target of an alias is
    memoised before the alias is met and this function recurses only as deep as the text
    nests (bounded by `limits.MAX_DEPTH` before it runs).

    `active` holds the nodes being counted (this one's ancestors): meeting one of
    them again is an alias to an enclosing node, which would expand forever.
    """
    key = id(node)
    if key in memo:
        return memo[key]
    active.add(key)
    size, deepest, text = 1, 0, 0
    if isinstance(node, yaml.MappingNode):
        children = [child for pair in node.value for child in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = node.value
    else:
        children = []
        text = len(node.value) if isinstance(node.value, str) else 0
    for child in children:
        # A scalar is one node however often it is aliased: skip the call and the memo.
        if type(child) is yaml.ScalarNode:
            size += 1
            text += len(child.value)
        elif id(child) in active:
            raise RecursiveAlias(node, child)
        else:
            child_size, child_depth, child_text = expanded_shape(child, memo, active)
            size += child_size
            deepest = max(deepest, child_depth)
            text += child_text
    active.discard(key)
    depth = deepest + 1 if isinstance(node, yaml.CollectionNode) else 0
    shape = memo[key] = (size, depth, text)
    return shape


_ANCHOR = re.compile(r"&([^\s,\[\]{}]+)")


def recursive_alias_problem(file: str, text: str, found: RecursiveAlias) -> Problem:
    """Name the alias and the line it is on (the node tree keeps no alias, only its target)."""
    lines = text.splitlines()
    anchor_mark = found.child.start_mark
    anchor_line = lines[anchor_mark.line] if anchor_mark.line < len(lines) else ""
    match = _ANCHOR.match(anchor_line, anchor_mark.column)
    line = found.parent.start_mark.line
    if match is None:
        return Problem(
            file,
            line + 1,
            None,
            f"recursive alias: an alias refers to itself (to the node at line"
            f" {anchor_mark.line + 1} that contains it); remove it",
        )
    name = match.group(1)
    alias = re.compile(rf"\*{re.escape(name)}(?![^\s,\[\]{{}}])")
    column = None
    for number in range(line, min(found.parent.end_mark.line + 1, len(lines))):
        hit = alias.search(lines[number])
        if hit:
            line, column = number, hit.start()
            break
    return Problem(
        file,
        line + 1,
        None if column is None else column + 1,
        f"recursive alias: `*{name}` refers to itself (it is inside the node anchored"
        f" `&{name}` at line {anchor_mark.line + 1}); remove the alias",
    )
