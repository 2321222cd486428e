"""The fast path (yaml-rs, screened by `yaml_fast`) reads exactly what PyYAML reads.

`yamlio.load_text` takes each document through yaml-rs unless the screen stops it; the
reference is `yamlio._load_pyyaml`, PyYAML alone, in both readings (YAML 1.1's for specs,
go-yaml's for manifests: `as_kubernetes`). They must agree on every YAML file the
tests can reach (the repository, ../shared/upstream) and on thousands of seeded mutations of
them: the same data, types included, the same document indexes, the same position for every
path, or the same error at the same place. A screen that fired on everything would also
"agree", so the last tests check that ordinary manifests do take the fast path.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.mix import mixed_documents
from tests.tools import REPO, require_upstream
from trainops.core import yaml_fast, yamlio
from trainops.core.errors import InputError
from trainops.core.yaml_strict import KubernetesLoader, StrictLoader

SKIP_DIRS = {".venv", ".git", "build", "trainops.egg-info", "node_modules", ".mypy_cache"}


def repo_yaml_files() -> list[Path]:
    return sorted(
        p
        for suffix in ("*.yaml", "*.yml")
        for p in REPO.rglob(suffix)
        if not SKIP_DIRS.intersection(p.relative_to(REPO).parts)
    )


def paths(data: Any, prefix: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    yield prefix
    if isinstance(data, dict):
        for key, value in data.items():
            yield from paths(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from paths(value, (*prefix, index))


def outcome(load: Any, text: str) -> tuple[str, Any]:
    """What a loader makes of `text`: its errors, or each document's index, data (as JSON,
    so 1, 1.0 and true differ), start line and the position of every path."""
    try:
        documents = load(text, "f.yaml")
    except InputError as err:
        return "error", [str(p) for p in err.problems]
    return "ok", [
        (
            doc.index,
            json.dumps(doc.data),
            doc.line,
            [doc.position(path) for path in paths(doc.data)],
        )
        for doc in documents
    ]


def _fast(as_kubernetes: bool) -> Any:
    return lambda text, file: yamlio.load_text(text, file, as_kubernetes=as_kubernetes)


def _pyyaml(loader: type[StrictLoader]) -> Any:
    return lambda text, file: yamlio._load_pyyaml(text, file, loader)


def assert_same(text: str, readings: tuple[bool, ...] = (False, True)) -> None:
    """In each reading: YAML 1.1's (specs) and go-yaml's (manifests, `as_kubernetes`)."""
    for kubernetes in readings:
        loader = KubernetesLoader if kubernetes else StrictLoader
        assert outcome(_fast(kubernetes), text) == outcome(_pyyaml(loader), text), text


def test_the_repository_reads_the_same_both_ways() -> None:
    files = repo_yaml_files()
    assert len(files) > 100
    for path in files:
        assert_same(path.read_text())


def test_upstream_manifests_read_the_same_both_ways() -> None:
    """Manifests and CRDs: read as Kubernetes reads them (the screen is the same in both
    readings; the tokens and mutations below compare YAML 1.1's too)."""
    files = sorted(require_upstream().rglob("*.y*ml"))
    assert files
    for path in files:
        assert_same(path.read_text(), readings=(True,))


# Tokens YAML 1.1 (PyYAML) and 1.2 (yaml-rs) read differently, or that PyYAML refuses, and
# some both read alike; as values and as keys, plain and quoted.
TOKENS = [
    "yes",
    "No",
    "on",
    "OFF",
    "y",
    "n",
    "Y",
    "N",
    "true",
    "False",
    "null",
    "NULL",
    "~",
    "",
    "0755",
    "0o755",
    "0x1F",
    "-0x1F",
    "0b101",
    "1_000",
    "1:30",
    "190:20:30.15",
    "1e3",
    "1.0e3",
    "1.0e+3",
    "-.5",
    ".5",
    "1.",
    "+12",
    "-0",
    "09",
    "012345678",
    "0.5",
    "2.10",
    "12345678901234567890",
    "99999999999999999999",
    "1e400",
    ".5e3",
    "08",
    "1.12345678901234567890",
    ".inf",
    "-.Inf",
    ".NaN",
    "+.nan",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "=",
    "<<",
    "!!str 12",
    "!!int 7",
    "!!binary aGVsbG8=",
    "!custom x",
    "&a x",
    "*a",
    '"yes"',
    "'0755'",
    '"\\ud800"',
    '"\\x41\\t\\/\\N"',
    "[1, on]",
    "{a: 0755}",
    "? x",
    "10.0.0.1:29500",
    "1Gi",
    "500m",
    "a: b",
    "'",
    '"',
    "@x",
    "`x",
    "|",
    ">-",
    "- x",
    "#c",
    "\x07",
    "\u2028",
    "\x85",
    "[-x, -]",
    "{b: -}",
    "[?x]",
    "[x:]",
    "[]",
    "{}",
    '{"a":1}',
    "{a:1}",
    '["a":1]',
    "[a: b]",
    "{b, c}",
    "[b, ]",
    "[b,, c]",
    ":x",
    "?x",
    "-x",
    "a:b",
    "[a:b]",
    "{b: c:d}",
    "http://x#y",
    "x #c",
    "0b9e8a5c-1111-2222-3333-444455556666",
    "1e-3",
    "1.5e-3",
    "1.5E+3",
    "1-2",
    "0x1F-2",
    "2001-12-14 21:59:43.10 -5",
    "1.2.3",
    "10.0.0.1",
]


def mutate(text: str, rng: random.Random) -> str:
    """One small edit of the kind users make, or a token from TOKENS put somewhere."""
    lines = text.split("\n")
    at = rng.randrange(len(lines))
    line = lines[at]
    choice = rng.randrange(10)
    if choice < 4 and ":" in line:  # a value (or a key) replaced by a tricky token
        key, _, value = line.partition(":")
        token = rng.choice(TOKENS)
        if choice == 0:
            indent = key[: len(key) - len(key.lstrip(" -"))]
            lines[at] = f"{indent}{token}:{value}"
        else:
            lines[at] = f"{key}: {token}"
    elif choice == 4:  # a list item or flow entry
        lines[at] = line + f" {rng.choice(TOKENS)}"
    elif choice == 5:  # indentation shifted
        lines[at] = " " + line if rng.random() < 0.5 else line[1:]
    elif choice == 6:  # a character deleted or a stray one inserted
        if line:
            col = rng.randrange(len(line))
            extra = rng.choice(["", "\t", ":", " ", "-", "'", '"', "[", "}", "#", "&", "\r"])
            lines[at] = line[:col] + extra + line[col + 1 :]
    elif choice == 7:  # document markers
        lines.insert(at, rng.choice(["---", "...", "--- |", "--- # c", "%YAML 1.1", "--- !x"]))
    elif choice == 8:  # a line duplicated (duplicate keys)
        lines.insert(at, line)
    else:  # the stream's ends and line breaks
        edits = [
            lambda t: t.rstrip("\n"),
            lambda t: t.replace("\n", "\r\n"),
            lambda t: "\ufeff" + t,
        ]
        return rng.choice(edits)("\n".join(lines))
    return "\n".join(lines)


def seeds() -> list[str]:
    chosen = [
        REPO / "jobs",
        REPO / "clusters",
        REPO / "tests" / "golden",
    ]
    texts = [
        p.read_text()
        for d in chosen
        for p in sorted(d.rglob("*.y*ml"))
        if len(p.read_text()) < 20_000
    ]
    assert len(texts) > 10
    return texts


@pytest.mark.parametrize("seed", range(8))
def test_mutations_read_the_same_both_ways(seed: int) -> None:
    rng = random.Random(seed)
    texts = seeds()
    fast = 0
    for _ in range(400):
        text = rng.choice(texts)
        for _ in range(rng.randrange(1, 4)):
            text = mutate(text, rng)
        assert_same(text)
        fast += not yaml_fast.stream_needs_pyyaml(text)
    assert fast > 100  # most mutations still go the fast way, so it is what is compared


@pytest.mark.parametrize("token", TOKENS)
@pytest.mark.parametrize("template", ["a: {t}\n", "{t}: x\n", "- {t}\n", "a: [{t}, 1]\n", "{t}\n"])
def test_every_token_reads_the_same_both_ways(template: str, token: str) -> None:
    body = template.format(t=token)
    for text in (body, "---\n" + body, "x: 1\n---\n" + body + "---\ny: 2\n"):
        assert_same(text)


def test_ordinary_manifests_take_the_fast_path() -> None:
    """Each shipped rendered document, and the benchmark's mix, is read by yaml-rs: a screen
    that stopped them would be correct and as slow as PyYAML."""
    rendered = [p for d in ("base", "overlays") for p in sorted((REPO / d).rglob("*.yaml"))]
    assert rendered
    texts = [mixed_documents(90), *(p.read_text() for p in rendered)]
    assert not any(yaml_fast.stream_needs_pyyaml(text) for text in texts)
    screened = []
    for text in texts:
        pieces = list(yaml_fast.split_documents(text))
        needs_pyyaml = yaml_fast.pieces_needing_pyyaml(text, pieces)
        screened += [
            (piece, needs)
            for (_, piece), needs in zip(pieces, needs_pyyaml, strict=True)
            if yaml_fast.holds_document(piece)
        ]
    stopped = [piece for piece, needs in screened if needs]
    assert len(stopped) <= len(screened) // 20, stopped[:3]


def test_positions_come_from_the_document_in_a_long_stream() -> None:
    """Node trees are composed on demand, one document at a time, at its own line."""
    text = "".join(f"---\nkind: K{i}\nmetadata:\n  name: n{i}\n" for i in range(50))
    documents = yamlio.load_text(text, "f.yaml")
    assert all(doc.tree is None for doc in documents)  # none composed yet
    assert documents[37].position(["metadata", "name"]) == (37 * 4 + 4, 3)
    assert documents[37].tree is not None and documents[36].tree is None


def test_an_error_after_fast_documents_names_its_own_line() -> None:
    text = "a: 1\n---\nb: 2\n---\nc: [1, 2\n"
    with pytest.raises(InputError) as err:
        yamlio.load_text(text, "f.yaml")
    (problem,) = err.value.problems
    assert problem.file == "f.yaml" and problem.line == 6


@pytest.mark.parametrize(
    "text",
    [
        "- " * 100_000 + "x\n",  # compact sequences: yaml-rs overflows its stack on these
        "? " * 100_000 + "x\n",
        "a: " + "[" * 100_000 + "]" * 100_000 + "\n",
        "a: " + "{b: " * 100_000 + "x" + "}" * 100_000 + "\n",
        "ok: 1\n---\n" + "- " * 100_000 + "x\n",  # in a later document
    ],
    ids=["sequences", "keys", "flow-lists", "flow-maps", "second-document"],
)
def test_deep_nesting_is_refused_before_either_parser(text: str) -> None:
    with pytest.raises(InputError) as err:
        yamlio.load_text(text, "deep.yaml")
    assert "nests more than" in str(err.value)
