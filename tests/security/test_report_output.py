"""Issue 29.7: what a finding quotes (a file name, a value) cannot break or hijack the report
that carries it: the JUnit XML a CI parses, the GitHub workflow commands on the runner's log,
the links of the HTML report a reviewer opens."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from urllib.parse import urlsplit

from trainops.core.findings import Finding, Severity
from trainops.report import formats
from trainops.report.capacity import Fleet
from trainops.report.html import render_html

ESC = "\x1b"
HOSTILE = Finding(
    "schema",
    Severity.ERROR,
    f"value {ESC}[31mred{ESC}[0m and \ufffe",
    file=f"jobs/x{ESC}.yaml",
    line=3,
    kind="PyTorchJob",
    name=f"a{ESC}b",
)


def test_junit_with_an_escape_character_is_well_formed_xml() -> None:
    """XML 1.0 `Char` excludes C0 controls but tab/LF/CR: expat (the parser behind
    ElementTree, and the one JUnit readers such as Jenkins' use the like of) refuses the
    document at the first ESC. The character is shown escaped, as in the text format."""
    document = formats.to_junit([HOSTILE], 1)
    root = ET.fromstring(document)
    [failure] = root.iter("failure")
    assert "\\x1b[31mred" in (failure.get("message") or "")
    assert ESC not in document


def test_github_annotations_print_no_raw_control_character() -> None:
    """The runner's log is a terminal stream: a raw ESC repaints it. actions/toolkit's
    escapeData covers %, CR and LF only; the rest is escaped like the text format's."""
    out = formats.to_github([HOSTILE], 1)
    assert ESC not in out
    assert "\\x1b[31mred" in out


class _Hrefs(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hrefs += [value or "" for name, value in attrs if tag == "a" and name == "href"]


def _hrefs(page: str) -> list[str]:
    parser = _Hrefs()
    parser.feed(page)
    return parser.hrefs


def _finding(file: str) -> Finding:
    return Finding("schema", Severity.ERROR, "bad", file=file, line=1)


def test_html_report_links_only_to_relative_paths() -> None:
    """A manifest named `javascript:alert(document.domain).yaml`, validated by bare name,
    became `href="javascript:..."`. The browser (WHATWG URL parsing, what html.parser's
    attribute value is handed to) reads a scheme up to the first `:` before any `/`: the
    link must have none, nor be network-path (`//host`) or absolute."""
    files = ["javascript:alert(document.domain).yaml", "//evil.example/x.yaml", "/etc/x.yaml"]
    page = render_html(Fleet(), [_finding(f) for f in files])
    hrefs = _hrefs(page)
    assert hrefs, page
    for href in hrefs:
        parts = urlsplit(href)
        assert not parts.scheme and not parts.netloc and not href.startswith("/"), href
    assert "javascript:alert(document.domain).yaml:1" in page  # still shown, as text


def test_html_report_links_under_the_link_base() -> None:
    base = "https://github.com/example/trainops/blob/abc123/"
    page = render_html(Fleet(), [_finding("jobs/a b.yaml")], link_base=base)
    assert _hrefs(page) == [f"{base}jobs/a%20b.yaml#L1"]
