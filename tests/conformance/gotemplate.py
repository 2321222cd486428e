"""Go's text/template, the subset an ApplicationSet with `goTemplate: true` renders our
`template` and `templatePatch` with (argo-cd v3.5.1 applicationset/utils `Render`: Go's
text/template with sprig's functions and `goTemplateOptions`), written here because no Go
template engine runs in this environment. Each piece follows Go's own code
(go/src/text/template `lex.go`, `parse.go`, `exec.go`, `funcs.go`; sprig `defaults.go`), and
passes the cases of Go's `exec_test.go` (`execTests`, `TestMissingMapKey`) and `lex_test.go`
it covers (test_go_port.py).

The subset: text; actions `{{ }}` with `{{-`/`-}}` trimming and `{{/* comments */}}`;
`if`/`else if`/`else`/`end`; pipelines of fields (`.`, `.a.b` on maps), string (`"..."`,
`` `...` ``), number, `true`/`false`/`nil` operands and the functions `not`, `and`, `or`, `eq`,
`ne`, `print` and sprig's `toJson`. Anything else (`range`, `with`, variables, other
functions) is refused with NotImplementedError rather than read differently.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class TemplateError(ValueError):
    """A template Go would refuse to parse or execute."""


_MISSING = object()  # Go's invalid reflect.Value: a map key that is not there
_SPACE = " \t\r\n"


# ----------------------------------------------------------------- lexing (lex.go)


def _tokens(text: str) -> list[tuple[str, str]]:
    """("text", s) and ("action", body) items, trim markers applied as lex.go does: `{{- `
    drops the spaces before, ` -}}` those after; a comment yields nothing."""
    out: list[tuple[str, str]] = []
    pos = 0
    while True:
        start = text.find("{{", pos)
        if start < 0:
            out.append(("text", text[pos:]))
            break
        chunk = text[pos:start]
        trim_left = text.startswith("{{-", start) and text[start + 3 : start + 4] in tuple(_SPACE)
        if trim_left:
            chunk = chunk.rstrip(_SPACE)
        out.append(("text", chunk))
        body_start = start + (3 if trim_left else 2)
        end = _action_end(text, body_start)
        trim_right = text[end - 1 : end] == "-" and text[end - 2 : end - 1] in tuple(_SPACE)
        body = text[body_start : end - 1 if trim_right else end].strip(_SPACE)
        pos = end + 2
        if trim_right:
            while pos < len(text) and text[pos] in _SPACE:
                pos += 1
        if not (body.startswith("/*") and body.endswith("*/")):
            out.append(("action", body))
    return [t for t in out if t != ("text", "")]


def _action_end(text: str, pos: int) -> int:
    """The index of the `}}` closing an action, skipping quoted strings."""
    quote = ""
    while pos < len(text):
        c = text[pos]
        if quote:
            if c == "\\" and quote == '"':
                pos += 1
            elif c == quote:
                quote = ""
        elif c in '"`':
            quote = c
        elif text.startswith("}}", pos):
            return pos
        pos += 1
    raise TemplateError("unclosed action")


# ----------------------------------------------------------------- parsing (parse.go)

_OPERAND = re.compile(
    r'\s*(?:(?P<field>\.(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)?)|(?P<str>"(?:\\.|[^"\\])*"|`[^`]*`)'
    r"|(?P<num>[+-]?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|(?P<ident>[A-Za-z_]\w*)|(?P<pipe>\|))"
)


@dataclass
class _Command:
    operands: list[tuple[str, str]]


@dataclass
class _If:
    branches: list[tuple[list[_Command], list[Any]]] = field(default_factory=list)
    otherwise: list[Any] = field(default_factory=list)


def _pipeline(body: str) -> list[_Command]:
    commands: list[_Command] = [_Command([])]
    pos = 0
    while pos < len(body.rstrip()):
        m = _OPERAND.match(body, pos)
        if m is None:
            raise NotImplementedError(f"not in the subset: {body[pos:]!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind == "pipe":
            commands.append(_Command([]))
        else:
            commands[-1].operands.append((kind, m.group(kind)))
    if any(not c.operands for c in commands):
        raise TemplateError(f"missing value for command in {body!r}")
    return commands


def parse(text: str) -> list[Any]:
    """The template as a tree of text strings, pipelines (lists of commands) and `_If`s."""
    root: list[Any] = []
    stack: list[tuple[list[Any], _If | None]] = [(root, None)]
    for kind, value in _tokens(text):
        current, node = stack[-1]
        if kind == "text":
            current.append(value)
            continue
        word = value.split(None, 1)[0] if value else ""
        rest = value[len(word) :].strip()
        if word == "if":
            new = _If([(_pipeline(rest), [])])
            current.append(new)
            stack.append((new.branches[0][1], new))
        elif word == "else" and node is not None:
            stack.pop()
            if rest.startswith("if "):
                node.branches.append((_pipeline(rest[3:]), []))
                stack.append((node.branches[-1][1], node))
            else:
                stack.append((node.otherwise, node))
        elif word == "end" and node is not None:
            stack.pop()
        elif word in {"range", "with", "define", "template", "block", "break", "continue"}:
            raise NotImplementedError(f"not in the subset: {{{{{value}}}}}")
        else:
            current.append(_pipeline(value))
    if len(stack) != 1:
        raise TemplateError("unexpected EOF")
    return root


# ----------------------------------------------------------------- executing (exec.go)


def _truth(value: Any) -> bool:
    """exec.go `isTrue`: false, 0, "", nil, an empty map or list, or no value are false."""
    if value is _MISSING or value is None:
        return False
    if isinstance(value, (bool, int, float, str, list, dict)):
        return bool(value)
    return True


def _print(value: Any) -> str:
    """fmt's %v of a value decoded from JSON or YAML: maps sorted as `map[k:v]`."""
    if value is _MISSING:
        return "<no value>"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value).replace("e+0", "e+").replace("e-0", "e-")
    if isinstance(value, list):
        return "[" + " ".join(_print(v) for v in value) + "]"
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_print(value[k])}" for k in sorted(value)) + "]"
    return str(value)


def to_json(value: Any) -> str:
    """sprig `toJson`: Go's json.Marshal (sorted map keys, no spaces, `<`, `>`, `&`, U+2028
    and U+2029 escaped)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):  # fmt: skip
        text = text.replace(char, escaped)
    return text


def _eq(a: Any, *others: Any) -> bool:
    if not others:
        raise TemplateError("missing argument for comparison")
    return any((a == b and type(a) is type(b)) or _numbers_equal(a, b) for b in others)


def _numbers_equal(a: Any, b: Any) -> bool:
    numbers = (int, float)
    return (isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool)
            and not isinstance(b, bool) and a == b)  # fmt: skip


def _sprint(*args: Any) -> str:
    """fmt.Sprint: a space between two operands when neither is a string."""
    out = ""
    for i, arg in enumerate(args):
        if i and not isinstance(arg, str) and not isinstance(args[i - 1], str):
            out += " "
        out += _print(arg)
    return out


FUNCS: dict[str, Callable[..., Any]] = {
    "not": lambda v: not _truth(v),
    "and": lambda *v: next((x for x in v if not _truth(x)), v[-1]),
    "or": lambda *v: next((x for x in v if _truth(x)), v[-1]),
    "eq": _eq,
    "ne": lambda a, b: not _eq(a, b),
    "print": _sprint,
    "toJson": to_json,
}


@dataclass(frozen=True)
class _Exec:
    data: Any
    missing_error: bool

    def field(self, path: str) -> Any:
        value = self.data
        for key in [k for k in path.split(".") if k]:
            if value is _MISSING:
                return _MISSING
            if not isinstance(value, Mapping):
                raise TemplateError(f"can't evaluate field {key} in type {type(value).__name__}")
            if key not in value:
                if self.missing_error:
                    raise TemplateError(f'map has no entry for key "{key}"')
                return _MISSING
            value = value[key]
        return value

    def operand(self, kind: str, text: str) -> Any:
        if kind == "field":
            return self.field(text)
        if kind == "str":
            return json.loads(text) if text.startswith('"') else text[1:-1]
        if kind == "num":
            return float(text) if any(c in text for c in ".eE") else int(text)
        if text in ("true", "false"):
            return text == "true"
        if text == "nil":
            return None
        raise TemplateError(f'function "{text}" not defined')

    def command(self, command: _Command, piped: Any) -> Any:
        (kind, text), *args = command.operands
        if kind == "ident" and text in FUNCS:
            values = [self.operand(*a) for a in args]
            if piped is not _NONE:
                values.append(piped)
            return FUNCS[text](*values)
        if kind == "ident" and text not in ("true", "false", "nil"):
            raise NotImplementedError(f"not in the subset: function {text}")
        if args or piped is not _NONE:
            raise TemplateError(f"can't give argument to non-function {text}")
        if kind == "ident" and text == "nil":
            raise TemplateError("nil is not a command")
        return self.operand(kind, text)

    def pipeline(self, commands: list[_Command]) -> Any:
        value: Any = _NONE
        for command in commands:
            value = self.command(command, value)
        return value

    def run(self, nodes: list[Any]) -> str:
        out = []
        for node in nodes:
            if isinstance(node, str):
                out.append(node)
            elif isinstance(node, _If):
                chosen = next(
                    (body for cond, body in node.branches if _truth(self.pipeline(cond))),
                    node.otherwise,
                )
                out.append(self.run(chosen))
            else:
                out.append(_print(self.pipeline(node)))
        return "".join(out)


_NONE = object()  # no value piped into a command


def execute(text: str, data: Any, options: tuple[str, ...] = ()) -> str:
    """Parse and execute `text` on `data`; `options` as Template.Option takes them
    (`missingkey=error` is the only one that changes anything here)."""
    missing_error = "missingkey=error" in options
    if missing_error and data is None:
        raise TemplateError("missingkey=error on a nil data value")
    return _Exec(data, missing_error).run(parse(text))
