"""Issue 33 item 6: `zero_optimization` keys the configured ZeRO stage never reads are a
warning, from a table (`facts/deepspeed.py:ZERO_KEY_STAGES`) that this test derives from the
installed DeepSpeed's source, without importing it:

- `deepspeed/runtime/engine.py` `DeepSpeedEngine`: the `zero_*` accessors that return
  `self._config.zero_config.<field>`; which of them `_configure_zero_optimizer` calls in its
  `zero_stage <= ZeroStageEnum.gradients` branch (stages 1, 2) and its `ZeroStageEnum.weights`
  branch (3), and which `_configure_bf16_optimizer` calls (0 and 1); an accessor any other
  engine method calls is read at every stage and left out;
- `deepspeed/**/*.py`: a field read as `zero_config.<field>` anywhere else (zero.Init, the
  config) is left out too;
- `deepspeed/runtime/zero/config.py` `DeepSpeedZeroConfig`: the JSON key of each field (its
  `alias`, e.g. `stage3_prefetch_bucket_size`).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
from collections import defaultdict
from pathlib import Path

from tests.tools import skip_or_fail
from trainops.core.yamlio import load_text
from trainops.facts.deepspeed import DEEPSPEED_VERSION, ZERO_KEY_STAGES, ignored_zero_keys
from trainops.jobspec.deepspeed_config import stage_ignored_notes

ZERO_CONFIG = "self._config.zero_config"
BUILDERS = ("_configure_zero_optimizer", "_configure_bf16_optimizer")


def _deepspeed_source() -> Path:
    spec = importlib.util.find_spec("deepspeed")
    if spec is None or spec.origin is None:
        skip_or_fail("Python package `deepspeed` is not installed")
    assert importlib.metadata.version("deepspeed") == DEEPSPEED_VERSION
    return Path(spec.origin).parent


def _self_calls(node: ast.AST, names: set[str]) -> set[str]:
    return {
        c.func.attr
        for c in ast.walk(node)
        if isinstance(c, ast.Call)
        and isinstance(c.func, ast.Attribute)
        and ast.unparse(c.func.value) == "self"
        and c.func.attr in names
    }


def _aliases(root: Path) -> dict[str, str]:
    tree = ast.parse((root / "runtime" / "zero" / "config.py").read_text())
    (cls,) = [
        n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "DeepSpeedZeroConfig"
    ]
    out = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            keywords = node.value.keywords if isinstance(node.value, ast.Call) else []
            alias = [k.value for k in keywords if k.arg == "alias"]
            out[node.target.id] = alias[0].value if alias else node.target.id  # type: ignore[attr-defined]
    return out


def derive_table(root: Path) -> dict[str, frozenset[int]]:
    engine = ast.parse((root / "runtime" / "engine.py").read_text())
    (cls,) = [n for n in engine.body if isinstance(n, ast.ClassDef) and n.name == "DeepSpeedEngine"]
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    accessors = {}
    for name, fn in methods.items():
        body = fn.body[0] if len(fn.body) == 1 else None
        value = body.value if isinstance(body, ast.Return) else None
        if isinstance(value, ast.Attribute) and ast.unparse(value.value) == ZERO_CONFIG:
            accessors[name] = value.attr
    names = set(accessors)
    zero = methods["_configure_zero_optimizer"]
    (branch,) = [
        n for n in ast.walk(zero)
        if isinstance(n, ast.If) and ast.unparse(n.test) == "zero_stage <= ZeroStageEnum.gradients"
    ]  # fmt: skip
    assert ast.unparse(branch.orelse[0].test) == "zero_stage == ZeroStageEnum.weights"  # type: ignore[attr-defined]
    readers: dict[str, set[int]] = defaultdict(set)
    for stages, nodes in (({1, 2}, branch.body), ({3}, branch.orelse)):
        for call in set().union(*(_self_calls(n, names) for n in nodes)):
            readers[accessors[call]] |= stages
    for call in _self_calls(methods["_configure_bf16_optimizer"], names):
        readers[accessors[call]] |= {0, 1}
    everywhere = set().union(
        *(_self_calls(fn, names) for n, fn in methods.items() if n not in {*BUILDERS, *names})
    )
    read_elsewhere = {accessors[c] for c in everywhere}
    others = [
        p.read_text(errors="ignore")
        for p in root.rglob("*.py")
        if p.name != "engine.py" and p != root / "runtime" / "zero" / "config.py"
    ]
    aliases = _aliases(root)
    return {
        aliases[field]: frozenset(stages)
        for field, stages in readers.items()
        if field not in read_elsewhere
        and not any(re.search(rf"zero_config\.{field}\b", text) for text in others)
    }


def test_the_table_is_what_the_installed_deepspeed_reads() -> None:
    assert derive_table(_deepspeed_source()) == ZERO_KEY_STAGES


def test_the_derivation_finds_the_issues_example() -> None:
    """allgather_bucket_size: stage 1/2 and the BF16 optimizer only (the issue's reading)."""
    table = derive_table(_deepspeed_source())
    assert table["allgather_bucket_size"] == {0, 1, 2}
    assert table["stage3_prefetch_bucket_size"] == {3}
    assert "reduce_bucket_size" not in table  # read by the engine at every stage


def test_ignored_keys_per_stage() -> None:
    config = {"zero_optimization": {"stage": 3, "allgather_bucket_size": 1, "reduce_scatter": 1}}
    assert [k for k, _ in ignored_zero_keys(config)] == ["allgather_bucket_size"]
    config["zero_optimization"] = {"stage": 2, "stage3_max_live_parameters": 1, "sub_group_size": 1}
    assert [k for k, _ in ignored_zero_keys(config)] == [
        "stage3_max_live_parameters",
        "sub_group_size",
    ]
    assert ignored_zero_keys({"zero_optimization": {"stage": 0, "allgather_bucket_size": 1}}) == []
    assert [
        k for k, _ in ignored_zero_keys({"zero_optimization": {"round_robin_gradients": True}})
    ] == ["round_robin_gradients"]  # no stage: 0


def test_the_note_points_at_the_key() -> None:
    text = (
        "deepspeed:\n  config:\n    zero_optimization:\n      stage: 3\n"
        "      allgather_bucket_size: 500000000\n"
    )
    (doc,) = load_text(text, "jobs/job.yaml")
    config = {"zero_optimization": {"stage": 3, "allgather_bucket_size": 500000000}}
    (note,) = stage_ignored_notes(config, doc)
    assert (note.line, note.column) == (5, 7)
    assert "ZeRO stage 3 ignores it" in note.message
    assert "reads it only at stages 0 (the BF16 optimizer), 1 and 2" in note.message
