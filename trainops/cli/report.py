"""Write one self-contained HTML report of the fleet: capacity, placement, findings.

GPU capacity charts per cluster (declared against requested by Git), the jobs x clusters
placement table, and the validation findings grouped by rule and file with links to the
lines. Inline CSS and SVG, no script or CDN: it opens offline and as a CI artifact.
Findings come from `--findings FILE` (what `trainops validate --format json` printed, so CI
validates once), else from validating the repository here (kustomize builds every overlay).
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from trainops import build
from trainops.cli import progress
from trainops.cli.load import load
from trainops.core.errors import InputError, Problem
from trainops.core.findings import Finding, Severity
from trainops.report import capacity
from trainops.report.html import render_html
from trainops.validate.repo import validate_repository

FINDING_KEYS = ("file", "line", "kind", "name", "namespace", "cluster", "waived")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, help="the HTML file to write")
    parser.add_argument(
        "--findings",
        type=Path,
        metavar="FILE",
        help="`trainops validate --format json` output to show instead of validating again",
    )
    parser.add_argument(
        "--link-base",
        default=None,
        help="prefix of finding links, e.g. https://github.com/ORG/REPO/blob/SHA/"
        " (default: the path from the report back to the repository root)",
    )
    parser.add_argument("--title", default="trainops report")
    progress.add_argument(parser)


def read_findings(path: Path) -> list[Finding]:
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
            )
            for f in data["findings"]
        ]
    except (ValueError, KeyError, TypeError) as err:
        raise InputError(
            Problem(
                str(path),
                None,
                None,
                f"not `trainops validate --format json` output ({err}): write it with"
                " `trainops validate --format json > FILE`",
            )
        ) from None


def run(args: argparse.Namespace) -> int:
    root: Path = args.root
    repo = load(root)
    if args.findings:
        findings = read_findings(args.findings)
    else:
        with progress.Progress.for_args(args, "report", len(repo.clusters)) as shown:
            findings = validate_repository(root, repo, run=shown.wrap(build.kustomize)).findings
    fleet = capacity.repository_fleet(repo)
    link_base = args.link_base
    if link_base is None:
        rel = Path(os.path.relpath(root.resolve(), args.out.resolve().parent)).as_posix()
        link_base = "" if rel == "." else f"{rel}/"
    args.out.write_text(render_html(fleet, findings, title=args.title, link_base=link_base))
    return 0
