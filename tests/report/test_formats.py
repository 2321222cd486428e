"""Findings in every output format: text, json, junit, sarif (with rule metadata), github."""

from __future__ import annotations

import json

import jsonschema

from tests.tools import REPO
from trainops.core.findings import Finding, Severity
from trainops.report import formats as report
from trainops.rules import RULES

FINDINGS = [
    Finding("schema", Severity.ERROR, "spec.x: unknown field", "a.yaml", 3, "Pod", "p", "ns", "c1"),
    Finding("gpu-limit", Severity.WARNING, "50%, done", "b.yaml", None, "Job", "j"),
]


def test_report_formats() -> None:
    text = report.render("text", FINDINGS, 2)
    assert "a.yaml:3: error" in text and "ns/Pod/p @c1" in text and "FAILED" in text
    assert "\033[" not in text and "\033[31m" in report.render("text", FINDINGS, 2, color=True)
    github = report.render("github", FINDINGS, 2).splitlines()
    assert github[0] == (
        "::error file=a.yaml,line=3,title=trainops schema::ns/Pod/p @c1: spec.x: unknown field"
    )
    assert github[1] == "::warning file=b.yaml,title=trainops gpu-limit::Job/j: 50%25, done"
    sarif = json.loads(report.render("sarif", FINDINGS, 2))
    run = sarif["runs"][0]
    assert sarif["version"] == "2.1.0"
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == ["gpu-limit", "schema"]
    assert run["results"][0]["locations"][0]["physicalLocation"]["region"] == {"startLine": 3}
    junit = report.render("junit", FINDINGS, 2)
    assert 'failures="1"' in junit and "<failure" in junit and "<system-out>warning" in junit
    assert json.loads(report.render("json", [], 5))["summary"] == {
        "resources": 5,
        "errors": 0,
        "warnings": 0,
    }


# The parts of the SARIF 2.1.0 schema (sarif-schema-2.1.0.json) our log uses, as the OASIS
# standard defines them: sarifLog (3.13), run (3.14), toolComponent (3.19), reportingDescriptor
# (3.49: `id` required), multiformatMessageString (3.12: `text` required), reportingConfiguration
# (3.50: level none|note|warning|error), result (3.27), physicalLocation (3.29), region (3.30:
# startLine >= 1).
_MESSAGE = {
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string", "minLength": 1}, "markdown": {"type": "string"}},
    "additionalProperties": False,
}
_LEVEL = {"enum": ["none", "note", "warning", "error"]}
SARIF_SUBSET = {
    "type": "object",
    "required": ["version", "runs"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "version": {"const": "2.1.0"},
        "runs": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["tool"],
                "properties": {
                    "tool": {
                        "type": "object",
                        "required": ["driver"],
                        "properties": {
                            "driver": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "version": {"type": "string"},
                                    "informationUri": {"type": "string", "format": "uri"},
                                    "rules": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "required": ["id", "shortDescription"],
                                            "properties": {
                                                "id": {"type": "string"},
                                                "name": {"type": "string"},
                                                "shortDescription": _MESSAGE,
                                                "fullDescription": _MESSAGE,
                                                "help": _MESSAGE,
                                                "helpUri": {"type": "string", "format": "uri"},
                                                "defaultConfiguration": {
                                                    "type": "object",
                                                    "properties": {"level": _LEVEL},
                                                    "additionalProperties": False,
                                                },
                                            },
                                            "additionalProperties": False,
                                        },
                                    },
                                },
                                "additionalProperties": False,
                            }
                        },
                    },
                    "results": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["message"],
                            "properties": {
                                "ruleId": {"type": "string"},
                                "ruleIndex": {"type": "integer", "minimum": -1},
                                "level": _LEVEL,
                                "message": _MESSAGE,
                                "locations": {
                                    "type": "array",
                                    "items": {
                                        "type": "object",
                                        "properties": {
                                            "physicalLocation": {
                                                "type": "object",
                                                "properties": {
                                                    "artifactLocation": {
                                                        "type": "object",
                                                        "required": ["uri"],
                                                        "properties": {
                                                            "uri": {
                                                                "type": "string",
                                                                "format": "uri-reference",
                                                            }
                                                        },
                                                    },
                                                    "region": {
                                                        "type": "object",
                                                        "properties": {
                                                            "startLine": {
                                                                "type": "integer",
                                                                "minimum": 1,
                                                            }
                                                        },
                                                    },
                                                },
                                            }
                                        },
                                    },
                                },
                            },
                        },
                    },
                    "properties": {"type": "object"},
                },
            },
        },
    },
}


def test_sarif_rules_carry_descriptions_from_rule_metadata() -> None:
    policy = RULES[0]
    findings = [
        Finding(rule, Severity.ERROR, "m", "a.yaml", 2) for rule in ("schema", "build", "spec")
    ] + [
        Finding("drift", Severity.ERROR, "stale", "base/x/kustomization.yaml"),
        Finding(policy.slug, policy.severity, "m", "b.yaml", 3, "PyTorchJob", "j"),
    ]
    sarif = json.loads(report.render("sarif", findings, 2))
    jsonschema.validate(sarif, SARIF_SUBSET, format_checker=jsonschema.FormatChecker())
    run = sarif["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"schema", "build", "spec", "drift", policy.slug}
    for rule_id in ("schema", "build", "spec", "drift"):
        assert rules[rule_id]["shortDescription"]["text"] == report.BUILTIN_RULES[rule_id][0]
        assert rules[rule_id]["help"]["text"] == report.BUILTIN_RULES[rule_id][1]
    described = rules[policy.slug]
    assert described["shortDescription"] == {"text": policy.summary}
    assert described["fullDescription"] == {"text": policy.why}
    assert (
        policy.fix in described["help"]["text"]
        and policy.example.strip() in (described["help"]["markdown"])
    )
    assert described["defaultConfiguration"] == {"level": policy.severity.value}
    # The help anchor is a real section of the generated rules page.
    anchor = described["helpUri"].rpartition("#")[2]
    assert f"## {anchor}\n" in (REPO / "docs/rules.md").read_text()
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
