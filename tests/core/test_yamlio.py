"""The strict loader builds what PyYAML's safe loader builds, only stricter and as JSON.

Its fast paths (memoised tag resolution, direct construction of alias-free trees) must not
change a single value: each case in CASES is loaded by both and compared, types included.
Where Kubernetes reads YAML differently from PyYAML (sigs.k8s.io/yaml turns it into JSON),
the loader follows Kubernetes, and KUBERNETES_CASES spells out the data: every mapping key is
a string (the scalar's text, so `1` and `"1"` are the same key and `1` and `true` are not),
timestamps stay text, `!!binary` is its base64 text, `!!set` a mapping to nulls, `!!omap` and
`!!pairs` lists of one-entry mappings. Each of those is loaded on both paths (with and
without an anchor in the text).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.tools import require_upstream
from trainops.core import yamlio
from trainops.core.errors import InputError

CASES = {
    "scalars": """
plain: text
quoted_bool: "true"
bool: true
yes_is_a_string_in_yaml_1_2_but_bool_in_pyyaml: yes
int: 42
octal: 0o17
hex: 0x1F
float: 1.5e3
inf: .inf
null_word: null
tilde: ~
empty:
explicit_str: !!str 123
explicit_int: !!int "7"
""",
    "nested": """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: j, labels: {a: "1", b: 2}}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 4
      template:
        spec:
          containers:
            - name: pytorch
              args: [--lr, "3e-4", --steps, 10, [nested, list], {k: v}]
              env: []
""",
    "anchors_and_merge": """
base: &base {cpu: 1, memory: 1Gi, list: &l [1, 2]}
derived:
  <<: *base
  memory: 2Gi
again: *l
same: *base
""",
    "inline_merge_without_anchor": """
m:
  <<: {a: 1, b: 2}
  b: 3
""",
}

KUBERNETES_CASES: dict[str, tuple[str, Any]] = {
    "multi_key_types": (
        '1: int key\ntrue: bool key\n2.5: float key\n~: null key\n0x1F: hex key\n"x": str key\n',
        {
            "1": "int key",
            "true": "bool key",
            "2.5": "float key",
            "~": "null key",
            "0x1F": "hex key",
            "x": "str key",
        },
    ),
    "int_and_bool_keys_are_distinct": (
        "labels: {1: x, true: y}\n",
        {"labels": {"1": "x", "true": "y"}},
    ),
    "timestamps_stay_text": (
        "date: 2024-01-01\nstamp: 2001-12-14t21:59:43.10-05:00\n2024-01-01: key\n",
        {"date": "2024-01-01", "stamp": "2001-12-14t21:59:43.10-05:00", "2024-01-01": "key"},
    ),
    "binary_is_base64_text": (
        "one: !!binary aGVsbG8=\nfolded: !!binary |\n  aGVs\n  bG8=\n",
        {"one": "aGVsbG8=", "folded": "aGVsbG8="},
    ),
    "set_omap_pairs": (
        "s: !!set {b, a}\no: !!omap [{z: 1}, {2: y}]\np: !!pairs [{k: v}, {k: w}]\n",
        {"s": {"b": None, "a": None}, "o": [{"z": 1}, {"2": "y"}], "p": [{"k": "v"}, {"k": "w"}]},
    ),
    "merged_keys_are_strings": (
        "base: &b {1: one, d: 2024-01-01}\nm:\n  <<: *b\n  2: two\n",
        {"base": {"1": "one", "d": "2024-01-01"}, "m": {"1": "one", "d": "2024-01-01", "2": "two"}},
    ),
}


def _typed(value: Any) -> Any:
    """The value with every scalar's type spelled out, so 1 == True does not hide a change."""
    if isinstance(value, dict):
        return {json.dumps(_typed(k), default=str): _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return [type(value).__name__, repr(value)]


@pytest.mark.parametrize("text", CASES.values(), ids=list(CASES))
def test_same_data_as_pyyaml_safe_loader(text: str) -> None:
    [doc] = yamlio.load_text(text, "case.yaml")
    assert _typed(doc.data) == _typed(yaml.safe_load(text))


@pytest.mark.parametrize("anchor", ["", "_: &unused 1\n"], ids=["tree", "with-anchor"])
@pytest.mark.parametrize("case", KUBERNETES_CASES.values(), ids=list(KUBERNETES_CASES))
def test_data_is_what_kubernetes_reads(case: tuple[str, Any], anchor: str) -> None:
    text, expected = case
    [doc] = yamlio.load_text(anchor + text, "case.yaml")
    data = {k: v for k, v in doc.data.items() if k != "_"}
    assert _typed(data) == _typed(expected)
    assert json.loads(json.dumps(doc.data)) == doc.data, "not plain JSON data"


@pytest.mark.parametrize(
    "text,line,message",
    [
        ('a: 1\n"a": 2\n', 2, "duplicate key 'a' (first at line 1)"),
        ("m:\n  1: x\n  '1': y\n", 3, "duplicate key '1' (first at line 2)"),
        ("m:\n  [a, b]: x\n", 2, "found a list used as a key"),
        ("m:\n  ? {a: 1}\n  : x\n", 2, "found a mapping used as a key"),
        ("x: !!binary not*base64\n", 1, "failed to decode base64 data"),
        ("metadata: &m {labels: *m}\n", 1, "recursive alias: `*m` refers to itself"),
        (
            "a: 1\nmetadata: &top\n  name: d\n  x:\n    - 1\n    - *top\n",
            6,
            "recursive alias: `*top` refers to itself (it is inside the node anchored `&top` at"
            " line 2)",
        ),
        ("l: &l [1, [2, *l]]\n", 1, "recursive alias: `*l`"),
        ("a: 1\nb: !!int x\n", 2, "!!int cannot take 'x'"),
        ("---\na: 1\n---\nb: [!!bool maybe]\n", 4, "!!bool cannot take 'maybe'"),
    ],
    ids=[
        "dup-quoted",
        "dup-int-str",
        "list-key",
        "map-key",
        "bad-base64",
        "rec",
        "rec-deep",
        "rec-seq",
        "int-tag",
        "bool-tag",
    ],
)
def test_not_kubernetes_yaml_names_file_and_line(text: str, line: int, message: str) -> None:
    with pytest.raises(InputError) as err:
        yamlio.load_text(text, "bad.yaml")
    [problem] = err.value.problems
    assert problem.file == "bad.yaml" and problem.line == line
    assert message in problem.message


def test_alias_bomb_is_still_refused_after_a_shared_node() -> None:
    """Shared (non-recursive) nodes are counted each time they are used, not taken for cycles."""
    text = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    with pytest.raises(InputError, match="expands to more than"):
        yamlio.load_text(text, "bomb.yaml")
    [doc] = yamlio.load_text("a: &a [1]\nb: [*a, *a, {c: *a}]\n", "shared.yaml")
    assert doc.data["b"] == [[1], [1], {"c": [1]}]


def test_aliases_chained_deep_are_refused_not_a_recursion_error() -> None:
    """Issue 29.7: 1,400 anchors, each an alias of the one before, nest the data 1,400 levels
    deep in a text two levels deep (well under the node budget); the schema validator walking
    it raised RecursionError. The depth through aliases is bounded like the text's."""
    text = "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 1400))
    with pytest.raises(InputError, match="levels of nesting through aliases"):
        yamlio.load_text(text, "chain.yaml")
    [doc] = yamlio.load_text(
        "a0: &a0 [1]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}]\n" for i in range(1, 150)), "ok.yaml"
    )
    assert doc.data["a3"] == [[[[1]]]]


def test_aliased_node_is_one_object_as_in_pyyaml() -> None:
    """With anchors in the text, PyYAML's own bookkeeping still makes an alias the same object."""
    [doc] = yamlio.load_text(CASES["anchors_and_merge"], "case.yaml")
    assert doc.data["same"] is doc.data["base"]


def test_every_upstream_example_loads_as_pyyaml_loads_it() -> None:
    examples = sorted((require_upstream() / "examples").rglob("*.yaml"))
    assert examples
    for path in examples:
        text = path.read_text()
        ours = [d.data for d in yamlio.load_text(text, str(path))]
        theirs = [d for d in yaml.safe_load_all(text) if d is not None]
        assert _typed(ours) == _typed(theirs), path


@pytest.mark.parametrize("anchor", ["", "x: &unused 1\n"], ids=["tree", "with-anchor"])
def test_nested_duplicate_key_names_its_line_on_both_paths(anchor: str) -> None:
    text = anchor + "spec:\n  template:\n    a: 1\n    b: 2\n    a: 3\n"
    with pytest.raises(InputError) as err:
        yamlio.load_text(text, "dup.yaml")
    [problem] = err.value.problems
    assert problem.file == "dup.yaml"
    assert problem.line == text.count("\n") and "duplicate key 'a'" in problem.message
    assert "first at line" in problem.message


def test_positions_survive_the_fast_path() -> None:
    [doc] = yamlio.load_text(CASES["nested"], "case.yaml")
    path = ["spec", "pytorchReplicaSpecs", "Worker", "template", "spec", "containers", 0, "args"]
    assert doc.position(path) == (13, 15)
