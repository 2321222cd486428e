"""A job's DeepSpeed config skips the Python JSON Schema validator when jsonschema-rs finds it
valid (`trainops.jobspec.deepspeed_config._surely_valid`; a fifth of loading 500 specs went to
building and running the Python one): safe only if jsonschema-rs never accepts what the Python
validator refuses. Checked on every DeepSpeed config of the repository's specs and seeded
mutations of them (tests/jobspec/test_fast_schema.py's), and on hand-made configs DeepSpeed
refuses."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.jobspec.test_fast_schema import SPECS, _mutate
from trainops.core.yaml_dump import dump
from trainops.core.yamlio import Document, load_text
from trainops.jobspec import deepspeed_config
from trainops.jobspec.deepspeed_config import _surely_valid, _validator

MUTATIONS_PER_CONFIG = 60
CONFIGS = [
    (file, data["deepspeed"]["config"])
    for file, _, data in SPECS
    if isinstance(data.get("deepspeed"), dict) and isinstance(data["deepspeed"].get("config"), dict)
]
REFUSED: list[dict[str, Any]] = [
    {"zero_optimization": {"stage": 4}},
    {"zero_optimization": {"stag": 3}},
    {"zero_optimization": {"stage": 3, "bogus": 1}},
    {"bf16": {"enabled": 1.5}},
    {"fp16": {"enabled": "yes"}},
    {"zero_optimization": {"offload_optimizer": {"device": "gpu"}}},
]


def _python_valid(config: Any) -> bool:
    return not any(True for _ in _validator().iter_errors(config))


def test_the_corpus_has_deepspeed_configs() -> None:
    assert len(CONFIGS) >= 2


@pytest.mark.parametrize(("file", "config"), CONFIGS, ids=[c[0] for c in CONFIGS])
def test_jsonschema_rs_accepts_only_what_the_python_validator_accepts(
    file: str, config: dict[str, Any]
) -> None:
    assert _surely_valid(config) == _python_valid(config), file
    rng = random.Random(file)
    verdicts = set()
    for _ in range(MUTATIONS_PER_CONFIG):
        mutated = _mutate(config, rng)
        python = _python_valid(mutated)
        verdicts.add(python)
        if _surely_valid(mutated):
            assert python, (file, mutated)
    assert False in verdicts, "no mutation was invalid: the check proves nothing"


@pytest.mark.parametrize("config", REFUSED, ids=[str(c) for c in REFUSED])
def test_what_deepspeed_refuses_is_still_worded(config: dict[str, Any]) -> None:
    assert not _surely_valid(config) and not _python_valid(config)
    doc = _document({"deepspeed": {"config": config}})
    out = deepspeed_config.Collector(doc)
    deepspeed_config.check_config(config, out)
    assert out.problems and all("DeepSpeed" in p.message for p in out.problems)


def _document(data: dict[str, Any]) -> Document:
    (doc,) = load_text(dump(data), "jobs/x.yaml")
    return doc
