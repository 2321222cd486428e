"""Findings to text: one pure function per output format.

Shared by every command that reports (validate, policy rules, drift): each takes
the findings and the number of resources checked and returns the whole output,
deterministically (findings sorted, no timestamps), so the CLI only prints it.

Formats: `text` (humans; grouped by file, ANSI colour when asked), `json` (the
DESIGN.md contract), `junit` (CI test reports), `sarif` (GitHub code scanning),
`github` (workflow commands that annotate the pull request diff).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from itertools import groupby
from pathlib import Path
from typing import Any
from xml.sax.saxutils import quoteattr

from trainops import __version__
from trainops.core.errors import InputError, Problem
from trainops.core.findings import Finding, Severity
from trainops.core.text import one_line
from trainops.report.places import related_from_json, sarif_related, where
from trainops.rules import RULES_BY_SLUG

FORMATS = ("text", "json", "junit", "sarif", "github")

# SARIF 2.1.0 is the version GitHub code scanning accepts:
# https://docs.github.com/en/code-security/code-scanning/integrating-with-code-scanning/sarif-support-for-code-scanning
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
TOOL_URI = "https://github.com/example/trainops"

# Where a rule's help lives: policy rules have a section each in docs/rules.md (generated
# from their metadata); the built-in checks are described in docs/validate.md.
RULES_DOC = f"{TOOL_URI}/blob/main/docs/rules.md"
VALIDATE_DOC = f"{TOOL_URI}/blob/main/docs/validate.md"

# The findings that are not policy rules: (one-line summary, what to do).
BUILTIN_RULES: dict[str, tuple[str, str]] = {
    "schema": (
        "An object violates the strict JSON Schema of its kind (Kubernetes core, the project's"
        " CRD schemas or --crds), has no name or schema, or carries a committed status.",
        "Fix the field the message names: unknown fields are typos or belong elsewhere; a kind"
        " with no schema needs --crds DIR with its CustomResourceDefinition.",
    ),
    "build": (
        "`kustomize build` of an overlay failed or printed something that is not Kubernetes"
        " objects.",
        "Run `kustomize build overlays/<cluster>` to see kustomize's own error, fix the"
        " inputs and re-run `trainops render`.",
    ),
    "spec": (
        "Bad input: a job or cluster spec violating its schema, unreadable YAML, or a malformed"
        " CustomResourceDefinition (exit code 2).",
        "Fix the file and line the message names; nothing else was checked.",
    ),
    "drift": (
        "Generated output (base/, overlays/, gitops/) is not what `trainops render` writes.",
        "Run `trainops render` and commit the result.",
    ),
    "server": (
        "The cluster's API server refused a dry-run server-side apply of the object"
        " (`validate --server-side`): an admission webhook, a quota, a CEL rule, a missing CRD"
        " or namespace.",
        "Read the server's message in the finding: change the object in Git, or ask the"
        " cluster's admins (quota, webhook policy, CRD, namespace); see docs/cluster.md.",
    ),
}

_COLOURS = {Severity.ERROR: "\033[31m", Severity.WARNING: "\033[33m"}
_BOLD, _DIM, _RESET = "\033[1m", "\033[2m", "\033[0m"


def summary(findings: Sequence[Finding], resources: int) -> dict[str, Any]:
    """Counts; waived findings are counted apart (`waived`, present when there are any);
    the security rules cluster profiles switch off (`rulesOff`, `rule (cluster)`, present
    when there are any: said in every run, not only when something breaks them)."""
    counted = [f for f in findings if f.waived is None]
    waived = len(findings) - len(counted)
    off = rules_off(findings)
    return {
        "resources": resources,
        "errors": sum(1 for f in counted if f.severity is Severity.ERROR),
        "warnings": sum(1 for f in counted if f.severity is Severity.WARNING),
        **({"waived": waived} if waived else {}),
        **({"rulesOff": off} if off else {}),
    }


def rules_off(findings: Sequence[Finding]) -> list[str]:
    """`rule (cluster)` of each security rule a cluster profile's `policy` switches off."""
    return sorted({f"{f.rule} ({f.cluster})" for f in findings if f.switched_off})


def failed(findings: Sequence[Finding]) -> bool:
    """Whether a run fails (exit 1): an error finding that no waiver covers."""
    return any(f.severity is Severity.ERROR and f.waived is None for f in findings)


def _waived_suffix(s: dict[str, Any]) -> str:
    """The summary line's end: waived findings, and the security rules switched off."""
    text = f", {s['waived']} waived" if s.get("waived") else ""
    if s.get("rulesOff"):
        text += f"; security rules off by cluster policy: {', '.join(s['rulesOff'])}"
    return text


def _sorted(findings: Sequence[Finding]) -> list[Finding]:
    return sorted(findings, key=Finding.sort_key)


def _object(f: Finding) -> str:
    if f.related:
        return f"({where(f)})"
    if not f.kind:
        return ""
    text = f"{f.kind}/{f.name or '?'}"
    if f.namespace:
        text = f"{f.namespace}/{text}"
    if f.cluster:
        text += f" @{f.cluster}"
    return text


def to_text(findings: Sequence[Finding], resources: int, *, color: bool = False) -> str:
    """Grouped by file; `file:line` first so terminals and editors can jump to it."""

    def paint(code: str, text: str) -> str:
        return f"{code}{text}{_RESET}" if color else text

    lines: list[str] = []
    for raw_file, group in groupby(_sorted(findings), key=lambda f: f.file or "(no file)"):
        file = one_line(raw_file)
        lines.append(paint(_BOLD, file))
        for f in group:
            where = f"{file}:{f.line}" if f.line else file
            sev = paint(_COLOURS[f.severity], f"{f.severity.value:7}")
            if f.waived is not None:
                sev = paint(_DIM, "waived ")
            obj = one_line(_object(f))
            obj_text = f" {paint(_DIM, obj)}" if obj else ""
            message = one_line(f.message)
            if f.waived is not None:
                message += f" (waived {f.severity.value}: {one_line(f.waived)})"
            lines.append(f"  {where}: {sev} [{f.rule}]{obj_text} {message}")
    s = summary(findings, resources)
    status = "FAILED" if s["errors"] else "ok"
    lines.append(
        f"{status}: {s['resources']} resource(s) checked, {s['errors']} error(s),"
        f" {s['warnings']} warning(s){_waived_suffix(s)}"
    )
    return "\n".join(lines) + "\n"


def to_json(findings: Sequence[Finding], resources: int) -> str:
    document = {
        "findings": [f.to_dict() for f in _sorted(findings)],
        "summary": summary(findings, resources),
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


FINDING_KEYS = ("file", "line", "kind", "name", "namespace", "cluster", "waived")
"""The optional fields of a JSON finding, as `to_json` writes them."""


def from_json(path: Path) -> list[Finding]:
    """The findings of a `trainops validate --format json` file; InputError when it is not."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return [
            Finding(
                str(f["rule"]),
                Severity(f["severity"]),
                str(f["message"]),
                **{k: f.get(k) for k in FINDING_KEYS},
                switched_off=f.get("switchedOff") is True,
                related=related_from_json(f),
            )
            for f in data["findings"]
        ]
    except (ValueError, KeyError, TypeError, RecursionError) as err:
        raise InputError(
            Problem.whole_file(
                str(path),
                f"not `trainops validate --format json` output ({err}): write it with"
                " `trainops validate --format json > FILE`",
            )
        ) from None


def to_junit(findings: Sequence[Finding], resources: int) -> str:
    """One test case per finding (errors fail, warnings pass with output); one per clean run."""
    s = summary(findings, resources)
    cases: list[str] = []
    for f in _sorted(findings):
        name = _attr(f"[{f.rule}] {_object(f) or f.file or ''}".strip())
        classname = _attr(f.file or "trainops")
        where = f"{f.file}:{f.line}" if f.line else (f.file or "")
        body = _attr(f.message)
        text = _xml_text(f"{where}: {f.message}")
        if f.waived is not None:
            # JUnit's `skipped`: shown, not failed (the reason is the waiver's).
            reason = _attr(f"waived {f.severity.value}: {f.waived}")
            inner = f"<skipped message={reason}/><system-out>{text}</system-out>"
        elif f.severity is Severity.ERROR:
            inner = f'<failure message={body} type="{f.rule}">{text}</failure>'
        else:
            inner = f"<system-out>warning: {text}</system-out>"
        cases.append(f"    <testcase classname={classname} name={name}>{inner}</testcase>")
    if not findings:
        cases.append(
            f'    <testcase classname="trainops" name="{resources} resource(s) valid"></testcase>'
        )
    tests = max(len(findings), 1)
    # JUnit's testsuite <properties>: the run's settings, where the rules switched off go.
    values = "".join(
        f'<property name="security-rule-off" value={_attr(off)}/>' for off in s.get("rulesOff", [])
    )
    properties = [f"    <properties>{values}</properties>"] if values else []
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<testsuites name="trainops" tests="{tests}" failures="{s["errors"]}">\n'
        f'  <testsuite name="trainops validate" tests="{tests}" failures="{s["errors"]}"'
        f' errors="0" skipped="{s.get("waived", 0)}">\n'
        + "\n".join(properties + cases)
        + "\n  </testsuite>\n</testsuites>\n"
    )


def _xml_text(text: str) -> str:
    return _xml_chars(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# XML 1.0 (section 2.2, `Char`) has no C0 controls but tab, LF and CR, no surrogates and no
# U+FFFE/U+FFFF, not even as character references: a parser stops at the first one.
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _xml_chars(text: str) -> str:
    """`text` with control characters escaped (`one_line`) and other non-XML characters as
    `\\uXXXX`, so a value holding an ESC still makes a well-formed report."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", one_line(text))


def _attr(text: str) -> str:
    return quoteattr(_xml_chars(text))


def to_sarif(findings: Sequence[Finding], resources: int) -> str:
    """SARIF 2.1.0 log with one run; every rule id that occurs is declared in the driver."""
    ordered = _sorted(findings)
    rule_ids = sorted({f.rule for f in ordered})
    results: list[dict[str, Any]] = []
    for f in ordered:
        result: dict[str, Any] = {
            "ruleId": f.rule,
            "ruleIndex": rule_ids.index(f.rule),
            "level": _sarif_level(f.severity),
            "message": {"text": f"{_object(f)}: {f.message}" if _object(f) else f.message},
        }
        if f.file:
            physical: dict[str, Any] = {"artifactLocation": {"uri": f.file}}
            if f.line:
                physical["region"] = {"startLine": f.line}
            result["locations"] = [{"physicalLocation": physical}]
        result.update(sarif_related(f))
        if f.waived is not None:
            # SARIF 2.1.0 3.27.23 / 3.35: an in-source suppression with its justification;
            # GitHub code scanning shows a suppressed result as dismissed, not open.
            result["suppressions"] = [
                {"kind": "inSource", "status": "accepted", "justification": f.waived}
            ]
        results.append(result)
    log = {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "trainops",
                        "version": __version__,
                        "informationUri": TOOL_URI,
                        "rules": [sarif_rule(r) for r in rule_ids],
                    }
                },
                "results": results,
                "properties": {"resources": resources, **_off_property(ordered)},
            }
        ],
    }
    return json.dumps(log, indent=2, sort_keys=True) + "\n"


def rules_off_markdown(off: Sequence[str]) -> str:
    """The PR comment's word on the security rules cluster profiles switch off (`rule
    (cluster)`), in every comment while they are off; empty when none is."""
    if not off:
        return ""
    return (
        "> [!CAUTION]\n> Security rules switched off by cluster policy (their findings are"
        f" listed as waived and fail no check): {', '.join(f'`{o}`' for o in off)}.\n"
    )


def _off_property(findings: Sequence[Finding]) -> dict[str, Any]:
    off = rules_off(findings)
    return {"rulesOff": off} if off else {}


def _sarif_level(severity: Severity) -> str:
    return "error" if severity is Severity.ERROR else "warning"


def sarif_rule(rule_id: str) -> dict[str, Any]:
    """SARIF `reportingDescriptor` for a rule id, from the policy rule's own metadata."""
    rule = RULES_BY_SLUG.get(rule_id)
    if rule is not None:
        markdown = f"{rule.why}\n\n**Fix:** {rule.fix}\n\n```yaml\n{rule.example.rstrip()}\n```"
        if rule.references:
            markdown += "\n\n" + "\n".join(f"- <{ref}>" for ref in rule.references)
        return {
            "id": rule_id,
            "name": rule_id,
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.why},
            "help": {"text": f"{rule.why}\n\nFix: {rule.fix}", "markdown": markdown},
            "helpUri": f"{RULES_DOC}#{rule_id}",
            "defaultConfiguration": {"level": _sarif_level(rule.severity)},
        }
    summary, fix = BUILTIN_RULES.get(rule_id, (f"trainops {rule_id}", ""))
    descriptor: dict[str, Any] = {
        "id": rule_id,
        "name": rule_id,
        "shortDescription": {"text": summary},
    }
    if fix:
        descriptor["help"] = {"text": fix}
        descriptor["helpUri"] = VALIDATE_DOC
        descriptor["defaultConfiguration"] = {"level": "error"}
    return descriptor


def _escape_data(text: str) -> str:
    # https://github.com/actions/toolkit/blob/main/packages/core/src/command.ts (escapeData);
    # other control characters (ESC starts terminal sequences on the runner's log) are
    # escaped as in the text format.
    escaped = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return one_line(escaped)


def _escape_property(text: str) -> str:
    # Same source (escapeProperty): properties also escape ':' and ','.
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def to_github(findings: Sequence[Finding], resources: int) -> str:
    """GitHub Actions workflow commands: `::error file=F,line=L,title=T::message`."""
    lines: list[str] = []
    for f in _sorted(findings):
        props = []
        if f.file:
            props.append(f"file={_escape_property(f.file)}")
            if f.line:
                props.append(f"line={f.line}")
        props.append(f"title={_escape_property(f'trainops {f.rule}')}")
        obj = _object(f)
        message = f"{obj}: {f.message}" if obj else f.message
        level = f.severity.value
        if f.waived is not None:
            # A notice annotates the diff without failing the check.
            level, message = "notice", f"waived {level}: {message} ({f.waived})"
        lines.append(f"::{level} {','.join(props)}::{_escape_data(message)}")
    s = summary(findings, resources)
    lines.append(
        f"{s['resources']} resource(s) checked, {s['errors']} error(s),"
        f" {s['warnings']} warning(s){_waived_suffix(s)}"
    )
    return "\n".join(lines) + "\n"


RENDERERS: dict[str, Callable[[Sequence[Finding], int], str]] = {
    "text": to_text,
    "json": to_json,
    "junit": to_junit,
    "sarif": to_sarif,
    "github": to_github,
}


def render(fmt: str, findings: Sequence[Finding], resources: int, *, color: bool = False) -> str:
    """The report in format `fmt` (one of FORMATS)."""
    if fmt == "text":
        return to_text(findings, resources, color=color)
    return RENDERERS[fmt](findings, resources)
