"""Write one self-contained HTML report of the fleet: capacity, placement, findings.

GPU capacity charts per cluster (declared against requested by Git), the jobs x clusters
placement table, and the validation findings grouped by rule and file with links to the
lines. Inline CSS and SVG, no script or CDN: it opens offline and as a CI artifact.
Findings come from `--findings FILE` (what `trainops validate --format json` printed, so CI
validates once), else from validating the repository here (kustomize builds every overlay).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from trainops import build
from trainops.cli import progress
from trainops.cli.load import load
from trainops.report import capacity, formats, html
from trainops.validate.repo import validate_repository


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


def run(args: argparse.Namespace) -> int:
    root: Path = args.root
    repo = load(root)
    if args.findings:
        findings = formats.from_json(args.findings)
    else:
        with progress.Progress.for_args(args, "report", len(repo.clusters)) as shown:
            findings = validate_repository(root, repo, run=shown.wrap(build.kustomize)).findings
    fleet = capacity.repository_fleet(repo)
    base = args.link_base if args.link_base is not None else html.link_base(root, args.out)
    args.out.write_text(html.render_html(fleet, findings, title=args.title, link_base=base))
    return 0
