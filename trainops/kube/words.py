"""Words as the kubelet and the shell make them: the one reader of command lines that rules,
import and run-local share.

- `expand_kubelet`: `$(VAR)` in `command`/`args` and env values, from the container's env, as
  the kubelet expands it before the container starts: `$$` is a literal `$`, an undefined
  `$(VAR)` stays as written (the program sees the text `$(VAR)`).
  https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/
  (k8s.io/kubernetes third_party/forked/golang/expansion/expand.go)
- `expand_shell`: `$VAR` and `${VAR}` in an `sh -c` script line, from the variables the shell
  has (the container's env, then the script's own assignments and exports): none inside single
  quotes, an unknown name left as written (what it holds is decided at run time, not here).
- `script_lines`, `line_words`: a script's lines (backslash-newline joined) and one line's words
  and operators (`;`, `&&`, `||`, `|`, `&`), with file-descriptor redirections (`2>&1`, `&>`)
  dropped and comments cut, as POSIX sh splits them.

A YAML folded (`>`) or block (`|`) scalar is read by the YAML library into the one string it is:
one argv element, or, as the argument of `sh -c`, the script.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

OPERATORS = frozenset({"&&", "||", ";", "|", "&"})
_SHELL = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
# Redirections that hold `&` (`2>&1`, `>&2`, `&> log`): not operators, and no word.
_FD_REDIRECT = re.compile(r"\d*[<>]&\d*-?|&>>?")
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


def expand_kubelet(text: str, env: Mapping[str, str], missing: list[str] | None = None) -> str:
    """`text` with `$(VAR)` replaced from `env` as the kubelet does: `$$` is `$`, a name not in
    `env` is kept verbatim (and appended to `missing`), an unclosed `$(` is text. A port of
    Kubernetes' `third_party/forked/golang/expansion/expand.go` (Expand,
    tryReadVariableName): the name runs to the first `)`, whatever it holds."""
    out: list[str] = []
    checkpoint = cursor = 0
    while cursor < len(text):
        if text[cursor] == "$" and cursor + 1 < len(text):
            out.append(text[checkpoint:cursor])
            nxt = text[cursor + 1]
            close = text.find(")", cursor + 2) if nxt == "(" else -1
            if nxt == "$":
                out.append("$")
                cursor += 1
            elif close >= 0:
                name = text[cursor + 2 : close]
                if name in env:
                    out.append(env[name])
                else:
                    out.append(f"$({name})")
                    if missing is not None and name not in missing:
                        missing.append(name)
                cursor = close
            else:
                out.append("$" + nxt)
                cursor += 1
            checkpoint = cursor + 1
        cursor += 1
    return "".join(out) + text[checkpoint:]


def kubelet_env(literals: list[tuple[str, str | None]]) -> dict[str, str]:
    """A container's env as the kubelet sets it from literal values, in order: each value's
    `$(VAR)` expanded from the variables before it. A value from a reference (None) is unknown
    here and leaves the name unset, so a later `$(NAME)` stays as written."""
    env: dict[str, str] = {}
    for name, value in literals:
        if value is None:
            env.pop(name, None)
        else:
            env[name] = expand_kubelet(value, env)
    return env


def expand_shell(line: str, env: Mapping[str, str]) -> str:
    """`$VAR` and `${VAR}` of one script line replaced from `env` outside single quotes; a
    name not in `env` (or a special parameter, `$1`, `$?`) stays as written."""
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(line):
        char = line[i]
        if char == "\\" and quote != "'" and i + 1 < len(line):
            out.append(line[i : i + 2])
            i += 2
            continue
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
        elif char == "$" and quote != "'":
            match = _SHELL.match(line, i)
            name = (match.group(1) or match.group(2)) if match else ""
            if match and name in env:
                out.append(env[name])
                i = match.end()
                continue
        out.append(char)
        i += 1
    return "".join(out)


def script_lines(script: str) -> list[str]:
    """The script's lines, each continuation (`\\` at a line's end) joined to the next."""
    return script.replace("\\\n", " ").split("\n")


def _substitutions(line: str) -> list[tuple[int, int]]:
    """The spans of the command substitutions `$(...)` (nested ones inside the outer) and
    `` `...` `` in `line`; an unclosed one is left out."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(line):
        if line.startswith("$(", i):
            depth, j = 1, i + 2
            while j < len(line) and depth:
                depth += {"(": 1, ")": -1}.get(line[j], 0)
                j += 1
            if depth:
                return spans
            spans.append((i, j))
            i = j
        elif line[i] == "`":
            j = line.find("`", i + 1)
            if j < 0:
                return spans
            spans.append((i, j + 1))
            i = j + 1
        else:
            i += 1
    return spans


def line_words(line: str) -> list[str]:
    """One line's words and operators as sh splits them (quotes removed, comments cut); a line
    shlex cannot split (an unclosed quote) falls back to whitespace. A command substitution
    stays inside its word (`--rank=$(hostname | cut -d- -f2)` is one word, its `|` no
    operator of the line)."""
    line = _FD_REDIRECT.sub(" ", line)
    kept: dict[str, str] = {}
    for start, end in reversed(_substitutions(line)):
        token = f"__trainops_subst_{len(kept)}__"
        kept[token] = line[start:end]
        line = line[:start] + token + line[end:]
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
    except ValueError:
        words = line.split()
    for token, text in kept.items():
        words = [w.replace(token, text) for w in words]
    return words


def commands(words: list[str]) -> list[tuple[list[str], str]]:
    """`words` cut at the operators: each simple command with the operator after it (`` at
    the end)."""
    out: list[tuple[list[str], str]] = []
    current: list[str] = []
    for word in words:
        if word in OPERATORS:
            out.append((current, word))
            current = []
        else:
            current.append(word)
    out.append((current, ""))
    return [(c, op) for c, op in out if c]


def assignments(words: list[str]) -> dict[str, str]:
    """What a simple command assigns in the shell itself: `NAME=value` alone, or `export
    NAME=value ...` / `readonly`; not the `NAME=value cmd` prefix, which sets cmd's env only."""
    if words and words[0] in {"export", "readonly"}:
        words = words[1:]
    elif not all(_ASSIGNMENT.match(w) for w in words):
        return {}
    found = {}
    for word in words:
        match = _ASSIGNMENT.match(word)
        if match:
            found[match.group(1)] = match.group(2)
    return found
