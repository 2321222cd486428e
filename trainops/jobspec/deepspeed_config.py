"""A job's DeepSpeed `config` as DeepSpeed reads it, checked at the door.

DeepSpeed refuses at start-up what its config models refuse (pydantic, `extra="forbid"`:
a wrong type, an unknown ZeRO key, a stage out of 0..3) and silently ignores an unknown
top-level key (a misspelt `zero_optimisation` leaves ZeRO off). The rules are DeepSpeed's own,
derived from its classes into `trainops/schemas/deepspeed.schema.json` (importing DeepSpeed
takes seconds; `tests/facts/test_deepspeed_schema.py` keeps the file equal to what the
installed DeepSpeed says).

YAML 1.1 (PyYAML, and so the Kubernetes-compatible loader we use) reads `5e8` as a string:
it has no dot. Where DeepSpeed's model wants a number, such a string is turned into the
number it spells, and a note says so (`TrainingJob.notes`); `"auto"` is left alone (the HF
Trainer fills it in, and DeepSpeed's models skip it).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import TYPE_CHECKING, Any

import jsonschema_rs

from trainops.core.errors import Problem
from trainops.core.paths import SCHEMA_DIR
from trainops.core.yamlio import Document
from trainops.facts.deepspeed import (
    AUTO,
    CONFIG_SCHEMA,
    DEEPSPEED_VERSION,
    ZERO,
    config_json,
    ignored_zero_keys,
    stages_text,
    zero_stage,
)
from trainops.jobspec.problems import Collector, report_errors

if TYPE_CHECKING:
    import jsonschema

PREFIX: tuple[str, ...] = ("deepspeed", "config")
# The API server refuses a ConfigMap whose data is over 1 MiB (apimachinery's
# `MaxSecretSize`, used for ConfigMaps too); trainops renders the config into one, with the
# keys it generates beside the job's (issue 35.9: sync then fails on every cluster).
MAX_CONFIGMAP_BYTES = 1024 * 1024
MAX_CONFIG_BYTES = MAX_CONFIGMAP_BYTES - 64 * 1024
# A number as YAML 1.2 / JSON spell it, which YAML 1.1 leaves a string (`5e8`, `1E-5`).
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


@cache
def _schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMA_DIR / CONFIG_SCHEMA).read_text(encoding="utf-8"))
    return loaded


# What DeepSpeed reads as numbers outside its config models, on which the derived schema says
# nothing: runtime/config.py's `get_scalar_param` keys, and the optimizer's and scheduler's
# `params`, handed as keyword arguments to torch's optimizers and DeepSpeed's schedulers
# (`lr: "1e-4"` stops torch.optim.AdamW at start-up: `'<=' not supported between float and
# str`). No parameter of theirs takes a string that spells a number.
_ANY_NUMBER: dict[str, Any] = {"anyOf": [{"type": "integer"}, {"type": "number"}]}
_PARAMS: dict[str, Any] = {"properties": {"params": {"additionalProperties": _ANY_NUMBER}}}
_UNTYPED_NUMBERS: dict[str, dict[str, Any]] = {
    "train_batch_size": {"type": "integer"},
    "train_micro_batch_size_per_gpu": {"type": "integer"},
    "gradient_accumulation_steps": {"type": "integer"},
    "steps_per_print": {"type": "integer"},
    "gradient_clipping": {"type": "number"},
    "gradient_predivide_factor": {"type": "number"},
    "optimizer": _PARAMS,
    "scheduler": _PARAMS,
}


@cache
def _coercion_schema() -> dict[str, Any]:
    """The schema with the numbers DeepSpeed reads unvalidated typed (for coercion only)."""
    schema = _schema()
    properties = dict(schema["properties"])
    for key, typed in _UNTYPED_NUMBERS.items():
        if not properties.get(key):
            properties[key] = typed
    return {**schema, "properties": properties}


@cache
def _validator() -> jsonschema.Draft202012Validator:
    import jsonschema  # noqa: PLC0415 (see jobspec.schemas.validator)

    return jsonschema.Draft202012Validator(_schema())


@cache
def _fast_validator() -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for(_schema(), validate_formats=False)


def _surely_valid(config: Any) -> bool:
    """jsonschema-rs finds `config` valid: the Python validator, ten times slower and needed
    only to word the problems, is then skipped (as `jobspec.schemas.surely_valid` does for the
    spec; where the two could differ the Rust side is the stricter one, and a config it
    refuses goes to the Python validator, whose verdict stands)."""
    try:
        return bool(_fast_validator().is_valid(config))
    except (ValueError, TypeError, OverflowError):
        return False


def _types(schema: dict[str, Any]) -> set[str]:
    """The JSON types a value may have here (`anyOf` flattened)."""
    found = {schema["type"]} if isinstance(schema.get("type"), str) else set()
    if schema.get("enum") and all(isinstance(v, int) for v in schema["enum"]):
        found.add("integer")  # ZeRO's stage: an int enum
    for option in schema.get("anyOf", ()):
        found |= _types(option)
    return found


def _objects(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The object schemas a mapping may match here."""
    if "properties" in schema:
        return [schema]
    return [o for option in schema.get("anyOf", ()) for o in _objects(option)]


# Beyond a double's exponent (1.8e308) nothing DeepSpeed reads is meaningful.
MAX_EXPONENT = 308


def _number(text: str, types: set[str]) -> int | float | None:
    """The number `text` spells where the schema wants one (None: leave it)."""
    if not _NUMBER.match(text.strip()):
        return None
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        return None
    if not value.is_finite() or abs(value.adjusted()) > MAX_EXPONENT:
        # `1e999999999` as an int is a billion digits (validate hung, issue 35.8), and no
        # float holds it: left a string, the schema says it is not a number.
        return None
    if "integer" in types and value == value.to_integral_value():
        return int(value)
    if "number" in types:
        return float(value)
    return None


def _coerce(value: Any, schema: dict[str, Any], path: list[str | int], notes: list[Any]) -> Any:
    if isinstance(value, dict):
        properties: dict[str, Any] = {}
        for candidate in _objects(schema):
            properties.update(candidate["properties"])
        rest = schema.get("additionalProperties")
        rest = rest if isinstance(rest, dict) else {}
        return {k: _coerce(v, properties.get(k, rest), [*path, k], notes) for k, v in value.items()}
    if isinstance(value, str) and value != AUTO:
        number = _number(value, _types(schema))
        if number is not None:
            notes.append((path, value, number))
            return number
    return value


def _without_auto(value: Any) -> Any:
    """DeepSpeed's config models drop `"auto"` before validating (`DeepSpeedConfigModel`)."""
    if isinstance(value, dict):
        return {k: _without_auto(v) for k, v in value.items() if v != AUTO}
    return value


def check_config(config: dict[str, Any], out: Collector) -> tuple[dict[str, Any], list[Problem]]:
    """The config with YAML 1.1 number strings made numbers, and a note for each; what
    DeepSpeed would refuse or ignore goes to `out`, positioned at the key."""
    found: list[tuple[list[str | int], str, int | float]] = []
    coerced = _coerce(config, _coercion_schema(), [], found)
    size = len(config_json(coerced).encode())
    if size > MAX_CONFIG_BYTES:
        out.add(
            list(PREFIX),
            f"the DeepSpeed config is {size:,} bytes as JSON: the ConfigMap it is delivered in"
            f" holds at most {MAX_CONFIGMAP_BYTES:,} (the API server refuses a larger one), with"
            f" room for what trainops adds: keep it under {MAX_CONFIG_BYTES:,}",
        )
        return coerced, []
    before = len(out.problems)
    _check_choices(coerced, out)
    checked = _without_auto(coerced)
    if not _surely_valid(checked):
        report_errors(_validator().iter_errors(checked), out, PREFIX)
    out.problems[before:] = [
        replace(p, message=f"{p.message} (DeepSpeed {DEEPSPEED_VERSION})")
        for p in out.problems[before:]
    ]
    notes = []
    for path, text, number in found:
        line, column = out.doc.position([*PREFIX, *path])
        key = ".".join(str(p) for p in (*PREFIX, *path))
        notes.append(
            Problem(
                out.doc.file,
                line,
                column,
                f"`{key}`: YAML 1.1 reads `{text}` as a string and DeepSpeed wants a number:"
                f" rendered as {number} (write `{_yaml11(number)}` to say so)",
            )
        )
    return coerced, notes


# Top-level strings DeepSpeed reads unvalidated and refuses at start-up outside its choices
# (runtime/config.py `get_communication_data_type`, case-insensitive: ValueError).
_CHOICES: dict[str, tuple[str, ...]] = {"communication_data_type": ("fp16", "bf16", "fp32")}


def _check_choices(config: dict[str, Any], out: Collector) -> None:
    zero = config.get(ZERO)
    for section in ("offload_param", "offload_optimizer"):
        offload = zero.get(section) if isinstance(zero, dict) else None
        nvme = isinstance(offload, dict) and offload.get("device") == "nvme"
        if nvme and not offload.get("nvme_path"):  # type: ignore[union-attr]
            # swap_tensor/partitioned_param_swapper.py: os.path.join(nvme_path, ...)
            out.add(
                [*PREFIX, ZERO, section, "device"],
                f"`{section}: {{device: nvme}}` needs `nvme_path` (a local NVMe mount of the"
                " pod): without it DeepSpeed stops at start-up",
            )
    for key, choices in _CHOICES.items():
        value = config.get(key)
        if value is None or (isinstance(value, str) and value.lower() in choices):
            continue
        out.add(
            [*PREFIX, key],
            f"config `{key}` must be one of {', '.join(choices)}, got {json.dumps(value)}:"
            " DeepSpeed refuses anything else at start-up",
        )


def _yaml11(number: int | float) -> str:
    """`number` spelt so that YAML 1.1 reads a number: a dot before the exponent (`1.0e-08`)."""
    text = repr(number)
    mantissa, e, exponent = text.partition("e")
    if e and "." not in mantissa:
        return f"{mantissa}.0e{exponent}"
    return text


def stage_ignored_notes(config: dict[str, Any] | None, doc: Document) -> list[Problem]:
    """A warning for each `zero_optimization` key of the job's config that its ZeRO stage
    never reads (`facts/deepspeed.py:ZERO_KEY_STAGES`, from DeepSpeed's engine): the setting
    does nothing, and whoever tunes it is misled."""
    if config is None:
        return []
    notes = []
    for key, stages in ignored_zero_keys(config):
        path: list[str | int] = [*PREFIX, ZERO, key]
        line, column = doc.position(path)
        notes.append(
            Problem(
                doc.file,
                line,
                column,
                f"`{'.'.join(map(str, path))}`: ZeRO stage {zero_stage(config)} ignores it"
                f" (DeepSpeed {DEEPSPEED_VERSION} reads it only at"
                f" {stages_text(stages)}): remove it, or set the stage that uses it",
            )
        )
    return notes
