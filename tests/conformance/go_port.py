"""The Go library functions the Argo CD port reads our objects with, ported so that they
behave as Go's do where a Python stand-in would not (each with its upstream test vectors in
test_go_port.py):

- `filepath_match`: Go's `path/filepath.Match` (Unix), what Argo CD's `isResourceInList` and
  `isNamedResourceInList` match kinds, groups and names with: `*`, `?`, `[...]`/`[^...]`,
  `\\` escapes; no `{a,b}`; a malformed pattern is `ErrBadPattern`, checked to the end.
- `glob_match`: github.com/gobwas/glob as Argo CD's `util/glob.Match` compiles it (`globMatch`,
  `DeriveServiceAccountToImpersonate`): `*`, `**`, `?`, `[...]`/`[!...]`, `{a,b}`, `\\`
  escapes; with separators, `*` and `?` stop at them and `**` does not. A pattern that does
  not compile is an error (`MatchWithError`) or no match (`Match`).
- `atoi`: Go's `strconv.Atoi`: an optional sign and ASCII digits, nothing else, in int64.
"""

from __future__ import annotations

import re


class BadPattern(ValueError):
    """Go's `filepath.ErrBadPattern`, gobwas' compile error."""


# ----------------------------------------------------------------- path/filepath.Match


def _scan_chunk(pattern: str) -> tuple[bool, str, str]:
    """match.go `scanChunk`: leading stars, then the chunk up to the next star outside []."""
    star = False
    while pattern.startswith("*"):
        pattern, star = pattern[1:], True
    in_range, i = False, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            i += 1
        elif c == "[":
            in_range = True
        elif c == "]":
            in_range = False
        elif c == "*" and not in_range:
            break
        i += 1
    return star, pattern[:i], pattern[i:]


def _get_esc(chunk: str) -> tuple[str, str]:
    """match.go `getEsc`: one (possibly escaped) character of a class."""
    if not chunk or chunk[0] in "-]":
        raise BadPattern(chunk)
    if chunk[0] == "\\":
        chunk = chunk[1:]
        if not chunk:
            raise BadPattern(chunk)
    r, rest = chunk[0], chunk[1:]
    if not rest:
        raise BadPattern(chunk)
    return r, rest


def _match_chunk(chunk: str, s: str) -> str | None:
    """match.go `matchChunk`: the rest of `s` after `chunk` matched its start, or None; the
    whole chunk is checked for syntax even after a mismatch."""
    failed = False
    while chunk:
        if not failed and not s:
            failed = True
        c = chunk[0]
        if c == "[":
            r = ""
            if not failed:
                r, s = s[0], s[1:]
            chunk = chunk[1:]
            negated = chunk.startswith("^")
            if negated:
                chunk = chunk[1:]
            matched, ranges = False, 0
            while True:
                if chunk.startswith("]") and ranges > 0:
                    chunk = chunk[1:]
                    break
                lo, chunk = _get_esc(chunk)
                hi = lo
                if chunk[0] == "-":
                    hi, chunk = _get_esc(chunk[1:])
                matched = matched or lo <= r <= hi
                ranges += 1
            failed = failed or matched == negated
        elif c == "?":
            if not failed:
                failed = s[0] == "/"
                s = s[1:]
            chunk = chunk[1:]
        else:
            if c == "\\":
                chunk = chunk[1:]
                if not chunk:
                    raise BadPattern(chunk)
            if not failed:
                failed = chunk[0] != s[0]
                s = s[1:]
            chunk = chunk[1:]
    return None if failed else s


def filepath_match(pattern: str, name: str) -> bool:
    """Go's `filepath.Match(pattern, name)` on Unix; raises BadPattern for a malformed one."""
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star and not chunk:
            return "/" not in name
        rest = _match_chunk(chunk, name)
        if rest is not None and (not rest or pattern):
            name = rest
            continue
        matched = False
        if star:
            for i in range(len(name)):
                if name[i] == "/":
                    break
                rest = _match_chunk(chunk, name[i + 1 :])
                if rest is not None:
                    if not pattern and rest:
                        continue
                    name, matched = rest, True
                    break
        if matched:
            continue
        while pattern:  # the remainder must be well-formed before answering no
            _, chunk, pattern = _scan_chunk(pattern)
            _match_chunk(chunk, "")
        return False
    return not name


def filepath_match_ok(pattern: str, name: str) -> bool:
    """`ok && err == nil`, as isResourceInList reads it."""
    try:
        return filepath_match(pattern, name)
    except BadPattern:
        return False


# ----------------------------------------------------------------- gobwas/glob


def _glob_class(pattern: str, i: int, one: str) -> tuple[str, int]:
    """`[...]` at `i`: the regex and the index after it (gobwas: `!` negates, `a-z` ranges)."""
    end = pattern.find("]", i + 1)
    if end < 0:
        raise BadPattern("unexpected end of input")
    body = pattern[i + 1 : end]
    negated = body.startswith("!")
    body = body[1:] if negated else body
    if not body:
        raise BadPattern("empty class")
    parts, j = [], 0
    while j < len(body):
        if j + 2 < len(body) and body[j + 1] == "-":
            parts.append(f"{re.escape(body[j])}-{re.escape(body[j + 2])}")
            j += 3
        else:
            parts.append(re.escape(body[j]))
            j += 1
    if negated:
        return f"(?:(?![{''.join(parts)}]){one})", end + 1
    return f"[{''.join(parts)}]", end + 1


def _glob_regex(pattern: str, separators: str) -> str:
    """A gobwas pattern as a Python regex (separators: what `*` and `?` stop at)."""
    one = f"[^{re.escape(separators)}]" if separators else "."
    out: list[str] = []
    depth, i = 0, 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 >= len(pattern):
                raise BadPattern("unexpected end of input")
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        if c == "*":
            if pattern.startswith("**", i):
                out.append(".*")
                i += 2
                continue
            out.append(one + "*")
        elif c == "?":
            out.append(one)
        elif c == "[":
            regex, i = _glob_class(pattern, i, one)
            out.append(regex)
            continue
        elif c == "{":
            depth += 1
            out.append("(?:")
        elif c == "}" and depth:
            depth -= 1
            out.append(")")
        elif c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise BadPattern("unexpected end of input")
    return "".join(out)


def glob_match_with_error(pattern: str, text: str, separators: str = "") -> bool:
    """util/glob `MatchWithError`: BadPattern when the pattern does not compile."""
    return re.fullmatch(_glob_regex(pattern, separators), text, re.DOTALL) is not None


def glob_match(pattern: str, text: str, separators: str = "") -> bool:
    """util/glob `Match`: a pattern that does not compile matches nothing."""
    try:
        return glob_match_with_error(pattern, text, separators)
    except BadPattern:
        return False


# ----------------------------------------------------------------- strconv.Atoi

_INT64 = (-(2**63), 2**63 - 1)


def atoi(text: str) -> int:
    """Go's `strconv.Atoi` (base 10, int64): ValueError for anything else, Python's int()
    accepting `" -1"`, `"1_0"` or full-width digits included."""
    if not re.fullmatch(r"[+-]?[0-9]+", text, re.ASCII):
        raise ValueError(f'strconv.Atoi: parsing "{text}": invalid syntax')
    value = int(text)
    if not _INT64[0] <= value <= _INT64[1]:
        raise ValueError(f'strconv.Atoi: parsing "{text}": value out of range')
    return value
