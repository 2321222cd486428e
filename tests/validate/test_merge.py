"""Identical findings told at one spec line become one (validate/locate.py:merge): the same
rule, severity, waiver and line, and the same message but for the rendered path it starts
with; anything else stays apart."""

from __future__ import annotations

import dataclasses

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


def test_other_lines_rules_and_plain_findings_stay_apart() -> None:
    plain = Finding("schema", Severity.ERROR, "bad", file="m.yaml", line=8)
    other_rule = dataclasses.replace(_found("Master", "a"), rule="image-unpinned")
    found = [_found("Master", "a"), _found("Worker", "a", line=9), other_rule, plain, plain]
    assert len(merge(found)) == 5


def test_two_things_a_rule_says_about_one_line_are_one_finding() -> None:
    [merged] = merge([_found("Master", "a"), _found("Worker", "b", message="worse")])
    assert merged.message == (
        "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].image: bad; also:"
        " spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].image: worse"
    )
    assert len(merged.related) == 2


def test_the_container_a_message_names_is_where_it_was_found() -> None:
    """`pytorch` in a PyTorchJob is `node` in a TrainJob: one mistake, one finding naming both."""
    found = []
    for kind, container in (("PyTorchJob", "pytorch"), ("TrainJob", "node")):
        rendered = Location("base/j/x.yaml", 9, kind, "j", "ml", "c", None, container)
        message = f"container `{container}` sets PASSWORD to a literal value"
        found.append(
            Finding("secret-in-plain-env", Severity.ERROR, message, file="jobs/j.yaml", line=4,
                    related=(rendered,), path=("spec",))
        )  # fmt: skip
    [merged] = merge(found)
    assert merged.message == "container `node`/`pytorch` sets PASSWORD to a literal value"
    assert merged.kind is None
