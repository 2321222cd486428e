"""Identical findings told at one spec line become one (validate/locate.py:merge): the same
rule, severity, waiver and line, and the same message but for the rendered path it starts
with; anything else stays apart."""

from __future__ import annotations

from trainops.core.findings import Finding, Location, Severity
from trainops.validate.locate import merge


def _found(replica: str, cluster: str, *, line: int = 8, message: str = "bad") -> Finding:
    path = ("spec", "pytorchReplicaSpecs", replica, "template", "spec", "containers", 0, "image")
    text = f"spec.pytorchReplicaSpecs.{replica}.template.spec.containers[0].image: {message}"
    rendered = Location("base/j/pytorchjob.yaml", 50, "PyTorchJob", "j", "ml", cluster, replica)
    return Finding(
        "schema",
        Severity.ERROR,
        text,
        file="jobs/j.yaml",
        line=line,
        kind="PyTorchJob",
        name="j",
        namespace="ml",
        cluster=cluster,
        related=(rendered,),
        path=path,
    )


def test_one_mistake_on_every_replica_type_and_cluster_is_one_finding() -> None:
    found = [_found(r, c) for r in ("Master", "Worker") for c in ("a", "b")]
    [merged] = merge(found)
    assert merged.message == "image: bad"
    assert (merged.file, merged.line, merged.kind, merged.name) == (
        "jobs/j.yaml",
        8,
        "PyTorchJob",
        "j",
    )
    assert merged.cluster is None
    assert {(r.cluster, r.replica_type) for r in merged.related} == {
        ("a", "Master"),
        ("a", "Worker"),
        ("b", "Master"),
        ("b", "Worker"),
    }


def test_a_single_place_keeps_its_message_and_cluster() -> None:
    [kept] = merge([_found("Master", "a"), _found("Master", "a")])
    assert kept.message.startswith("spec.pytorchReplicaSpecs.Master")
    assert kept.cluster == "a"


def test_other_lines_messages_and_plain_findings_stay_apart() -> None:
    plain = Finding("schema", Severity.ERROR, "bad", file="m.yaml", line=8)
    found = [
        _found("Master", "a"),
        _found("Worker", "a", line=9),
        _found("Worker", "b", message="worse"),
        plain,
        plain,
    ]
    assert len(merge(found)) == 5
