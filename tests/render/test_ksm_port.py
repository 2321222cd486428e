"""The kube-state-metrics port (`ksm_port.py`) against kube-state-metrics v2.17.0's own tests,
`pkg/customresourcestate/registry_factory_test.go`: Test_fullName (all cases) and Test_values
("array", "status_conditions_all", "non-existent path"), on that test's object."""

from __future__ import annotations

import pytest

from tests.render.ksm_port import full_name, gauge_values

OBJ = {
    "status": {
        "condition_values": [{"name": "a", "value": 45}, {"name": "b", "value": 66}],
        "conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "Provisioned", "status": "False"},
        ],
    },
    "metadata": {"name": "foo"},
}


@pytest.mark.parametrize(
    ("prefix", "want"),
    [(None, "kube_customresource_count"), ("", "count"), ("bar_baz", "bar_baz_count")],
)
def test_full_name(prefix: str | None, want: str) -> None:
    assert full_name(prefix, "count") == want


def test_values_array() -> None:
    gauge = {"path": ["status", "condition_values"], "labelsFromPath": {"name": ["name"]},
             "valueFrom": ["value"]}  # fmt: skip
    assert gauge_values(gauge, OBJ) == [({"name": "a"}, 45.0), ({"name": "b"}, 66.0)]


def test_values_status_conditions_all() -> None:
    gauge = {"path": ["status", "conditions"], "labelsFromPath": {"type": ["type"]},
             "valueFrom": ["status"]}  # fmt: skip
    assert gauge_values(gauge, OBJ) == [({"type": "Provisioned"}, 0.0), ({"type": "Ready"}, 1.0)]


def test_values_non_existent_path() -> None:
    assert gauge_values({"path": ["non-existent"], "valueFrom": ["x"]}, OBJ) == []
