"""Real CRDs (`--crds DIR`): converted to strict JSON Schema as the API server reads them;
a malformed CRD is bad input naming its file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tools import require_upstream, write_file
from trainops.cli import main
from trainops.validate.crd import convert_schema


def test_crds_flag_uses_real_crd(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    upstream = require_upstream()
    example = upstream / "examples/training-operator/examples__pytorch__simple.yaml"
    job = write_file(tmp_path, "j.yaml", example.read_text().rstrip("\n") + "\n  bogus: 1\n")
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
    crd = write_file(crds, "widgets.yaml", text)
    widget = write_file(tmp_path, "w.yaml", WIDGET)
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
    write_file(crds, "widgets.yaml", _crd(open_root))
    widget = write_file(tmp_path, "w.yaml", WIDGET + "anything: {goes: [1, 2]}\n")
    args = ["validate", "--manifests", str(widget), "--crds", str(crds), "--format", "json"]
    assert main(args) == 0, capsys.readouterr()
    capsys.readouterr()
    write_file(tmp_path, "w.yaml", WIDGET.replace("{name: w}", "{name: w, labelz: {a: b}}"))
    assert main(args) == 1
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert finding["message"] == "metadata.labelz: unknown field (not in the schema)"
    assert finding["line"] == 3


def test_crd_root_without_properties_is_closed_but_allows_metadata(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crds = tmp_path / "crds"
    crds.mkdir()
    write_file(crds, "widgets.yaml", _crd(_version("type: object")))
    bare = write_file(
        tmp_path, "bare.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n"
    )
    assert main(["validate", "--manifests", str(bare), "--crds", str(crds)]) == 0
    capsys.readouterr()
    widget = write_file(tmp_path, "w.yaml", WIDGET)
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
