"""Manifests read as kubectl and the API server read them (trainops/core/yaml_go.py, a port of
go-yaml v2's `resolve` as forked in sigs.k8s.io/yaml: goyaml.v2/resolve.go).

The vectors are go-yaml's own: `unmarshalTests` in sigs.k8s.io/yaml goyaml.v2/decode_test.go,
the cases decoded into `map[string]interface{}` (how sigs.k8s.io/yaml's YAMLToJSON decodes a
manifest) with the value the test expects, plus the explicit-tag cases. Those marked "from
resolve.go" follow its code where decode_test.go has no case (ParseFloat's overflow, numbers
past 64 bits). Not vectors: `.NaN` (Go's test skips it: NaN != NaN) and timestamps, which
JSON turns into text (yamlio keeps the scalar's text; the type is what matters here)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.tools import REPO, copy_inputs, line_of, trainops
from trainops.core import yaml_go, yamlio
from trainops.core.yaml_dump import dump

INF = math.inf
DECODE_TEST = [
    ("v: hi", "hi"),
    ("v: true", True),
    ("v: 10", 10),
    ("v: 0b10", 2),
    ("v: 0xA", 10),
    ("v: 4294967296", 4294967296),
    ("v: 0.1", 0.1),
    ("v: .1", 0.1),
    ("v: .Inf", INF),
    ("v: -.Inf", -INF),
    ("v: -10", -10),
    ("v: -.1", -0.1),
    ("canonical: 6.8523e+5", 6.8523e5),
    ("expo: 685.230_15e+03", 685.23015e03),
    ("fixed: 685_230.15", 685230.15),
    ("neginf: -.inf", -INF),
    ("canonical: y", True),
    ("answer: NO", False),
    ("logical: True", True),
    ("option: on", True),
    ("canonical: 685230", 685230),
    ("decimal: +685_230", 685230),
    ("octal: 02472256", 685230),
    ("hexa: 0x_0A_74_AE", 685230),
    ("bin: 0b1010_0111_0100_1010_1110", 685230),
    ("bin: -0b101010", -42),
    ("empty:", None),
    ("canonical: ~", None),
    ("english: null", None),
    ("seq: [A,1,C]", ["A", 1, "C"]),
    ("seq:\n - A\n - 1\n - C", ["A", 1, "C"]),
    ("a: -b_c", "-b_c"),
    ("a: +b_c", "+b_c"),
    ("a: 50cent_of_dollar", "50cent_of_dollar"),
    ("a: 1:1", "1:1"),  # base 60 unsupported: text (PyYAML: the int 61)
    ("a: 2015-01-01", "2015-01-01"),
    ("a: 123456e1", 123456e1),
    ("a: 123456E1", 123456e1),
    ("v: !!float '1.1'", 1.1),
    ("v: !!float 0", 0.0),
    ("v: !!float -1", -1.0),
    ("v: !!null ''", None),
    ("v: ! test", "test"),
]
FROM_RESOLVE_GO = [
    ("a: 1e400", "1e400"),  # ParseFloat's ErrRange: not a float, so text
    ("a: 99999999999999999999", 1e20),  # past uint64: yamlStyleFloat before big.Int
    ("a: 0x1FFFFFFFFFFFFFFFF", 0x1FFFFFFFFFFFFFFFF),  # past uint64, no float: big.Int
    ("a: 08", 8.0),  # not octal: yamlStyleFloat takes it
    ("a: 0o17", 15),  # ParseInt's base 0
    ("a: n", False),
    ("a: .5e3", 500.0),
    ("a: yES", "yES"),  # not in the table
    ("a: '1e-4'", "1e-4"),  # quoted: always text
    ("a: .\u0663", ".\u0663"),  # ParseFloat takes ASCII digits only (Python's float any)
]


@pytest.mark.parametrize(("text", "expected"), DECODE_TEST + FROM_RESOLVE_GO)
def test_go_yaml_reads_it_so(text: str, expected: Any) -> None:
    (doc,) = yamlio.load_text(text + "\n", "m.yaml", as_kubernetes=True)
    (value,) = doc.data.values()
    assert value == expected and type(value) is type(expected), (value, expected)


def test_only_ascii_digits_make_numbers() -> None:
    """Go's ParseFloat and ParseInt take ASCII digits; Python's float and int take any
    script's (the loader's fast path may never ask: asked directly)."""
    for text in (".\u0663", "\u0661e3", "-.\u0665"):
        assert yaml_go.tag(text) == yaml_go.STR, text


@pytest.mark.parametrize("text", ["v: !!int 1.5", "v: !!bool maybe", "v: !!float x"])
def test_a_value_its_tag_cannot_take_is_refused_at_its_place(text: str) -> None:
    with pytest.raises(yamlio.InputError, match=r"m\.yaml:1:4: .*cannot take"):
        yamlio.load_text(text + "\n", "m.yaml", as_kubernetes=True)


def test_specs_keep_yaml_1_1s_reading() -> None:
    """A job spec's `LR: 1e-4` reaches the pod as that text (tests/jobspec/test_user_mistakes)."""
    (doc,) = yamlio.load_text("LR: 1e-4\nFLAG: y\nT: 1:30\n", "jobs/x.yaml")
    assert doc.data == {"LR": "1e-4", "FLAG": "y", "T": 90}


@pytest.mark.parametrize(
    "text", ["y", "N", "1e-4", "1E5", "-.5", ".5e3", "0o17", "08", "1:30", "yes", "2015-01-01"]
)
def test_what_trainops_writes_kubectl_reads_back_as_written(text: str) -> None:
    """Every string the renderer writes is read by go-yaml as that string (yaml_dump quotes
    what would not be)."""
    written = dump({"value": text})
    (doc,) = yamlio.load_text(written, "out.yaml", as_kubernetes=True)
    assert doc.data == {"value": text}, written


POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: train
  namespace: ml
  labels:
    app: train
    canary: y
spec:
  containers:
    - name: train
      image: example/train:1.0
      env:
        - name: LR
          value: 1e-4
        - name: WARMUP
          value: "1e-4"
"""


def test_validate_manifests_reports_what_the_api_server_refuses(tmp_path: Path) -> None:
    """`value: 1e-4` and a label `canary: y`: kubectl sends 0.0001 and true, and the API
    server refuses both (an env value and a label value are strings)."""
    root = copy_inputs(REPO, tmp_path / "repo")
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(POD)
    result = trainops(root, "validate", "--manifests", str(manifest), "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    findings = json.loads(result.stdout)["findings"]
    said = {f["line"]: f["message"] for f in findings if f["rule"] == "schema"}
    assert said.get(line_of(manifest, "value: 1e-4")) == (
        "spec.containers[0].env[0].value: the unquoted `1e-4` is a number to kubectl and the"
        ' API server, which take only text here: quote it ("1e-4")'
    ), findings
    assert "the unquoted `y` is a bool" in said.get(line_of(manifest, "canary: y"), ""), findings
    assert line_of(manifest, 'value: "1e-4"') not in said, findings
