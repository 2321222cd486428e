"""The strict loader builds exactly what PyYAML's safe loader builds, only stricter.

Its fast paths (memoised tag resolution, direct construction of alias-free trees) must not
change a single value: each case is loaded by both and compared, types included.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from generators import yamlio
from generators.errors import InputError
from tests.tools import require_upstream

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
date: 2026-11-23
binary: !!binary aGVsbG8=
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
    "multi_key_types": """
1: int key
"1": string key
2.5: float key
""",
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
