"""The kubelet's env resolution and `$(VAR)` expansion, as run-local reproduces it."""

from __future__ import annotations

import base64

from trainops.runlocal.kube import resolve_env, volume_files


def test_resolve_env_in_order_with_references() -> None:
    config = {"kind": "ConfigMap", "data": {"a": "1", "b": "2"}}
    secret = {"kind": "Secret", "data": {"token": base64.b64encode(b"s3cret").decode()}}
    container = {
        "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"}],
        "env": [
            {"name": "BASE", "value": "/data"},
            {"name": "PATHX", "value": "$(BASE)/x $(LATER)"},
            {"name": "LATER", "value": "y"},
            {"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a"}}},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "sec", "key": "token"}}},
            {"name": "GONE", "valueFrom": {"secretKeyRef": {"name": "missing", "key": "k"}}},
            {
                "name": "OPT",
                "valueFrom": {"secretKeyRef": {"name": "missing", "key": "k", "optional": True}},
            },
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    }
    out = resolve_env(container, {"cm": config}, {"sec": secret}, {"metadata.name": "j-worker-0"})
    assert out.values == {
        "CM_a": "1",
        "CM_b": "2",
        "BASE": "/data",
        "PATHX": "/data/x $(LATER)",  # only variables defined before it
        "LATER": "y",
        "A": "1",
        "TOKEN": "s3cret",
        "POD": "j-worker-0",
    }
    assert out.unresolved == ["GONE: secret 'missing' is not in the built objects; left unset"]


def test_volume_files_all_keys_or_items() -> None:
    config = {"kind": "ConfigMap", "data": {"a.json": "{}", "b": "x"}}
    assert volume_files(config, None) == {"a.json": "{}", "b": "x"}
    assert volume_files(config, [{"key": "b", "path": "sub/b.txt"}]) == {"sub/b.txt": "x"}
