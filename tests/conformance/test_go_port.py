"""The Go behaviour the Argo CD port depends on, checked with upstream's own test tables
(go_port.py, gotemplate.py):

- Go's `path/filepath/match_test.go` `TestMatch` (`matchTests`, every row);
- Argo CD v3.5.1 `util/glob/glob_test.go` `Test_Match` and `Test_MatchWithError`, and the glob
  rows of `pkg/apis/application/v1alpha1/types_test.go` that need gobwas' own syntax;
- Go's `strconv/atoi_test.go` `parseInt64Tests` (what `TestAtoi` runs on a 64-bit build);
- Go's `text/template/exec_test.go` `execTests` rows in our subset and `TestMissingMapKey`,
  and `parse/lex_test.go`'s "trimming spaces before and after" (comment too).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conformance import go_port, gotemplate

BAD = "ErrBadPattern"
# (pattern, name, match or BAD)
MATCH_TESTS: list[tuple[str, str, bool | str]] = [
    ("abc", "abc", True), ("*", "abc", True), ("*c", "abc", True), ("a*", "a", True),
    ("a*", "abc", True), ("a*", "ab/c", False), ("a*/b", "abc/b", True), ("a*/b", "a/c/b", False),
    ("a*b*c*d*e*/f", "axbxcxdxe/f", True), ("a*b*c*d*e*/f", "axbxcxdxexxx/f", True),
    ("a*b*c*d*e*/f", "axbxcxdxe/xxx/f", False), ("a*b*c*d*e*/f", "axbxcxdxexxx/fff", False),
    ("a*b?c*x", "abxbbxdbxebxczzx", True), ("a*b?c*x", "abxbbxdbxebxczzy", False),
    ("ab[c]", "abc", True), ("ab[b-d]", "abc", True), ("ab[e-g]", "abc", False),
    ("ab[^c]", "abc", False), ("ab[^b-d]", "abc", False), ("ab[^e-g]", "abc", True),
    ("a\\*b", "a*b", True), ("a\\*b", "ab", False), ("a?b", "a☺b", True), ("a[^a]b", "a☺b", True),
    ("a???b", "a☺b", False), ("a[^a][^a][^a]b", "a☺b", False), ("[a-ζ]*", "\u03b1", True),
    ("*[a-ζ]", "A", False), ("a?b", "a/b", False), ("a*b", "a/b", False),
    ("[\\]a]", "]", True), ("[\\-]", "-", True), ("[x\\-]", "x", True), ("[x\\-]", "-", True),
    ("[x\\-]", "z", False), ("[\\-x]", "x", True), ("[\\-x]", "-", True), ("[\\-x]", "a", False),
    ("[]a]", "]", BAD), ("[-]", "-", BAD), ("[x-]", "x", BAD), ("[x-]", "-", BAD),
    ("[x-]", "z", BAD), ("[-x]", "x", BAD), ("[-x]", "-", BAD), ("[-x]", "a", BAD),
    ("\\", "a", BAD), ("[a-b-c]", "a", BAD), ("[", "a", BAD), ("[^", "a", BAD),
    ("[^bc", "a", BAD), ("a[", "a", BAD), ("a[", "ab", BAD), ("a[", "x", BAD),
    ("a/b[", "x", BAD), ("*x", "xxx", True),
]  # fmt: skip


@pytest.mark.parametrize(("pattern", "name", "expected"), MATCH_TESTS)
def test_filepath_match(pattern: str, name: str, expected: bool | str) -> None:
    if expected == BAD:
        with pytest.raises(go_port.BadPattern):
            go_port.filepath_match(pattern, name)
        assert go_port.filepath_match_ok(pattern, name) is False
    else:
        assert go_port.filepath_match(pattern, name) is expected


def test_filepath_match_has_no_alternatives() -> None:
    """Argo CD's resource lists use filepath.Match: `{a,b}` is two literal braces there."""
    assert go_port.filepath_match("{Job,CronJob}", "Job") is False
    assert go_port.filepath_match("{Job,CronJob}", "{Job,CronJob}") is True


# util/glob Test_Match / Test_MatchWithError: (input, pattern, result, error)
GLOB_TESTS = [
    ("hello", "hello", True, ""), ("hello", "hell", False, ""), ("hello", "hell*", True, ""),
    ("hello", "h*", True, ""), ("hello", "e*", False, ""),
    ("e[[a*", "e[[a*", False, "unexpected end of input"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "pattern", "result", "error"), GLOB_TESTS)
def test_glob_match(text: str, pattern: str, result: bool, error: str) -> None:
    assert go_port.glob_match(pattern, text) is result
    if error:
        with pytest.raises(go_port.BadPattern, match=error):
            go_port.glob_match_with_error(pattern, text)
    else:
        assert go_port.glob_match_with_error(pattern, text) is result


def test_glob_syntax_argo_cd_relies_on() -> None:
    """types_test.go: `!{kube-system,argocd}` (alternatives), `https://gitlab.com/group/*`
    against a deeper path with `/` separators (no), `**` (yes), `*.default.svc` without
    separators (yes); gobwas' `[!...]` negates a class."""
    assert go_port.glob_match("{kube-system,argocd}", "argocd")
    assert not go_port.glob_match("{kube-system,argocd}", "default")
    sep = "/"
    assert not go_port.glob_match(
        "https://gitlab.com/group/*", "https://gitlab.com/group/repo/owner", sep
    )
    assert go_port.glob_match(
        "https://gitlab.com/group/*/*", "https://gitlab.com/group/repo/owner", sep
    )
    assert go_port.glob_match("https://gitlab.com/group/**", "https://gitlab.com/group/a/b/c", sep)
    assert go_port.glob_match("https://*.default.svc", "https://kubernetes.default.svc")
    assert go_port.glob_match("[!a]bc", "xbc") and not go_port.glob_match("[!a]bc", "abc")


# strconv parseInt64Tests: (in, out or the error)
ATOI_TESTS: list[tuple[str, int | str]] = [
    ("", "syntax"), ("0", 0), ("-0", 0), ("+0", 0), ("1", 1), ("-1", -1), ("+1", 1),
    ("12345", 12345), ("-12345", -12345), ("012345", 12345), ("-012345", -12345),
    ("98765432100", 98765432100), ("-98765432100", -98765432100),
    ("9223372036854775807", 2**63 - 1), ("-9223372036854775807", -(2**63 - 1)),
    ("9223372036854775808", "range"), ("-9223372036854775808", -(2**63)),
    ("9223372036854775809", "range"), ("-9223372036854775809", "range"),
    ("-1_2_3_4_5", "syntax"), ("-_12345", "syntax"), ("_12345", "syntax"),
    ("1__2345", "syntax"), ("12345_", "syntax"), ("123%45", "syntax"),
    # Ours (issue 33): what Python's int() reads and Go does not.
    (" -1", "syntax"), ("1_0", "syntax"), ("\uff11", "syntax"), ("-1 ", "syntax"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), ATOI_TESTS)
def test_atoi(text: str, expected: int | str) -> None:
    if isinstance(expected, int):
        assert go_port.atoi(text) == expected
    else:
        with pytest.raises(
            ValueError, match="invalid syntax" if expected == "syntax" else "out of range"
        ):
            go_port.atoi(text)


TVAL: dict[str, Any] = {
    "X": "x", "U": {"V": "v"}, "MSI": {"one": 1, "two": 2, "three": 3}, "MSIEmpty": {},
    "MXI": {}, "SI": [3, 4, 5], "SIEmpty": [], "FloatZero": 0.0, "I": 17,
}  # fmt: skip
# execTests rows in the subset: (name, input, output, ok)
EXEC_TESTS = [
    ("empty", "", "", True), ("text", "some text", "some text", True),
    ("nil action", "{{nil}}", "", False), (".X", "-{{.X}}-", "-x-", True),
    (".U.V", "-{{.U.V}}-", "-v-", True), ("map .one", "{{.MSI.one}}", "1", True),
    ("map .two", "{{.MSI.two}}", "2", True), ("map .NO", "{{.MSI.NO}}", "<no value>", True),
    ("if true", "{{if true}}TRUE{{end}}", "TRUE", True),
    ("if false", "{{if false}}TRUE{{else}}FALSE{{end}}", "FALSE", True),
    ("if nil", "{{if nil}}TRUE{{end}}", "", False),
    ("if 1", "{{if 1}}NON-ZERO{{else}}ZERO{{end}}", "NON-ZERO", True),
    ("if 0", "{{if 0}}NON-ZERO{{else}}ZERO{{end}}", "ZERO", True),
    ("if 1.5", "{{if 1.5}}NON-ZERO{{else}}ZERO{{end}}", "NON-ZERO", True),
    ("if 0.0", "{{if .FloatZero}}NON-ZERO{{else}}ZERO{{end}}", "ZERO", True),
    ("if emptystring", "{{if ``}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY", True),
    ("if string", "{{if `notempty`}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY", True),
    ("if emptyslice", "{{if .SIEmpty}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY", True),
    ("if slice", "{{if .SI}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY", True),
    ("if emptymap", "{{if .MSIEmpty}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY", True),
    ("if map", "{{if .MSI}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY", True),
    ("if map unset", "{{if .MXI.none}}NON-ZERO{{else}}ZERO{{end}}", "ZERO", True),
    ("if map not unset", "{{if not .MXI.none}}ZERO{{else}}NON-ZERO{{end}}", "ZERO", True),
    ("if else if", "{{if false}}FALSE{{else if true}}TRUE{{end}}", "TRUE", True),
    ("if else chain", "{{if eq 1 3}}1{{else if eq 2 3}}2{{else if eq 3 3}}3{{end}}", "3", True),
    ("print", '{{print "hello, print"}}', "hello, print", True),
    ("print 123", "{{print 1 2 3}}", "1 2 3", True),
    ("print nil", "{{print nil}}", "<nil>", True),
    ("trimming spaces before and after", "hello- {{- 3 -}} -world", "hello-3-world", True),
    ("trimming spaces before and after comment", "hello- {{- /* hello */ -}} -world",
     "hello--world", True),
]  # fmt: skip


@pytest.mark.parametrize(("name", "text", "output", "ok"), EXEC_TESTS)
def test_exec(name: str, text: str, output: str, ok: bool) -> None:
    if ok:
        assert gotemplate.execute(text, TVAL) == output, name
    else:
        with pytest.raises(gotemplate.TemplateError):
            gotemplate.execute(text, TVAL)


def test_missing_map_key() -> None:
    """TestMissingMapKey: `<no value>` by default, an error with missingkey=error (a nil data
    value too)."""
    data = {"x": 99}
    assert gotemplate.execute("{{.x}} {{.y}}", data) == "99 <no value>"
    assert gotemplate.execute("{{.x}} {{.y}}", data, ("missingkey=default",)) == "99 <no value>"
    with pytest.raises(gotemplate.TemplateError):
        gotemplate.execute("{{.x}} {{.y}}", data, ("missingkey=error",))
    with pytest.raises(gotemplate.TemplateError):
        gotemplate.execute("{{.x}} {{.y}}", None, ("missingkey=error",))


def test_outside_the_subset_is_refused_not_guessed() -> None:
    for text in ("{{range .SI}}{{.}}{{end}}", "{{with .X}}{{.}}{{end}}", "{{ .X | upper }}"):
        with pytest.raises(NotImplementedError):
            gotemplate.execute(text, TVAL)


def test_to_json_is_go_json_marshal() -> None:
    """sprig toJson is encoding/json: sorted keys, no spaces, HTML characters escaped."""
    value = {"b": [1, True, None], "a": "<x & y>"}
    assert gotemplate.to_json(value) == '{"a":"\\u003cx \\u0026 y\\u003e","b":[1,true,null]}'
