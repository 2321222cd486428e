"""The spec loader skips the Python JSON Schema validator when jsonschema-rs finds a spec valid
(`trainops.jobspec.schemas.surely_valid`): that is safe only if jsonschema-rs never accepts what
the Python validator (`jsonschema`, whose errors the loader words) refuses.

Checked on every spec file of the repository and its test fixtures, and on seeded mutations of
them that put values of every JSON type, strings that regex dialects read differently (a final
newline before `$`, non-ASCII), floats that are integers, and unknown or missing keys anywhere
in the document.
"""

from __future__ import annotations

import copy
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tools import REPO
from trainops.core.yamlio import load_file
from trainops.jobspec import schemas

SCHEMA_OF_KIND = {"TrainingJob": schemas.JOB, "ClusterProfile": schemas.CLUSTER}
MUTATIONS_PER_FILE = 40
ODD_VALUES: list[Any] = [
    "", "a\n", "abc\n", "x" * 300, "UPPER", "--flag", "/abs", "1Gi", "é", "a b", "0.19",
    0, 1, -1, 1.0, 2.5, 2**70, True, False, None, [], {}, ["a"], {"k": "v"},
]  # fmt: skip


def _yaml_files() -> Iterator[Path]:
    """The repository's YAML files, not descending into hidden or build folders (`.venv`)."""
    for folder, dirs, files in os.walk(REPO):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in {"build", "node_modules"}]
        yield from (Path(folder) / f for f in files if f.endswith(".yaml"))


def _specs() -> list[tuple[str, str, dict[str, Any]]]:
    """(file, schema name, data as the loader reads it) of every spec in the repository."""
    out = []
    for path in sorted(_yaml_files()):
        relative = path.relative_to(REPO)
        if path.name == "trainops.yaml":
            name = schemas.SETTINGS
        elif path.parent.name in {"jobs", "clusters"}:
            name = ""
        else:
            continue
        docs = load_file(path, str(relative))
        if len(docs) != 1 or not isinstance(docs[0].data, dict):
            continue
        name = name or SCHEMA_OF_KIND.get(docs[0].data.get("kind", ""), "")
        if name:
            out.append((str(relative), name, docs[0].data))
    return out


def _python_valid(name: str, data: Any) -> bool:
    return not any(True for _ in schemas.validator(name).iter_errors(data))


def _places(data: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _places(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _places(value, (*path, index))


def _mutate(data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    out = copy.deepcopy(data)
    path = rng.choice(list(_places(out))[1:])
    parent = out
    for part in path[:-1]:
        parent = parent[part]
    action = rng.choice(["value", "value", "delete", "unknown-key"])
    if action == "delete":
        del parent[path[-1]]
    elif action == "unknown-key" and isinstance(parent, dict):
        parent[f"{path[-1]}x"] = parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(rng.choice(ODD_VALUES))
    return out


SPECS = _specs()


def test_the_corpus_holds_every_kind_of_spec() -> None:
    assert {name for _, name, _ in SPECS} == {schemas.JOB, schemas.CLUSTER, schemas.SETTINGS}
    assert len(SPECS) >= 20


@pytest.mark.parametrize(("file", "name", "data"), SPECS, ids=[s[0] for s in SPECS])
def test_jsonschema_rs_accepts_only_what_the_python_validator_accepts(
    file: str, name: str, data: dict[str, Any]
) -> None:
    assert schemas.surely_valid(name, data) == _python_valid(name, data), file
    rng = random.Random(file)
    verdicts = set()
    for _ in range(MUTATIONS_PER_FILE):
        mutated = _mutate(data, rng)
        python = _python_valid(name, mutated)
        verdicts.add(python)
        if schemas.surely_valid(name, mutated):
            assert python, (file, mutated)
    assert False in verdicts, "no mutation was invalid: the check proves nothing"


def test_a_final_newline_is_where_the_two_differ_and_the_python_verdict_stands(
    tmp_path: Path,
) -> None:
    """Python's `$` matches before a final newline (the Python validator accepts `name: "a\\n"`),
    jsonschema-rs's does not: the loader's verdict is the Python one, as before."""
    job = {**next(d for _, n, d in SPECS if n == schemas.JOB), "name": "resnet\n"}
    assert not schemas.surely_valid(schemas.JOB, job)
    assert _python_valid(schemas.JOB, job)
