"""The spec model's own guarantees: every field documented, every default from the schema.

A field without a docstring leaves the next reader guessing what a value means; a default
written in the model as well as in the schema is a default that will one day differ from the
one editors and the docs show. The schema (`trainops/schemas/*.schema.json`) is the one source:
the model reads its defaults through `trainops.jobspec.schemas.default`.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect

import pytest

from trainops.jobspec import model, profile, repository, schemas

# The job's model, the cluster profile's and the repository's (re-exported by `model`).
MODULES = (model, profile, repository)
DATACLASSES = [
    obj
    for module in MODULES
    for _, obj in inspect.getmembers(module, inspect.isclass)
    if dataclasses.is_dataclass(obj) and obj.__module__ == module.__name__
]
TREES = [ast.parse(inspect.getsource(module)) for module in MODULES]


def _class_body(name: str) -> list[ast.stmt]:
    return next(
        n for tree in TREES for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name
    ).body


@pytest.mark.parametrize("cls", DATACLASSES, ids=lambda c: c.__name__)
def test_every_field_has_a_docstring(cls: type) -> None:
    body = _class_body(cls.__name__)
    undocumented = []
    for i, node in enumerate(body):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            following = body[i + 1] if i + 1 < len(body) else None
            documented = isinstance(following, ast.Expr) and isinstance(
                getattr(following, "value", None), ast.Constant
            )
            if not documented:
                undocumented.append(node.target.id)
    assert not undocumented, f"{cls.__name__}: document {undocumented} (a string under each)"


@pytest.mark.parametrize("cls", DATACLASSES, ids=lambda c: c.__name__)
def test_no_default_is_restated_in_the_model(cls: type) -> None:
    """A default is the schema's (`default(...)`), an empty container or None: nothing else."""
    for node in _class_body(cls.__name__):
        if not (isinstance(node, ast.AnnAssign) and node.value is not None):
            continue
        value = node.value
        from_schema = (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Name)
            and value.func.id in {"default", "field"}
        )
        empty = isinstance(value, ast.Constant) and value.value is None
        empty = empty or (isinstance(value, ast.Tuple) and not value.elts)
        assert from_schema or empty, (
            f"{cls.__name__}.{ast.unparse(node.target)} = {ast.unparse(value)}: put the default"
            " in the schema and read it with `default(...)`"
        )


def test_schema_defaults_fill_what_a_spec_leaves_out() -> None:
    job = schemas.with_defaults(schemas.JOB, {"volumes": {"data": {"mountPath": "/d"}}})
    assert job["runPolicy"] == {
        "cleanPodPolicy": schemas.default(schemas.JOB, "runPolicy.cleanPodPolicy")
    }
    assert job["volumes"]["data"]["accessMode"] == "ReadWriteMany"
    assert job["securityContext"]["fsGroup"] == model.PodSecurity().fs_group
    assert "elastic" not in job, "an optional block without a default {} stays absent"
    assert "deepspeed" not in job
