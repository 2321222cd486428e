"""`trainops report`: one self-contained static HTML page of the fleet: GPU capacity charts per
cluster (inline SVG), the jobs x clusters placement table, and the validation findings grouped
by rule and file with links to the lines.

Inline CSS and SVG only, no script and no external URL except the links to findings: it
works offline, as a CI artifact and from a mail. Deterministic (no timestamps), so two
reports of one commit are byte-identical.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from html import escape
from itertools import groupby
from pathlib import Path
from urllib.parse import quote

from trainops.core.findings import Finding
from trainops.report import svg
from trainops.report.capacity import Fleet
from trainops.report.formats import rules_off

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;
max-width:1100px;color:#1f2328;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid
#d0d7de;padding-bottom:4px}h3{font-size:15px;margin:16px 0 4px}
table{border-collapse:collapse;width:100%;margin:8px 0}th,td{border:1px solid #d0d7de;
padding:4px 8px;text-align:left;vertical-align:top}th{background:#f6f8fa}
td.num{text-align:right}.none{color:#8c959f}.error{color:#c0392b;font-weight:600}
.warning{color:#9a6700;font-weight:600}.waived{color:#8c959f}.summary span{margin-right:18px}
svg text{font:12px system-ui,sans-serif;fill:#1f2328}svg text.over{fill:#c0392b;font-weight:600}
.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:-1px}
tr.file td{background:#f6f8fa;font-family:ui-monospace,monospace}
figure{margin:8px 0 16px}figcaption{font-weight:600;margin-bottom:4px}
"""


def link_base(root: Path, out: Path) -> str:
    """The path from the report at `out` back to the repository `root` (with a trailing slash;
    empty beside it): what the findings' links start with by default."""
    rel = Path(os.path.relpath(root.resolve(), out.resolve().parent)).as_posix()
    return "" if rel == "." else f"{rel}/"


def _link(file: str, line: int | None, link_base: str) -> str:
    """A link to the finding's file under `link_base`, for relative paths only.

    A file name is whatever was on the command line or in the repository: taken as it is,
    `javascript:alert(1).yaml` is a script URL and `//host/x.yaml` another site. The path is
    percent-encoded (a `:` cannot start a scheme) and an absolute path gets no link at all,
    so every href is `link_base` followed by a relative path (WHATWG URL: a scheme ends at
    the first `:` before any `/`)."""
    text = escape(f"{file}:{line}" if line else file)
    if file.startswith(("/", "\\")):
        return text
    href = f"{link_base}{quote(file, safe='/')}" + (f"#L{line}" if line else "")
    return f'<a href="{escape(href)}">{text}</a>'


def _capacity(fleet: Fleet) -> list[str]:
    out = [
        '<section id="capacity"><h2>GPU capacity</h2>',
        '<p class="legend">per cluster and GPU product:<span style="background:'
        f'{svg.DECLARED_COLOR}"></span>declared<span style="background:{svg.REQUESTED_COLOR}">'
        f'</span>requested by Git<span style="background:{svg.OVER_COLOR}"></span>more than'
        ' declared<span style="background:#111;width:2px"></span>elastic jobs at minReplicas</p>',
    ]
    for cluster, group in groupby(fleet.products, key=lambda p: p.cluster):
        products = list(group)
        out.append(
            f'<figure id="cluster-{escape(cluster)}"><figcaption>{escape(cluster)}</figcaption>'
        )
        out.append(svg.capacity_chart(cluster, products))
        undeclared = [p.product for p in products if p.declared is None]
        if undeclared:
            out.append(
                f'<p class="none">cannot judge {escape(", ".join(undeclared))}: no'
                " <code>capacity.nodes</code> in the cluster profile</p>"
            )
        out.append("</figure>")
    if fleet.queues:
        out.append(
            '<table id="queues"><thead><tr><th>cluster</th><th>queue</th><th>quota</th>'
            "<th>requested</th><th>headroom</th></tr></thead><tbody>"
        )
        for q in fleet.queues:
            quota = (
                str(q.quota) if q.quota is not None else '<span class="none">not declared</span>'
            )
            head = (
                str(q.headroom)
                if q.headroom is not None
                else '<span class="none">cannot judge</span>'
            )
            cls = (
                ' class="num error"'
                if q.headroom is not None and q.headroom < 0
                else ' class="num"'
            )
            out.append(
                f"<tr><td>{escape(q.cluster)}</td><td>{escape(q.queue)}</td>"
                f'<td class="num">{quota}</td><td class="num">{q.requested}</td>'
                f"<td{cls}>{head}</td></tr>"
            )
        out.append("</tbody></table>")
    out.append("</section>")
    return out


def _placement(fleet: Fleet) -> list[str]:
    clusters = sorted({p.cluster for p in fleet.products} | {p.cluster for p in fleet.placements})
    cells = {(p.job, p.cluster): p for p in fleet.placements}
    jobs = sorted({p.job for p in fleet.placements})
    out = [
        '<section id="placement"><h2>Jobs x clusters</h2><table id="placement-table"><thead>'
        "<tr><th>job</th>",
        *(f"<th>{escape(c)}</th>" for c in clusters),
        "</tr></thead><tbody>",
    ]
    for job in jobs:
        out.append(f"<tr><th>{escape(job)}</th>")
        for c in clusters:
            p = cells.get((job, c))
            if p is None:
                out.append('<td class="none">-</td>')
                continue
            size = f"{p.gpus} GPUs" + (f" (min {p.min_gpus})" if p.min_gpus != p.gpus else "")
            out.append(
                f'<td data-gpus="{p.gpus}">{p.pods} pods · {escape(size)}<br>'
                f'<span class="none">{escape(p.products)} · {escape(p.namespace)}</span></td>'
            )
        out.append("</tr>")
    out.append("</tbody></table></section>")
    return out


def _findings(findings: Sequence[Finding], link_base: str) -> list[str]:
    out = ['<section id="findings"><h2>Validation findings</h2>']
    if not findings:
        out.append('<p id="no-findings">No findings: every overlay validates clean.</p>')
    out.append(
        '<table id="findings-table"><thead><tr><th>where</th><th>severity</th><th>cluster</th>'
        "<th>object</th><th>message</th></tr></thead>"
    )
    by_rule = sorted(findings, key=lambda f: (f.rule, f.file or "", f.line or 0, f.cluster or ""))
    for rule, in_rule in groupby(by_rule, key=lambda f: f.rule):
        items = list(in_rule)
        out.append(
            f'<tbody class="rule" id="rule-{escape(rule)}"><tr><th colspan="5">{escape(rule)}'
            f" ({len(items)})</th></tr>"
        )
        for file, in_file in groupby(items, key=lambda f: f.file or ""):
            out.append(f'<tr class="file"><td colspan="5">{escape(file or "(no file)")}</td></tr>')
            for f in in_file:
                where = _link(f.file, f.line, link_base) if f.file else ""
                obj = "/".join(x for x in (f.kind, f.namespace, f.name) if x)
                severity, level, message = f.severity.value, f.severity.value, f.message
                if f.waived is not None:
                    level, message = "waived", f"{message} (waived {severity}: {f.waived})"
                out.append(
                    f'<tr class="finding"><td>{where}</td><td class="{level}">'
                    f"{level}</td><td>{escape(f.cluster or '')}</td>"
                    f"<td>{escape(obj)}</td><td>{escape(message)}</td></tr>"
                )
        out.append("</tbody>")
    out.append("</table></section>")
    return out


def _off(findings: Sequence[Finding]) -> str:
    """The security rules cluster profiles switch off, in the summary line."""
    off = rules_off(findings)
    if not off:
        return ""
    return (
        '<span class="waived" id="rules-off">security rules off by cluster policy: '
        f"{escape(', '.join(off))}</span>"
    )


def render_html(
    fleet: Fleet,
    findings: Sequence[Finding],
    *,
    title: str = "trainops report",
    link_base: str = "",
) -> str:
    """The whole page. `link_base` prefixes finding links (a repository URL such as
    `https://github.com/org/repo/blob/<sha>/`, or a relative path back to the checkout)."""
    counted = [f for f in findings if f.waived is None]
    errors = sum(1 for f in counted if f.severity.value == "error")
    warnings = len(counted) - errors
    waived = len(findings) - len(counted)
    gpus = sum(p.gpus for p in fleet.placements)
    body = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        '<p class="summary">'
        f'<span id="count-clusters">{len({p.cluster for p in fleet.products})} clusters</span>'
        f'<span id="count-placements">{len(fleet.placements)} job placements</span>'
        f"<span>{gpus} GPUs requested</span>"
        f'<span class="error" id="count-errors">{errors} errors</span>'
        f'<span class="warning" id="count-warnings">{warnings} warnings</span>'
        f'<span class="waived" id="count-waived">{waived} waived</span>{_off(findings)}</p>',
        *_capacity(fleet),
        *_placement(fleet),
        *_findings(findings, link_base),
        "</body></html>",
    ]
    return "\n".join(body) + "\n"
