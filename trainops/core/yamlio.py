"""Strict, safe YAML in.

In: PyYAML's safe loader (the C one when available), made strict where the
Kubernetes API server is strict and PyYAML is not: duplicate keys are an error
(PyYAML silently keeps the last), alias expansion is bounded (a "billion laughs"
document is tiny on disk and huge in memory), a recursive alias is an error, and
every problem becomes an `InputError` naming file, line and column. Each document
has its node tree, so any later finding can be mapped back to the line of the
offending key; for the documents that yaml-rs reads (`trainops.core.yaml_fast`: those
it provably reads as PyYAML does) the tree is composed when first asked for.

The data is what Kubernetes reads (sigs.k8s.io/yaml turns YAML into JSON), so it
is always JSON: every mapping key is a string (a scalar key's text: `1` and `"1"`
are the same key, `1` and `true` are not; a mapping or list as a key is an error),
a timestamp stays the scalar's text, `!!binary` is its base64 text, `!!set` is a
mapping to nulls and `!!omap`/`!!pairs` are lists of one-entry mappings. PyYAML
would build `date`, `bytes`, `set`, tuples and non-string keys, which no JSON
consumer (the schema validator included) can take.

Out (`trainops.core.yaml_dump`): sorted keys, block style, literal blocks for multi-line
strings — the same bytes on every machine.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainops.core import yaml_fast
from trainops.core.errors import InputError, Problem
from trainops.core.limits import MAX_DEPTH, check_depth, read_bounded
from trainops.core.yaml_aliases import (
    MAX_EXPANDED_BYTES,
    MAX_EXPANDED_NODES,
    RecursiveAlias,
    expanded_shape,
    recursive_alias_problem,
)
from trainops.core.yaml_strict import KubernetesLoader, StrictLoader


@dataclass
class Document:
    """One YAML document of a file: its data and where each part of it came from."""

    file: str
    """Path as shown to the user."""
    index: int
    """0-based position of the document in its file."""
    data: Any
    tree: yaml.Node | None = None
    """PyYAML's node tree, when built; else it is composed from `text` on first use."""
    text: str | None = field(default=None, repr=False)
    """The document's own text, when its data came from the fast path (`yaml_fast`)."""
    first_line: int = 0
    """0-based line of the file where the tree's line 0 is."""

    @property
    def node(self) -> yaml.Node:
        """The node tree: positions are only asked for when something is reported."""
        if self.tree is None:
            self.tree = _compose(self.text or "")
        return self.tree

    @property
    def line(self) -> int:
        """1-based line where the document starts."""
        return int(self.node.start_mark.line) + 1 + self.first_line

    def _walk(self, path: Sequence[str | int]) -> tuple[Any, yaml.Node, bool]:
        """(mark, node) of the deepest node found along `path`, and whether all of it was."""
        node = self.node
        mark = node.start_mark
        for part in path:
            if isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    if isinstance(key_node, yaml.ScalarNode) and key_node.value == str(part):
                        mark, node = key_node.start_mark, value_node
                        break
                else:
                    return mark, node, False
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
                if not 0 <= part < len(node.value):
                    return mark, node, False
                node = node.value[part]
                mark = node.start_mark
            else:
                return mark, node, False
        return mark, node, True

    def position(self, path: Sequence[str | int]) -> tuple[int, int]:
        """1-based (line, column) of the deepest node found along `path`.

        For a mapping entry this is the key, which is where a reader looks.
        """
        mark, _, _ = self._walk(path)
        return int(mark.line) + 1 + self.first_line, int(mark.column) + 1

    def scalar_text(self, path: Sequence[str | int]) -> str | None:
        """The scalar at `path` as written (`2.10`, not the float 2.1), else None."""
        _, node, found = self._walk(path)
        return str(node.value) if found and isinstance(node, yaml.ScalarNode) else None

    def line_of(self, path: Sequence[str | int]) -> int:
        return self.position(path)[0]

    def part(self, path: Sequence[str | int], data: Any) -> Document | None:
        """The node at exactly `path` as a document of its own (same file and index), whose
        positions are relative to it; None when the path is not in the tree."""
        _, node, found = self._walk(path)
        if not found:
            return None
        return Document(self.file, self.index, data, node, first_line=self.first_line)


def _compose(text: str) -> yaml.Node:
    """The node tree of one document that yaml-rs has read. The screen in `yaml_fast` sends
    anything PyYAML would refuse to PyYAML in the first place; should the two still disagree,
    positions fall back to the document's first line rather than fail the report."""
    loader = StrictLoader(text)
    try:
        node: yaml.Node | None = loader.get_single_node()
    except yaml.YAMLError:
        node = None
    finally:
        loader.dispose()
    if node is None:
        start = yaml.Mark("", 0, 0, 0, "", 0)
        node = yaml.ScalarNode("tag:yaml.org,2002:null", "", start, start)
    return node


# A line PyYAML read as the start of a key, then found no `:` after (reported on the next
# line): `image:ghcr.io/x:1` (no space after the colon), `  --epochs=10` (no `- `).
_KEY_WITHOUT_COLON = "while scanning a simple key"


def _problem(file: str, err: yaml.YAMLError, text: str) -> Problem:
    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    what = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None)
    message = f"{context}: {what}" if context else str(what)
    context_mark = getattr(err, "context_mark", None)
    if context == _KEY_WITHOUT_COLON and context_mark is not None:
        mark = context_mark  # the line the author wrote, not the one after it
        message += (
            " (a key needs a colon and a space, `key: value`; a list item a dash and a"
            " space, `- item`)"
        )
    if mark is None:
        return Problem.whole_file(file, f"invalid YAML: {message}")
    lines = text.splitlines()
    if mark.line < len(lines) and "\t" in lines[mark.line][: mark.column + 1]:
        message += " (a tab: YAML does not allow tabs for indentation, use spaces)"
    return Problem(file, mark.line + 1, mark.column + 1, f"invalid YAML: {message}")


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building data that all stays alive.

    Loading allocates millions of small objects that are kept (the node trees are
    kept for positions); the cyclic GC would rescan them over and over, which
    triples load time on a large multi-document stream and, later, slows whatever
    code happens to trigger a full collection. Reference counting still frees
    everything that is not in a cycle.

    When the outermost pause ends, what exists is moved to the permanent generation
    (`gc.freeze`) before the collector resumes: otherwise the first
    collection after the pause walks every object built during it (a quarter of the
    load time of 5,000 documents). Those objects hold no reference cycles, so
    reference counting still frees them when they are dropped; what the freeze costs
    is that a cycle made during a pause is never collected — fine for a command
    that validates and exits.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()


def load_text(text: str, file: str, *, as_kubernetes: bool = False) -> list[Document]:
    """Parse every non-empty document of `text`; `file` names it in errors. `as_kubernetes`:
    plain scalars as kubectl and the API server read them (`trainops.core.yaml_go`: `1e-4` a
    number, `y` a bool), for manifests; else as YAML 1.1 reads them, for trainops's specs."""
    loader = KubernetesLoader if as_kubernetes else StrictLoader
    with gc_paused():
        return _load_text(text, file, loader)


def _load_text(text: str, file: str, loader: type[StrictLoader]) -> list[Document]:
    if "\x00" in text:
        raise InputError(Problem.whole_file(file, "this is a binary file, not YAML"))
    pieces = list(yaml_fast.split_documents(text))
    check_depth(text, file, pieces)
    documents = _load_fast(text, pieces, file, loader)
    if documents is None:
        documents = _load_pyyaml(text, file, loader)
    return documents


def _load_fast(
    text: str, pieces: list[tuple[int, str]], file: str, loader: type[StrictLoader]
) -> list[Document] | None:
    """Each document through yaml-rs where `yaml_fast` finds it safe, else through PyYAML;
    None when anything goes wrong, so that PyYAML reads the whole stream and reports the
    problem at its place in the file."""
    if "\r" in text:
        # PyYAML reads `\r\n` as `\n` everywhere: lines, columns and data stay as they are.
        text = text.replace("\r\n", "\n")
        pieces = list(yaml_fast.split_documents(text))
    if yaml_fast.stream_needs_pyyaml(text):
        return None
    documents: list[Document] = []
    index = 0
    screened = yaml_fast.pieces_needing_pyyaml(text, pieces)
    for (first_line, piece), needs_pyyaml in zip(pieces, screened, strict=True):
        if not yaml_fast.holds_document(piece):
            continue
        if needs_pyyaml:
            try:
                ((node, data),) = _pyyaml_documents(piece, loader)
            except (yaml.YAMLError, RecursiveAlias, RecursionError, _AliasBomb, ValueError):
                return None
            document = Document(file, index, data, node, first_line=first_line)
        else:
            try:
                data = yaml_fast.read(piece)
            except yaml_fast.Refused:
                return None
            document = Document(file, index, data, text=piece, first_line=first_line)
        if data is not None:
            documents.append(document)
        index += 1
    return documents


class _AliasBomb(Exception):
    """A document whose aliases expand past MAX_EXPANDED_NODES; `line` is where it starts."""

    def __init__(self, line: int) -> None:
        super().__init__(line)
        self.line = line


def _pyyaml_documents(
    text: str, loader_class: type[StrictLoader] = StrictLoader
) -> list[tuple[yaml.Node, Any]]:
    """(node tree, data) of every document, strictly; raises what the loader raises."""
    loader = loader_class(text)
    documents: list[tuple[yaml.Node, Any]] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if not loader.tree_only:
                size, depth, chars = expanded_shape(node, {}, set())
                if size > MAX_EXPANDED_NODES or depth > MAX_DEPTH or chars > MAX_EXPANDED_BYTES:
                    raise _AliasBomb(node.start_mark.line + 1)
            documents.append((node, loader.construct_document(node)))
    finally:
        loader.dispose()
    return documents


def _load_pyyaml(text: str, file: str, loader: type[StrictLoader]) -> list[Document]:
    try:
        documents = _pyyaml_documents(text, loader)
    except _AliasBomb as bomb:
        raise InputError(
            Problem(
                file,
                bomb.line,
                None,
                f"document expands to more than {MAX_EXPANDED_NODES:,} nodes,"
                f" {MAX_EXPANDED_BYTES:,} bytes of text or {MAX_DEPTH} levels of nesting"
                " through aliases; refusing to load it (remove the anchors/aliases)",
            )
        ) from None
    except yaml.YAMLError as err:
        raise InputError(_problem(file, err, text)) from None
    except RecursiveAlias as found:
        raise InputError(recursive_alias_problem(file, text, found)) from None
    except RecursionError:
        raise InputError(Problem.whole_file(file, "YAML nests too deeply to load")) from None
    return [
        Document(file, index, data, node)
        for index, (node, data) in enumerate(documents)
        if data is not None
    ]


def load_file(
    path: Path, display: str | None = None, *, as_kubernetes: bool = False
) -> list[Document]:
    """Read and parse a YAML file; errors name `display` (default: the path); `as_kubernetes`
    as in `load_text`."""
    name = display or str(path)
    raw = read_bounded(path, name)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise InputError(
            Problem(name, line, None, "not UTF-8 text (is this a binary file?); save it as UTF-8")
        ) from None
    return load_text(text, name, as_kubernetes=as_kubernetes)
