"""`trainops validate --manifests` end to end: exit codes, the JSON contract, bad input as
findings, lists, names, unknown kinds, status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.tools import REPO, write_file
from trainops.cli import main

GOOD = """apiVersion: v1
kind: ConfigMap
metadata:
  name: ok
data:
  a: b
"""
BAD = """apiVersion: v1
kind: ConfigMap
metadata:
  name: bad
data:
  a: b
datum: 1
"""


def test_clean_manifest_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_file(tmp_path, "ok.yaml", GOOD)
    assert main(["validate", "--manifests", str(path)]) == 0
    assert "1 resource(s) checked, 0 error(s)" in capsys.readouterr().out


def test_unknown_field_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_file(tmp_path, "bad.yaml", BAD)
    assert main(["validate", "--manifests", str(path), "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["summary"] == {"resources": 1, "errors": 1, "warnings": 0}
    [finding] = out["findings"]
    assert finding == {
        "rule": "schema",
        "severity": "error",
        "message": "datum: unknown field (not in the schema)",
        "file": str(path),
        "line": 7,
        "kind": "ConfigMap",
        "name": "bad",
        "namespace": None,
        "cluster": None,
    }


_BOMB = 'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True)
)


@pytest.mark.parametrize(
    "data",
    [
        "data:\n  value: 2024-01-01\n",
        "data:\n  when: 2001-12-14t21:59:43.10-05:00\n",
        "binaryData:\n  blob: !!binary |\n    aGVs\n    bG8=\n",
        "data:\n  1: x\n",
        "data: {1: x, true: v, 2.5: z}\n",  # `y` would be a bool (tests/core/test_yaml_go.py)
        "data: &d {1: 2024-01-01, true: !!binary aGk=}\n",
    ],
    ids=["date", "timestamp", "binary", "int-key", "int-and-bool-keys", "anchor"],
)
def test_ordinary_yaml_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: str
) -> None:
    """YAML the API server reads (it turns it into JSON) validates, without a traceback."""
    path = write_file(
        tmp_path, "ok.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ok\n" + data
    )
    code = main(["validate", "--manifests", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert json.loads(out)["summary"] == {"resources": 1, "errors": 0, "warnings": 0}


@pytest.mark.parametrize(
    "text,expected",
    [
        ("a: 1\na: 2\n", "duplicate key 'a'"),
        ("a:\n\tb: 1\n", "tabs"),
        (b"\x00\x01binary", "binary"),
        (b"apiVersion: v1\nkind: \xff\xfe\n", "not UTF-8"),
        ("- just\n- a list\n", "not a Kubernetes object"),
        ("apiVersion: v1\nmetadata: {name: x}\n", "no `kind`"),
        ("kind: Pod\nmetadata: {name: x}\n", "no `apiVersion`"),
        (_BOMB, "expands to more than"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: &m {labels: *m}\n", ":3:23: recursive alias"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {1: a, '1': b}\n",
            ":5:18: invalid YAML: duplicate key '1'",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels: {[a]: b}\n",
            ":5:12: invalid YAML: while constructing a mapping: found a list used as a key",
        ),
        ("apiVersion: v1\nkind: Secret\ndata:\n  k: !!binary a*b\n", ":4:6: invalid YAML: failed"),
    ],
    ids=[
        "duplicate",
        "tab",
        "binary",
        "utf8",
        "list",
        "no-kind",
        "no-apiversion",
        "alias-bomb",
        "recursive-alias",
        "int-and-string-key",
        "complex-key",
        "bad-base64",
    ],
)
def test_bad_yaml_exits_2_with_file_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str | bytes, expected: str
) -> None:
    path = write_file(tmp_path, "in.yaml", text)
    assert main(["validate", "--manifests", str(path)]) == 2
    err = capsys.readouterr().err
    assert expected in err
    assert str(path) in err
    assert "Traceback" not in err


def _scratch_repo(tmp_path: Path) -> Path:
    """A repo root with copies of the shipped jobs, clusters and settings."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("jobs", "clusters"):
        shutil.copytree(REPO / name, root / name)
    shutil.copy(REPO / "trainops.yaml", root / "trainops.yaml")
    return root


def test_bad_job_spec_is_a_spec_finding_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _scratch_repo(tmp_path)
    job = root / "jobs" / "resnet50-ddp.yaml"
    text = job.read_text()
    assert "\nreplicas: 4\n" in text
    job.write_text(text.replace("\nreplicas: 4\n", "\nreplicas: four\n", 1))
    line = job.read_text().splitlines().index("replicas: four") + 1
    assert main(["--root", str(root), "validate", "--format", "json"]) == 2
    out, err = capsys.readouterr()
    assert f"jobs/resnet50-ddp.yaml:{line}:1: `replicas` must be of type integer" in err
    document = json.loads(out)
    assert document["summary"] == {"resources": 0, "errors": 1, "warnings": 0}
    assert document["findings"] == [
        {
            "rule": "spec",
            "severity": "error",
            "message": '`replicas` must be of type integer, got "four"',
            "file": "jobs/resnet50-ddp.yaml",
            "line": line,
            "kind": None,
            "name": None,
            "namespace": None,
            "cluster": None,
        }
    ]


@pytest.mark.parametrize("fmt", ["json", "junit", "sarif", "github"])
def test_unreadable_manifest_is_a_spec_finding_in_every_machine_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    bad = write_file(tmp_path, "dup.yaml", "apiVersion: v1\nkind: ConfigMap\nkind: Secret\n")
    good = write_file(tmp_path, "ok.yaml", GOOD)
    assert main(["validate", "--manifests", str(good), str(bad), "--format", fmt]) == 2
    out, err = capsys.readouterr()
    assert f"error: {bad}:3:1: invalid YAML: duplicate key 'kind'" in err
    if fmt == "json":
        [finding] = json.loads(out)["findings"]
        assert (finding["rule"], finding["file"], finding["line"]) == ("spec", str(bad), 3)
        assert finding["message"].startswith("invalid YAML: duplicate key 'kind'")
    elif fmt == "sarif":
        [result] = json.loads(out)["runs"][0]["results"]
        assert result["ruleId"] == "spec" and result["level"] == "error"
        location = result["locations"][0]["physicalLocation"]
        assert location == {"artifactLocation": {"uri": str(bad)}, "region": {"startLine": 3}}
    elif fmt == "junit":
        assert '<failure message="invalid YAML: duplicate key' in out and 'type="spec"' in out
    else:
        assert out.startswith(f"::error file={bad},line=3,title=trainops spec::invalid YAML")


def test_usage_problem_is_a_spec_finding_without_a_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--root", str(REPO), "validate", "--cluster", "nope", "--format", "json"]) == 2
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert finding["rule"] == "spec" and finding["file"] is None and finding["line"] is None
    assert finding["message"].startswith("--cluster: unknown cluster 'nope'")


def test_text_format_reports_bad_input_on_stderr_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write_file(tmp_path, "dup.yaml", "a: 1\na: 2\n")
    assert main(["validate", "--manifests", str(bad)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and f"{bad}:2:1: invalid YAML: duplicate key 'a'" in err


V1_LIST = """apiVersion: v1
kind: List
metadata: {}
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: a}
    datum: 1
  - apiVersion: apps/v1
    kind: Deployment
    metadata: {name: d}
    spec:
      selector: {matchLabels: {app: d}}
      template:
        metadata: {labels: {app: d}}
        spec:
          containers: [{name: c, image: nginx, bogus: 1}]
"""


def test_list_items_are_validated_as_objects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_file(tmp_path, "list.yaml", V1_LIST)
    assert main(["validate", "--manifests", str(path), "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["resources"] == 2
    found = [
        (f["kind"], f["name"], f["line"], f["message"])
        for f in out["findings"]
        if f["rule"] == "schema"
    ]
    assert found == [
        ("ConfigMap", "a", 8, "datum: unknown field (not in the schema)"),
        (
            "Deployment",
            "d",
            17,
            "spec.template.spec.containers[0].bogus: unknown field (not in the schema)",
        ),
    ]
    assert all(f["file"] == str(path) for f in out["findings"])


def test_typed_list_items_take_the_list_kind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = "apiVersion: v1\nkind: ConfigMapList\nitems:\n  - metadata: {name: a}\n    datum: 1\n"
    path = write_file(tmp_path, "cms.yaml", text)
    assert main(["validate", "--manifests", str(path), "--format", "json"]) == 1
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert (finding["kind"], finding["name"], finding["line"]) == ("ConfigMap", "a", 5)


@pytest.mark.parametrize(
    "items,line,expected",
    [
        ("  - just a string\n", 4, "List item 1 is a str, not a Kubernetes object"),
        ("  - {apiVersion: v1, metadata: {name: a}}\n", 4, "object has no `kind`"),
    ],
    ids=["not-a-mapping", "no-kind"],
)
def test_bad_list_item_exits_2_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], items: str, line: int, expected: str
) -> None:
    path = write_file(tmp_path, "list.yaml", "apiVersion: v1\nkind: List\nitems:\n" + items)
    assert main(["validate", "--manifests", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:{line}: {expected}" in err


@pytest.mark.parametrize(
    "text,line",
    [
        ("apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n", 1),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: x\n", 3),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ''}\n", 3),
        ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nspec:\n  pytorchReplicaSpecs: {}\n", 1),
    ],
    ids=["core-no-metadata", "core-no-name", "core-empty-name", "crd-no-metadata"],
)
def test_object_without_a_name_is_a_schema_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int
) -> None:
    path = write_file(tmp_path, "x.yaml", text)
    assert main(["validate", "--manifests", str(path), "--format", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    named = [f for f in findings if "metadata" in f["message"] and f["rule"] == "schema"]
    assert [(f["line"], f["message"]) for f in named] == [
        (
            line,
            "metadata.name: required (or metadata.generateName): the API server rejects an"
            " object without a name",
        )
    ], "exactly one finding about the missing name (no duplicate `metadata` required)"


def test_generate_name_is_a_name(tmp_path: Path) -> None:
    text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {generateName: cm-}\n"
    assert main(["validate", "--manifests", str(write_file(tmp_path, "g.yaml", text))]) == 0


def test_unknown_kind_is_error_unless_downgraded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
    path = write_file(tmp_path, "x.yaml", widget)
    assert main(["validate", "--manifests", str(path)]) == 1
    assert "no schema for Widget" in capsys.readouterr().out
    assert main(["validate", "--manifests", str(path), "--unknown-kinds", "warning"]) == 0


def test_committed_status_is_a_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_file(tmp_path, "s.yaml", GOOD + "status:\n  phase: Active\n")
    assert main(["validate", "--manifests", str(path), "--format", "json"]) == 1
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert finding["line"] == 7 and "status" in finding["message"]


EMPTY_GPU_LIMIT = """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
    - name: c
      image: registry.example/train:1.0
      resources:
        requests:
          nvidia.com/gpu: 8
        limits:
          nvidia.com/gpu:
"""


def test_empty_value_is_one_readable_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`nvidia.com/gpu:` left empty (seen in a public envsubst template): the schema says the
    key has no value, once, in words; not the validator's `oneOf` wording, and not a second
    finding from the request/limit rule about a limit of `None`."""
    path = write_file(tmp_path, "p.yaml", EMPTY_GPU_LIMIT)
    assert main(["validate", "--manifests", str(path), "--format", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    about = [f for f in findings if "nvidia.com/gpu" in f["message"]]
    assert [(f["rule"], f["line"]) for f in about] == [("schema", 12)], about
    message = about[0]["message"]
    assert "has no value" in message and "oneOf" not in message and "None" not in message
