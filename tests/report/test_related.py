"""A finding told at its spec line, in every format: where it applies, and the generated places
it was found in (JSON and SARIF related locations; the JSON round trip of `trainops report`)."""

from __future__ import annotations

import json
from pathlib import Path

from trainops.core.findings import Finding, Location, Severity
from trainops.report import formats, places

RELATED = (
    Location("base/j/pytorchjob.yaml", 55, "PyTorchJob", "j", "ml", "cloud-h100", "Master"),
    Location("base/j/pytorchjob.yaml", 185, "PyTorchJob", "j", "ml", "cloud-h100", "Worker"),
    Location("base/j/pytorchjob.yaml", 55, "PyTorchJob", "j", "ml", "onprem-a100", "Master"),
    Location("base/j/pytorchjob.yaml", 185, "PyTorchJob", "j", "ml", "onprem-a100", "Worker"),
    Location("base/j/trainer-v2/trainjob.yaml", 100, "TrainJob", "j", "ml", "onprem-h200", "node"),
)
FINDING = Finding(
    "image-unpinned",
    Severity.ERROR,
    "image `x:latest` uses the moving tag `latest`",
    file="jobs/j.yaml",
    line=8,
    name="j",
    namespace="ml",
    related=RELATED,
)
WHERE = (
    "PyTorchJob j on cloud-h100 and onprem-a100, Master and Worker; TrainJob j on onprem-h200, node"
)


def test_where_names_the_clusters_and_replica_types_once() -> None:
    assert places.where(FINDING) == WHERE
    one = Finding("r", Severity.WARNING, "m", file="jobs/j.yaml", line=3, related=RELATED[:1])
    assert places.where(one) == "PyTorchJob j on cloud-h100, Master"


def test_text_and_github_point_at_the_spec_line() -> None:
    text = formats.to_text([FINDING], 5)
    assert f"jobs/j.yaml:8: error   [image-unpinned] ({WHERE}) image `x:latest`" in text
    github = formats.to_github([FINDING], 5)
    assert github.startswith(
        f"::error file=jobs/j.yaml,line=8,title=trainops image-unpinned::({WHERE}): image"
    )
    assert "base/" not in github


def test_json_keeps_the_contract_and_adds_the_related_locations(tmp_path: Path) -> None:
    document = json.loads(formats.to_json([FINDING], 5))
    [finding] = document["findings"]
    assert (finding["file"], finding["line"], finding["rule"]) == (
        "jobs/j.yaml",
        8,
        "image-unpinned",
    )
    assert finding["relatedLocations"][4] == {
        "file": "base/j/trainer-v2/trainjob.yaml",
        "line": 100,
        "kind": "TrainJob",
        "name": "j",
        "namespace": "ml",
        "cluster": "onprem-h200",
        "replicaType": "node",
        "container": None,
    }
    path = tmp_path / "findings.json"
    path.write_text(formats.to_json([FINDING], 5))
    assert formats.from_json(path) == [FINDING]


def test_a_finding_without_related_locations_has_no_such_key() -> None:
    plain = Finding("r", Severity.ERROR, "m", file="manifests/a.yaml", line=3, kind="Pod")
    assert "relatedLocations" not in json.loads(formats.to_json([plain], 1))["findings"][0]
    assert "relatedLocations" not in formats.to_sarif([plain], 1)


def test_sarif_related_locations() -> None:
    [result] = json.loads(formats.to_sarif([FINDING], 5))["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "jobs/j.yaml"}, "region": {"startLine": 8}}
    related = result["relatedLocations"]
    assert [r["id"] for r in related] == list(range(5))
    assert related[1] == {
        "id": 1,
        "message": {"text": "PyTorchJob/j @cloud-h100 (Worker)"},
        "physicalLocation": {
            "artifactLocation": {"uri": "base/j/pytorchjob.yaml"},
            "region": {"startLine": 185},
        },
    }
