"""The validate command end to end: exit codes, output formats, bad input, unknown kinds, status."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from tests.tools import REPO, require_tool, require_upstream
from trainops.cli import main
from trainops.core.findings import Finding, Severity
from trainops.report import formats as report
from trainops.rules import RULES
from trainops.validate.crd import convert_schema

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


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_clean_manifest_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "ok.yaml", GOOD)
    assert main(["validate", "--manifests", str(path)]) == 0
    assert "1 resource(s) checked, 0 error(s)" in capsys.readouterr().out


def test_unknown_field_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "bad.yaml", BAD)
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
        "data: {1: x, true: y, 2.5: z}\n",
        "data: &d {1: 2024-01-01, true: !!binary aGk=}\n",
    ],
    ids=["date", "timestamp", "binary", "int-key", "int-and-bool-keys", "anchor"],
)
def test_ordinary_yaml_validates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: str
) -> None:
    """YAML the API server reads (it turns it into JSON) validates, without a traceback."""
    path = _write(
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
    path = _write(tmp_path, "in.yaml", text)
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
    bad = _write(tmp_path, "dup.yaml", "apiVersion: v1\nkind: ConfigMap\nkind: Secret\n")
    good = _write(tmp_path, "ok.yaml", GOOD)
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
    bad = _write(tmp_path, "dup.yaml", "a: 1\na: 2\n")
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
    path = _write(tmp_path, "list.yaml", V1_LIST)
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
    path = _write(tmp_path, "cms.yaml", text)
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
    path = _write(tmp_path, "list.yaml", "apiVersion: v1\nkind: List\nitems:\n" + items)
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
    path = _write(tmp_path, "x.yaml", text)
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
    assert main(["validate", "--manifests", str(_write(tmp_path, "g.yaml", text))]) == 0


def test_unknown_kind_is_error_unless_downgraded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
    path = _write(tmp_path, "x.yaml", widget)
    assert main(["validate", "--manifests", str(path)]) == 1
    assert "no schema for Widget" in capsys.readouterr().out
    assert main(["validate", "--manifests", str(path), "--unknown-kinds", "warning"]) == 0


def test_committed_status_is_a_finding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, "s.yaml", GOOD + "status:\n  phase: Active\n")
    assert main(["validate", "--manifests", str(path), "--format", "json"]) == 1
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert finding["line"] == 7 and "status" in finding["message"]


def test_crds_flag_uses_real_crd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    upstream = require_upstream()
    example = upstream / "examples/training-operator/examples__pytorch__simple.yaml"
    job = _write(tmp_path, "j.yaml", example.read_text().rstrip("\n") + "\n  bogus: 1\n")
    crds = str(upstream / "crds/kubeflow.org")
    assert main(["validate", "--manifests", str(job), "--crds", crds]) == 1
    assert "spec.bogus" in capsys.readouterr().out


def _crd(versions: str) -> str:
    return (
        "apiVersion: apiextensions.k8s.io/v1\n"
        "kind: CustomResourceDefinition\n"
        "metadata: {name: widgets.example.com}\n"
        "spec:\n"
        "  group: example.com\n"
        "  names: {kind: Widget, plural: widgets}\n"
        "  scope: Namespaced\n" + versions
    )


def _version(schema: str) -> str:
    """One served version whose openAPIV3Schema is `schema` (indented as the root mapping)."""
    return (
        "  versions:\n"
        "    - name: v1\n"
        "      served: true\n"
        "      storage: true\n"
        "      schema:\n"
        "        openAPIV3Schema:\n"
        + "".join(f"          {line}\n" for line in schema.splitlines())
    )


WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 1}\n"


@pytest.mark.parametrize(
    "text,line,expected",
    [
        (_crd("  versions: [v1]\n"), 8, "`spec.versions[0]` must be a mapping"),
        (_crd("  versions: {v1: {}}\n"), 8, "`spec.versions` must be a list"),
        (
            _crd(_version("type: object\nproperties:\n  spec:\n    type: strin")),
            17,
            "openAPIV3Schema.properties.spec.type`: unknown type 'strin'",
        ),
        (
            _crd(_version("type: object\nproperties:\n  spec: {type: string, pattern: '(['}")),
            16,
            "openAPIV3Schema.properties.spec.pattern` is not a valid schema",
        ),
        (
            _crd(_version("type: object\nproperties: [spec, status]")),
            15,
            "openAPIV3Schema.properties` must be a mapping of property schemas",
        ),
        (
            _crd(_version("type: object\nproperties:\n  spec: object")),
            16,
            "openAPIV3Schema.properties.spec` must be a schema (a mapping), got 'object'",
        ),
        (
            _crd(_version("type: object\nrequired: spec")),
            15,
            "openAPIV3Schema.required` is not a valid schema",
        ),
        (
            _crd(_version("type: object")).replace(
                "{kind: Widget, plural: widgets}", "{plural: w}"
            ),
            6,
            "`spec.names.kind` must be the kind",
        ),
    ],
    ids=[
        "version-string",
        "versions-mapping",
        "unknown-type",
        "bad-regex",
        "properties-list",
        "property-not-schema",
        "required-string",
        "no-kind",
    ],
)
def test_malformed_crd_exits_2_naming_crd_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, line: int, expected: str
) -> None:
    crds = tmp_path / "crds"
    crds.mkdir()
    crd = _write(crds, "widgets.yaml", text)
    widget = _write(tmp_path, "w.yaml", WIDGET)
    assert main(["validate", "--manifests", str(widget), "--crds", str(crds)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert f"{crd}:{line}:" in err, err
    assert "CustomResourceDefinition widgets.example.com" in err and expected in err, err


def test_crd_with_open_root_accepts_any_fields_but_checks_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`x-kubernetes-preserve-unknown-fields: true` at the root: open, yet apiVersion, kind and
    metadata are what the API server checks on every object."""
    crds = tmp_path / "crds"
    crds.mkdir()
    open_root = _version("type: object\nx-kubernetes-preserve-unknown-fields: true")
    _write(crds, "widgets.yaml", _crd(open_root))
    widget = _write(tmp_path, "w.yaml", WIDGET + "anything: {goes: [1, 2]}\n")
    args = ["validate", "--manifests", str(widget), "--crds", str(crds), "--format", "json"]
    assert main(args) == 0, capsys.readouterr()
    capsys.readouterr()
    _write(tmp_path, "w.yaml", WIDGET.replace("{name: w}", "{name: w, labelz: {a: b}}"))
    assert main(args) == 1
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert finding["message"] == "metadata.labelz: unknown field (not in the schema)"
    assert finding["line"] == 3


def test_crd_root_without_properties_is_closed_but_allows_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crds = tmp_path / "crds"
    crds.mkdir()
    _write(crds, "widgets.yaml", _crd(_version("type: object")))
    bare = _write(
        tmp_path, "bare.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
    )
    assert main(["validate", "--manifests", str(bare), "--crds", str(crds)]) == 0
    capsys.readouterr()
    widget = _write(tmp_path, "w.yaml", WIDGET)
    args = ["validate", "--manifests", str(widget), "--crds", str(crds), "--format", "json"]
    assert main(args) == 1
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert finding["message"] == "spec: unknown field (not in the schema)"


def test_converter_honours_preserve_unknown_and_int_or_string() -> None:
    schema = convert_schema(
        {
            "type": "object",
            "properties": {
                "open": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "port": {"x-kubernetes-int-or-string": True},
                "maybe": {"type": "string", "nullable": True},
            },
        }
    )
    assert schema["additionalProperties"] is False
    assert "additionalProperties" not in schema["properties"]["open"]
    assert schema["properties"]["port"]["anyOf"] == [{"type": "integer"}, {"type": "string"}]
    assert schema["properties"]["maybe"]["type"] == ["string", "null"]


def test_in_repo_mode_builds_each_overlay(capsys: pytest.CaptureFixture[str]) -> None:
    """Rendered repo, real kustomize, checked against the converted upstream CRDs (`--crds`)
    for every kind they cover; our own schemas alone: test_gitops_kinds.py."""
    require_tool("kubectl")
    crds = str(require_upstream() / "crds")
    assert main(["--root", str(REPO), "validate", "--crds", crds, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["resources"] > 0 and out["summary"]["errors"] == 0


def test_unknown_cluster_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--root", str(REPO), "validate", "--cluster", "nope"]) == 2
    assert "unknown cluster 'nope'" in capsys.readouterr().err


FINDINGS = [
    Finding("schema", Severity.ERROR, "spec.x: unknown field", "a.yaml", 3, "Pod", "p", "ns", "c1"),
    Finding("gpu-limit", Severity.WARNING, "50%, done", "b.yaml", None, "Job", "j"),
]


def test_report_formats() -> None:
    text = report.render("text", FINDINGS, 2)
    assert "a.yaml:3: error" in text and "ns/Pod/p @c1" in text and "FAILED" in text
    assert "\033[" not in text and "\033[31m" in report.render("text", FINDINGS, 2, color=True)
    github = report.render("github", FINDINGS, 2).splitlines()
    assert github[0] == (
        "::error file=a.yaml,line=3,title=trainops schema::ns/Pod/p @c1: spec.x: unknown field"
    )
    assert github[1] == "::warning file=b.yaml,title=trainops gpu-limit::Job/j: 50%25, done"
    sarif = json.loads(report.render("sarif", FINDINGS, 2))
    run = sarif["runs"][0]
    assert sarif["version"] == "2.1.0"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["gpu-limit", "schema"]
    assert run["results"][0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 3}
    junit = report.render("junit", FINDINGS, 2)
    assert 'failures="1"' in junit and "<failure" in junit and "<system-out>warning" in junit
    assert json.loads(report.render("json", [], 5))["summary"] == {
        "resources": 5,
        "errors": 0,
        "warnings": 0,
    }


# The parts of the SARIF 2.1.0 schema (sarif-schema-2.1.0.json) our log uses, as the OASIS
# standard defines them: sarifLog (3.13), run (3.14), toolComponent (3.19), reportingDescriptor
# (3.49: `id` required), multiformatMessageString (3.12: `text` required), reportingConfiguration
# (3.50: level none|note|warning|error), result (3.27), physicalLocation (3.29), region (3.30:
# startLine >= 1).
_MESSAGE = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string", "minLength": 1}, "markdown": {"type": "string"}},
    "additionalProperties": False,
}
_LEVEL = {"enum": ["none", "note", "warning", "error"]}
SARIF_SUBSET = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["tool"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "version": {"type": "string"},
                                    "informationUri": {"type": "string", "format": "uri"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id", "shortDescription"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "name": {"type": "string"},
                                                "shortDescription": _MESSAGE,
                                                "fullDescription": _MESSAGE,
                                                "help": _MESSAGE,
                                                "helpUri": {"type": "string", "format": "uri"},
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "properties": {"level": _LEVEL},
                                                    "additionalProperties": False,
                                                },
                                            },
                                            "additionalProperties": False,
                                        },
                                    },
                                },
                                "additionalProperties": False,
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": -1},
                                "level": _LEVEL,
                                "message": _MESSAGE,
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri"],
                                                        "properties": {
                                                            "uri": {
                                                                "type": "string",
                                                                "format": "uri-reference",
                                                            }
                                                        },
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "properties": {
                                                            "startLine": {
                                                                "type": "integer",
                                                                "minimum": 1,
                                                            }
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                    "properties": {"type": "object"},
                },
            },
        },
    },
}


def test_sarif_rules_carry_descriptions_from_rule_metadata() -> None:
    policy = RULES[0]
    findings = [
        Finding(rule, Severity.ERROR, "m", "a.yaml", 2) for rule in ("schema", "build", "spec")
    ] + [
        Finding("drift", Severity.ERROR, "stale", "base/x/kustomization.yaml"),
        Finding(policy.slug, policy.severity, "m", "b.yaml", 3, "PyTorchJob", "j"),
    ]
    sarif = json.loads(report.render("sarif", findings, 2))
    jsonschema.validate(sarif, SARIF_SUBSET, format_checker=jsonschema.FormatChecker())
    run = sarif["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"schema", "build", "spec", "drift", policy.slug}
    for rule_id in ("schema", "build", "spec", "drift"):
        assert rules[rule_id]["shortDescription"]["text"] == report.BUILTIN_RULES[rule_id][0]
        assert rules[rule_id]["help"]["text"] == report.BUILTIN_RULES[rule_id][1]
    described = rules[policy.slug]
    assert described["shortDescription"] == {"text": policy.summary}
    assert described["fullDescription"] == {"text": policy.why}
    assert (
        policy.fix in described["help"]["text"]
        and policy.example.strip() in (described["help"]["markdown"])
    )
    assert described["defaultConfiguration"] == {"level": policy.severity.value}
    # The help anchor is a real section of the generated rules page.
    anchor = described["helpUri"].rpartition("#")[2]
    assert f"## {anchor}\n" in (REPO / "docs/rules.md").read_text()
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
