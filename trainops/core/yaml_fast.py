"""The fast way in: yaml-rs for the documents it provably reads as PyYAML does.

`yamlio` reads YAML as Kubernetes does, through PyYAML: YAML 1.1 scalars, strict keys and
a node tree for positions. On 5,000 manifests that is ~7x slower than yaml-rs (a Rust
parser of YAML 1.2), and most of what a user validates (kustomize output, manifest
directories) never needs a position: only a finding does. So a stream is cut at its `---`
lines and each document is screened; when the screen finds nothing, yaml-rs builds the data
and PyYAML composes the node tree later, only if a position is asked for. A document the
screen stops, or yaml-rs refuses, is read by PyYAML as before.

The screen stops every spelling the two read differently:
- plain scalars that YAML 1.1 resolves but 1.2 does not, or to another value: `yes`/`no`/
  `on`/`off`, `0755`, `1_000`, `1:30`, `1e3`, `0o17`, `-.5`, `.nan`, `=`, `<<`; and `y`/`n`,
  text to both but bools to go-yaml v2 (`yamlio`'s `as_kubernetes` reads as go-yaml does);
- keys that 1.2 types (`1:`, `true:`, `~:`, a flow collection, `?` keys): Kubernetes keys
  are the scalar's text, and `1` and `"1"` are one key;
- tags, anchors and aliases (PyYAML's own rules, and our alias bounds), tabs, surrogate
  escapes, and control characters (which yaml-rs lets through);
- in the stream: directives, `...`, line breaks other than `\\n` and `\\r\\n`, a byte order
  mark, top-level block scalars (whose lines may start with `---`), a last document with
  no final line break, and a block scalar header on a document's last line (in both, a
  block scalar there keeps a newline in yaml-rs only).
It reads text, not tokens, so it also fires inside quotes, comments and block scalars: a
false alarm costs speed, never a value. tests/core/test_yaml_fast.py reads every YAML file
the tests can reach, and mutations of them, both ways and compares data and positions.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from typing import Any

import yaml_rs

# One document per chunk: a `---` line at column 0 always starts a document (inside a
# quoted or flow scalar it is an error, which yaml-rs reports and PyYAML then explains).
_DOCUMENT_START = re.compile(r"^---(?=[ \t\r\n]|$)", re.MULTILINE)

# Lines are found by the `\n` before them (the text's first line is checked apart): a `^`
# would slow the search at every position.
_STREAM_NEEDS_PYYAML = re.compile(
    r"\n(?:"
    r"%"  # directives
    r"|\.\.\.(?=[ \t\r\n]|$)"  # document end markers
    r"|(?:---[ \t]+)?[|>]"  # a top-level block scalar
    r")"
    r"|\r"  # a line break that `\n` does not count (`\r\n` is made `\n` before)
)
# What PyYAML's reader refuses (its NON_PRINTABLE: control characters, lone surrogates), and
# the other line breaks it counts (and a byte order mark); ASCII text only needs the first line.
_ASCII_NEEDS_PYYAML = re.compile(r"[\x00-\x08\x0B\x0C\x0E-\x1F\x7F]")
_TEXT_NEEDS_PYYAML = re.compile(
    r"[^\x09\x0A\x0D\x20-\x7E\xA0-\uD7FF\uE000-\uFEFE\uFF00-\uFFFD\U00010000-\U0010FFFF]"
    r"|[\u2028\u2029]"
)

# Where a whole token ends: as a value (end of line or comment, or the next flow entry), or
# as a key. A token followed by more words is part of a longer plain scalar, read alike.
_VALUE_END = r"(?=[ \t]*(?:#[^\n]*)?$|[ \t]*[,\]}])"
_KEY_END = r"(?=[ \t]*:(?:\s|$))"
_END = rf"(?:{_VALUE_END}|{_KEY_END})"
# Numbers both read alike as values: decimal integers (no leading zero, within 64 bits) and
# plain decimal fractions. Any other token of number characters goes to PyYAML.
_SAME_NUMBER = rf"[-+]?(?:0|[1-9][0-9]{{0,17}})(?:\.[0-9]{{1,17}})?{_VALUE_END}"
# A token the two may read differently, from its first character on (the lookahead up front
# lets most places fail at once: this runs over every byte read).
_TOKEN = (
    r"(?=[!&*?:|>yYnNoO=<tTfF~+\-.0-9])(?:"
    r"[!&*]"  # tag, anchor, alias
    # `?` and `:` opening a token: an explicit or empty key, or a plain scalar that 1.2
    # allows in flow context and 1.1 does not.
    r"|[?:]"
    # `|` and `>` but as a block scalar's header (a plain scalar in 1.2's flow context).
    r"|[|>](?![-+0-9]*[ \t]*(?:#[^\n]*)?$)"
    rf"|(?:yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|=|<<|[yYnN]){_END}"  # y, n: go-yaml's bools
    rf"|(?:[Tt]rue|TRUE|[Ff]alse|FALSE|[Nn]ull|NULL|~){_KEY_END}"  # keys 1.2 types
    # Number characters; a `-` or `+` inside only after an exponent's `e` (a UID or a date
    # is text to both).
    rf"|(?!{_SAME_NUMBER})[-+]?\.?[0-9](?:[0-9a-fA-F_.:xXoO]|[eE][-+])*{_END}"
    rf"|[-+]?\.(?:inf|Inf|INF|nan|NaN|NAN){_END}"
    r")"
)
# Where a node may begin on a line: after its indentation and sequence or key indicators (or
# `---`), after a key's `: ` (not a `:` inside a word, as in `image:1.2.3`), or after a flow
# indicator. One prefix for all but the line's start, so that the search looks for its first
# character only. After `]` or `}`, a `:` makes a flow collection a key.
_AFTER_START = r"[ \t]*(?:(?:---|[-?])[ \t]+)*"
_NEEDS_PYYAML = re.compile(rf"[:\[\]{{}},](?:(?<=:)[ \t]|(?<!:)){_AFTER_START}{_TOKEN}")
_NEEDS_PYYAML_FIRST = re.compile(_AFTER_START + _TOKEN)
_EMPTY_FLOW_VALUE = re.compile(r":[\]},]")  # `[x:]`: 1.1 refuses it, 1.2 reads {x: null}
_SURROGATE_ESCAPE = re.compile(r"\\[uU]0*[dD][89a-fA-F]")

# A block scalar header (`|`, `>-`, `|2`...) ending a line, maybe before a comment.
_BLOCK_HEADER_END = re.compile(r"(?:^|\s)[|>][-+0-9]*[ \t]*(?:#.*)?$")

_CONTENT_LINE = re.compile(r"^[ \t]*[^\s#]", re.MULTILINE)


class Refused(Exception):
    """yaml-rs could not read a document (PyYAML will say why, with the position)."""


def stream_needs_pyyaml(text: str) -> bool:
    """Whether the stream as a whole must be read by PyYAML (see the module docstring)."""
    characters = _ASCII_NEEDS_PYYAML if text.isascii() else _TEXT_NEEDS_PYYAML
    return (
        characters.search(text) is not None
        or _STREAM_NEEDS_PYYAML.search("\n" + text[:256]) is not None
        or _STREAM_NEEDS_PYYAML.search(text) is not None
    )


def split_documents(text: str) -> Iterator[tuple[int, str]]:
    """(0-based line of its first line, text) of each piece of `text` between `---` lines;
    the first piece (before any `---`) may hold no document."""
    line = 0
    previous = 0
    for match in _DOCUMENT_START.finditer(text):
        start = match.start()
        if start:
            yield line, text[previous:start]
            line += text.count("\n", previous, start)
        previous = start
    yield line, text[previous:]


def holds_document(piece: str) -> bool:
    """Whether a piece from `split_documents` holds a document: it opens with `---` (an
    explicit document, maybe empty), or it has a line that is not blank or a comment."""
    return piece.startswith("---") or _CONTENT_LINE.search(piece) is not None


def pieces_needing_pyyaml(text: str, pieces: Sequence[tuple[int, str]]) -> list[bool]:
    """For each piece of `split_documents(text)`, whether PyYAML and yaml-rs may read it
    differently. The token screen runs per line, once per distinct line: a stream of
    manifests repeats most of its lines (keys, labels, images), so this reads a fraction of
    the text."""
    flagged = _flagged_lines(text)
    ends = [first_line for first_line, _ in pieces[1:]] + [text.count("\n") + 1]
    return [
        _piece_needs_pyyaml(piece)
        or bisect.bisect_left(flagged, first_line) < bisect.bisect_left(flagged, end)
        for (first_line, piece), end in zip(pieces, ends, strict=True)
    ]


# Each distinct line's verdict, kept across calls: the files of a rendered repository and
# the streams kustomize builds from them repeat the same lines (keys, labels, images, probes)
# thousands of times. Emptied when full, so that it stays a few megabytes.
_VERDICTS: dict[str, bool] = {}
_MAX_VERDICTS = 100_000


def _flagged_lines(text: str) -> list[int]:
    """0-based numbers, in order, of the lines holding a token the two may read differently."""
    verdicts = _VERDICTS
    if len(verdicts) > _MAX_VERDICTS:
        verdicts.clear()
    flagged = []
    for number, line in enumerate(text.split("\n")):
        verdict = verdicts.get(line)
        if verdict is None:
            verdict = verdicts[line] = _line_needs_pyyaml(line)
        if verdict:
            flagged.append(number)
    return flagged


def _line_needs_pyyaml(line: str) -> bool:
    return (
        "\t" in line
        or ("\\" in line and _SURROGATE_ESCAPE.search(line) is not None)
        or _NEEDS_PYYAML_FIRST.match(line) is not None
        or _NEEDS_PYYAML.search(line) is not None
        or _EMPTY_FLOW_VALUE.search(line) is not None
    )


def _piece_needs_pyyaml(piece: str) -> bool:
    """What is not about one line: a missing final line break, or a block scalar header on
    the last line (an empty block scalar there is "\n" to yaml-rs and "" to PyYAML)."""
    return (
        not piece.endswith("\n")
        or _BLOCK_HEADER_END.search(piece.rstrip().rpartition("\n")[2]) is not None
    )


def read(piece: str) -> Any:
    """The data of the one document in `piece`, read by yaml-rs; `Refused` if it cannot."""
    try:
        return yaml_rs.loads(piece, parse_datetime=False)
    except (yaml_rs.YAMLDecodeError, ValueError, TypeError, OverflowError) as err:
        raise Refused(str(err)) from None
