"""Issue 27's bound: a field crosses at most 6 modules (`bench/field_reach.py` counts them;
docs/development.md has the before/after table). A new module that reads `elasticPolicy`'s
keys or the profile's `transport` itself, instead of `elastic_range` / `Network.is_rdma`,
fails here."""

from __future__ import annotations

import pytest

from bench.field_reach import FIELDS, Field, reach, references

MAX_MODULES = 6


@pytest.mark.parametrize("field", FIELDS, ids=[f.name for f in FIELDS])
def test_a_field_crosses_at_most_six_modules(field: Field) -> None:
    modules = reach(None)[field.name]
    assert len(modules) <= MAX_MODULES, modules


def test_the_count_sees_a_key_an_attribute_and_a_declaration_but_no_docstring() -> None:
    (elastic, transport) = FIELDS
    assert references('x = spec["elasticPolicy"]["maxReplicas"]\n', elastic)
    assert references("n = job.elastic.max_replicas\n", elastic)
    assert references("class Network:\n    transport: str\n", transport)
    assert not references('"""Reads `maxReplicas`."""\nx = 1\n', elastic)
    assert not references('"""maxReplicas"""\n', elastic)
    assert not references("t = nccl_log.transport(pod, lines)\n", transport)
