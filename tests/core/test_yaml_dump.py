"""The dumper's fast paths (nodes built directly for dicts, lists and strings; the resolver's
answers memoised) write byte for byte what PyYAML's SafeRepresenter writes with the same
settings: every generated file is committed, and a changed byte is a diff in every PR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import processes
from tests.tools import REPO, require_kustomize
from trainops.core import yaml_dump


class _Reference(yaml_dump._BaseDumper):  # type: ignore[misc, valid-type]
    """The dumper as it was: SafeRepresenter's functions, aliases ignored, `|` for lines."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_Reference.add_representer(str, yaml_dump._represent_str)
# The output's readers are Go's (kustomize, kubectl): strings they read as numbers are quoted.
_Reference.add_implicit_resolver(
    "tag:yaml.org,2002:float", yaml_dump.GO_FLOAT, list("-+.0123456789")
)
_Reference.add_implicit_resolver("tag:yaml.org,2002:int", yaml_dump.GO_OCTAL, ["0"])
_Reference.add_implicit_resolver("tag:yaml.org,2002:bool", yaml_dump.GO_BOOL, list("yYnN"))


def reference(data: Any) -> str:
    text: str = yaml.dump(
        data,
        Dumper=_Reference,
        sort_keys=True,
        default_flow_style=False,
        allow_unicode=True,
        width=10_000,
    )
    return text


# Strings whose style the emitter must choose from what they would read as, keys included.
AWKWARD = [
    "",
    " ",
    "true",
    "True",
    "yes",
    "no",
    "on",
    "off",
    "~",
    "null",
    "Null",
    "1",
    "-1",
    "0o17",
    "0x1F",
    "1e3",
    "1.5",
    ".inf",
    "-.inf",
    ".nan",
    "1_000",
    "1:30",
    "2024-01-02",
    "=",
    "<<",
    "- x",
    "? x",
    ": x",
    "#x",
    "x #y",
    "x: y",
    "[a]",
    "{a: 1}",
    "*a",
    "&a",
    "!t",
    "%x",
    "@x",
    "`x",
    "'q'",
    '"q"',
    "a'b",
    'a"b',
    "tab\there",
    "trailing ",
    " leading",
    "é",
    "日本語",
    "\u2028",
    "x" * 200,
    "line\n",
    "two\nlines",
    "two\nlines\n",
    "trailing \nspace",
    "\n\nlead",
    "  indented\nblock",
    "keep\n\n",
    "\ttab\nblock",
    "nul\x00",
    "bell\x07",
]
CASES: dict[str, Any] = {
    "awkward values": {f"k{i}": s for i, s in enumerate(AWKWARD)},
    "awkward keys": {s: i for i, s in enumerate(AWKWARD) if "\x00" not in s},
    "awkward list": AWKWARD,
    "numbers": [0, -7, 2**70, 1.5, 1e17, 1e-7, float("inf"), float("-inf"), float("nan"), -0.0],
    "other scalars": {"t": True, "f": False, "n": None, "b": b"bytes"},
    "empties": {"d": {}, "l": [], "s": "", "nested": [{}, [], [[]], {"x": {}}]},
    "deep": {"a": [{"b": [{"c": ["d", {"e": "f\ng"}]}]}]},
    "mixed keys do not sort": {"b": 1, 1: "a", "a": 2},
    "tuple and set": {"t": (1, "x"), "s": {"a"}},
    "top-level scalar": "just text",
    "top-level multi-line": "a\nb\n",
}


@pytest.mark.parametrize("data", list(CASES.values()), ids=list(CASES))
def test_fast_dumper_writes_what_safe_representer_writes(data: Any) -> None:
    assert yaml_dump.dump(data) == reference(data)


def test_every_committed_generated_document_dumps_the_same() -> None:
    documents = [
        doc
        for folder in ("base", "overlays", "gitops")
        for path in sorted((REPO / folder).rglob("*.yaml"))
        for doc in yaml.safe_load_all(path.read_text())
        if doc is not None
    ]
    assert len(documents) > 100
    for doc in documents:
        assert yaml_dump.dump(doc) == reference(doc)


def test_memoised_resolution_survives_being_emptied(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml_dump, "_MAX_RESOLVED", 3)
    data = {f"k{i}": value for i, value in enumerate(["true", "1", "x", "null", "y", "1.5"] * 3)}
    assert yaml_dump.dump(data) == reference(data)
    assert len(yaml_dump._RESOLVED) <= 4


def test_a_generated_file_reads_back_as_its_data(tmp_path: Path) -> None:
    data = {"s": "1.5", "n": 1.5, "yes": "yes", "lines": "a\nb\n"}
    assert yaml.safe_load(yaml_dump.dump(data)) == data


# Plain, PyYAML reads each as a string; kustomize (YAML 1.2) and kubectl (go-yaml v2) as a number.
GO_NUMBERS = ["1e-4", "1E5", "1.0e5", "-.5", "+.5", "5e8", "0o17"]


def test_strings_that_go_reads_as_numbers_stay_strings_through_kustomize(tmp_path: Path) -> None:
    """An env value `1e-4` (a job's `env: {LR: 1e-4}`) written plain came out of kustomize as
    `0.0001`, a number the API server refuses in `env[].value`: the dumper quotes it."""
    env = [{"name": f"V{i}", "value": text} for i, text in enumerate(GO_NUMBERS)]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "env": env}]},
    }
    (tmp_path / "pod.yaml").write_text(yaml_dump.dump(pod))
    (tmp_path / "kustomization.yaml").write_text("resources: [pod.yaml]\n")
    built = processes.run([*require_kustomize(), str(tmp_path)], timeout=120, text=True)
    assert built.returncode == 0, built.stderr
    out = yaml.safe_load(built.stdout)["spec"]["containers"][0]["env"]
    assert [e["value"] for e in out] == GO_NUMBERS
