"""Plain scalars as Kubernetes reads them: go-yaml v2 as forked in sigs.k8s.io/yaml
(`resolve` in goyaml.v2/resolve.go), which kubectl, the API server, Argo CD and Flux use to
turn a manifest into JSON.

PyYAML (YAML 1.1) reads some plain scalars otherwise, and the difference decides whether the
API server takes a manifest: `value: 1e-4` is text to PyYAML and the number 0.0001 to go-yaml,
which an env var's string field refuses. go-yaml's rules, in its order:
- a table of words: `y`/`Y`/`yes`/`on`/`true`... are true, `n`/`N`/`no`/`off`/`false`... false
  (PyYAML has no `y` and `n`), `~`/`null`/the empty scalar null, `.inf`/`.nan` floats;
- a scalar starting with `.`: a float when Go's ParseFloat takes it (`.5e3`);
- a scalar starting with a digit or a sign: a timestamp when it starts `YYYY-` (text in the
  JSON, as yamlio keeps it); else, `_` removed, an int when Go's ParseInt takes it in base 0
  (`0x1F`, `0o17`, `0b101`, `017` octal; past 64 bits a float or a big int), a float when it
  matches `yamlStyleFloat` (`1e-4`, `1E5`, `-.5`, `08`), else text (`1:30`, base 60 to PyYAML);
- anything else: text.

Only the manifests trainops reads as Kubernetes objects are read so (`yamlio`'s
`as_kubernetes`); job specs and cluster profiles are trainops's own format and keep PyYAML's
reading (a spec's `LR: 1e-4` reaches the pod as that text).
"""

from __future__ import annotations

import math
import re

BOOL = "tag:yaml.org,2002:bool"
INT = "tag:yaml.org,2002:int"
FLOAT = "tag:yaml.org,2002:float"
NULL = "tag:yaml.org,2002:null"
STR = "tag:yaml.org,2002:str"
MERGE = "tag:yaml.org,2002:merge"

TRUE = frozenset({"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
FALSE = frozenset({"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_WORDS = {
    **dict.fromkeys(TRUE | FALSE, BOOL),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), NULL),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), FLOAT),
    **{f"{sign}.{inf}": FLOAT for sign in ("", "+", "-") for inf in ("inf", "Inf", "INF")},
    "<<": MERGE,
}
_SPECIAL_FLOATS = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **{f"{s}.{i}": v for s, v in (("", math.inf), ("+", math.inf), ("-", -math.inf))
       for i in ("inf", "Inf", "INF")},
}  # fmt: skip
_NUMBER_HINT = frozenset("+-0123456789")
# strconv.ParseInt(s, 0, 64)'s syntax: a sign, then a base prefix or a leading 0 (octal).
_GO_INT = re.compile(r"([-+]?)(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)")
# goyaml.v2's yamlStyleFloat.
_GO_FLOAT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_TIMESTAMP_START = re.compile(r"[0-9]{4}-")
_INT64 = range(-(2**63), 2**63)
_UINT64 = range(2**64)


def _finite_float(text: str) -> float | None:
    """Go's ParseFloat: None where it refuses the text or the value overflows (Python's float
    also takes other scripts' digits, which Go does not)."""
    if not text.isascii():
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _int_value(sign: str, digits: str) -> int:
    if len(digits) > 1 and digits[0] == "0" and digits[1] not in "xXoObB":
        value = int(digits, 8)  # Go's leading-zero octal (Python wants 0o)
    else:
        value = int(digits, 0)
    return -value if sign == "-" else value


def _number(text: str) -> tuple[str, int | float | None]:
    """The tag and value of a plain scalar that starts with a digit or a sign."""
    if _TIMESTAMP_START.match(text):
        return STR, None
    plain = text.replace("_", "")
    whole = _GO_INT.fullmatch(plain)
    if whole is not None:
        value = _int_value(whole[1], whole[2])
        # ParseInt in int64, else ParseUint (which takes no sign) in uint64.
        if value in _INT64 or (not whole[1] and value in _UINT64):
            return INT, value
    if _GO_FLOAT.fullmatch(plain):
        number = _finite_float(plain)
        if number is not None:
            return FLOAT, number
    if whole is not None:
        return INT, value  # big.Int's SetString(plain, 0): a number past 64 bits
    return STR, None


def tag(text: str) -> str:
    """The tag go-yaml v2 resolves the plain scalar `text` to."""
    word = _WORDS.get(text)
    if word is not None:
        return word
    first = text[:1]
    if first == ".":
        return FLOAT if _finite_float(text) is not None else STR
    if first in _NUMBER_HINT:
        return _number(text)[0]
    return STR


def value(resolved: str, text: str) -> bool | int | float | None:
    """The value of `text` under the tag `resolved` (implicit or explicit), as go-yaml builds it;
    ValueError where go-yaml cannot (`!!int abc`)."""
    if resolved == BOOL:
        if text in TRUE or text in FALSE:
            return text in TRUE
        raise ValueError(f"not a bool: {text!r}")
    if resolved == NULL:
        return None
    if text in _SPECIAL_FLOATS:
        number: int | float | None = _SPECIAL_FLOATS[text]
    elif text[:1] == ".":
        number = _finite_float(text)
    elif text[:1] in _NUMBER_HINT:
        number = _number(text)[1]
    else:
        number = None
    if number is None:
        raise ValueError(f"not a number: {text!r}")
    if resolved == FLOAT:
        return float(number)
    if resolved == INT and isinstance(number, int):
        return number
    raise ValueError(f"not an int: {text!r}")
