"""The nesting bound is checked per document: only a document whose cheap bound exceeds
MAX_DEPTH goes through PyYAML's event parser, on its own, and a refusal names its line in
the whole file. A kustomize stream with one dashboard full of brackets took the whole 4 MB
stream through the event parser (1.6 s of 8 on a 500-job fleet)."""

from __future__ import annotations

from unittest import mock

import pytest

from trainops.core import limits, yamlio
from trainops.core.errors import InputError

# 180 brackets in a quoted string, 10 columns in: over the bound, within MAX_DEPTH.
BRACKETS = "a:\n  b:\n    c:\n      d:\n        e:\n          json: '" + "[{" * 90 + "'\n"
INDENTED = "a:\n" + "".join("  " * i + f"k{i}:\n" for i in range(1, 20)) + "  " * 20 + "v: 1\n"


def test_only_the_suspect_document_is_parsed() -> None:
    text = "---\n".join([INDENTED, BRACKETS, INDENTED, INDENTED])
    with mock.patch.object(limits, "_parse_depth", wraps=limits._parse_depth) as parsed:
        documents = yamlio.load_text(text, "stream.yaml")
    assert len(documents) == 4
    ((piece, file, first_line), _) = parsed.call_args
    assert parsed.call_count == 1 and piece == "---\n" + BRACKETS and file == "stream.yaml"
    assert first_line == INDENTED.count("\n")


def test_a_deep_later_document_is_refused_at_its_line() -> None:
    deep = "x:\n" + "".join(" " * i + "- \n" for i in range(1, 240))
    text = f"{INDENTED}---\n{BRACKETS}---\n{deep}"
    with pytest.raises(InputError) as err:
        yamlio.load_text(text, "deep.yaml")
    (problem,) = err.value.problems
    assert "nests more than" in problem.message
    first = INDENTED.count("\n") + BRACKETS.count("\n") + 3  # 1-based line of `x:`
    assert first < problem.line <= first + 240


def test_a_document_that_needs_the_stream_is_checked_with_it() -> None:
    """A `%TAG` directive belongs to the document after it: alone, that document does not
    parse, and the whole stream is parsed instead (still refused)."""
    text = "%TAG !e! tag:example.com,2000:app/\n--- !e!x\na: " + "[" * 300 + "]" * 300 + "\n"
    with pytest.raises(InputError) as err:
        yamlio.load_text(text, "tagged.yaml")
    assert "nests more than" in str(err.value)
