"""The fleet's capacity as text (`trainops capacity`), JSON, and a pull-request comment section
with a Mermaid chart GitHub renders natively (`trainops diff --format markdown`)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from trainops.report.capacity import Fleet, ProductChange, ProductUse

NOT_DECLARED = "not declared"
CANNOT_JUDGE = "cannot judge"
# Past this many changed products the chart gets unreadable: it shows the largest changes,
# the table lists them all.
CHART_MAX_PRODUCTS = 12
# Past this many clusters the full table is collapsed.
COLLAPSE_CLUSTERS = 5


def _n(value: int | None, missing: str = NOT_DECLARED) -> str:
    return missing if value is None else str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    lines = ["  ".join(h.upper().ljust(w) for h, w in zip(header, widths, strict=True))]
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    return "\n".join(line.rstrip() for line in lines)


def _delta(before: int | None, after: int | None, missing: str = NOT_DECLARED) -> str:
    if before == after:
        return _n(after, missing)
    return f"{_n(before, missing)} -> {_n(after, missing)}" + (
        f" ({after - before:+d})" if before is not None and after is not None else ""
    )


def format_text(fleet: Fleet, changes: Sequence[ProductChange] | None = None) -> str:
    """Products (with the change a PR makes when `changes` is given), then queues."""
    header = ["cluster", "gpu product", "nodes", "declared", "requested", "min", "headroom", "jobs"]
    rows = []
    if changes is None:
        for p in fleet.products:
            nodes = f"{p.nodes}x{p.per_node}" if p.nodes is not None else NOT_DECLARED
            rows.append(
                [
                    p.cluster,
                    p.product,
                    nodes,
                    _n(p.declared),
                    str(p.requested),
                    str(p.requested_min),
                    _n(p.headroom, CANNOT_JUDGE),
                    str(len(p.jobs)),
                ]
            )
    else:
        for c in changes:
            b, a = c.before, c.after
            rows.append(
                [
                    c.cluster,
                    c.product,
                    _n(a.nodes) if a else "-",
                    _delta((b.declared if b else None), (a.declared if a else None)),
                    _delta(b.requested if b else None, a.requested if a else None),
                    _delta(b.requested_min if b else None, a.requested_min if a else None),
                    _delta((b.headroom if b else None), (a.headroom if a else None), CANNOT_JUDGE),
                    str(len(a.jobs)) if a else "0",
                ]
            )
    out = _table(header, rows)
    if fleet.queues:
        qrows = [
            [q.cluster, q.queue, _n(q.quota), str(q.requested), _n(q.headroom, CANNOT_JUDGE)]
            for q in fleet.queues
        ]
        out += "\n\n" + _table(["cluster", "queue", "quota", "requested", "headroom"], qrows)
    over = [p for p in fleet.products if p.headroom is not None and p.headroom < 0]
    notes = [
        f"over: {p.cluster}/{p.product} asks for {p.requested} GPUs, {p.declared} declared"
        for p in over
    ]
    undeclared = [f"{p.cluster}/{p.product}" for p in fleet.products if p.declared is None]
    if undeclared:
        notes.append(
            f"cannot judge {', '.join(undeclared)}: declare `capacity.nodes` in the cluster profile"
        )
    return out + ("\n\n" + "\n".join(notes) if notes else "") + "\n"


def _use_json(p: ProductUse | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "nodes": p.nodes,
        "perNode": p.per_node,
        "declared": p.declared,
        "requested": p.requested,
        "requestedMin": p.requested_min,
        "headroom": p.headroom,
        "jobs": p.jobs,
    }


def to_json(fleet: Fleet, changes: Sequence[ProductChange] | None = None) -> str:
    data: dict[str, Any] = {
        "products": [
            {"cluster": p.cluster, "product": p.product, **(_use_json(p) or {})}
            for p in fleet.products
        ],
        "queues": [
            {
                "cluster": q.cluster,
                "queue": q.queue,
                "quota": q.quota,
                "requested": q.requested,
                "headroom": q.headroom,
                "jobs": q.jobs,
            }
            for q in fleet.queues
        ],
    }
    if changes is not None:
        data["changes"] = [
            {
                "cluster": c.cluster,
                "product": c.product,
                "before": _use_json(c.before),
                "after": _use_json(c.after),
            }
            for c in changes
            if c.changed
        ]
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def _label(c: ProductChange) -> str:
    return f"{c.cluster}/{c.product}".replace('"', "'")


def mermaid_chart(changes: Sequence[ProductChange]) -> str:
    """A Mermaid `xychart-beta`: per cluster and product, GPUs requested before and after
    (bars, side by side) against GPUs declared (the line). Products without declared
    capacity are left out (a line at 0 would read as "nothing there")."""
    shown = [c for c in changes if c.after is not None and c.after.declared is not None]
    shown = sorted(
        shown,
        key=lambda c: (
            -abs((c.after.requested if c.after else 0) - (c.before.requested if c.before else 0))
        ),
    )[:CHART_MAX_PRODUCTS]
    shown.sort(key=lambda c: (c.cluster, c.product))
    labels, requested, declared = [], [], []
    for c in shown:
        assert c.after is not None and c.after.declared is not None
        for side, use in (("before", c.before), ("after", c.after)):
            labels.append(f'"{_label(c)} {side}"')
            requested.append(use.requested if use else 0)
            declared.append(c.after.declared)
    top = max([*requested, *declared, 1])
    return "\n".join(
        [
            "```mermaid",
            "xychart-beta",
            '    title "GPUs requested (bars: before, after) vs declared (line)"',
            f"    x-axis [{', '.join(labels)}]",
            f'    y-axis "GPUs" 0 --> {top + max(top // 10, 1)}',
            f"    bar [{', '.join(map(str, requested))}]",
            f"    line [{', '.join(map(str, declared))}]",
            "```",
        ]
    )


def markdown_section(changes: Sequence[ProductChange]) -> str:
    """The PR comment's capacity section: a chart and a table of what changed, and the whole
    fleet's table (collapsed past a few clusters)."""
    changed = [c for c in changes if c.changed]
    lines = ["#### GPU capacity", ""]

    def row(c: ProductChange) -> str:
        b, a = c.before, c.after
        declared = _delta((b.declared if b else None), (a.declared if a else None))
        req = _delta(b.requested if b else None, a.requested if a else None)
        head = _delta((b.headroom if b else None), (a.headroom if a else None), CANNOT_JUDGE)
        if a is not None and a.headroom is not None and a.headroom < 0:
            head += " ⚠️"
        return f"| `{c.cluster}` | `{c.product}` | {declared} | {req} | {head} |".replace("->", "→")

    header = [
        "| cluster | GPU product | declared | requested | headroom |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    if changed:
        if any(c.after is not None and c.after.declared is not None for c in changed):
            lines += [mermaid_chart(changed), ""]
        lines += [*header, *(row(c) for c in changed)]
    else:
        lines.append("This change moves no GPUs.")
    clusters = sorted({c.cluster for c in changes})
    everything = [*header, *(row(c) for c in changes)]
    if len(clusters) > COLLAPSE_CLUSTERS or changed:
        lines += [
            "",
            f"<details><summary>All {len(clusters)} clusters</summary>",
            "",
            *everything,
            "",
            "</details>",
        ]
    else:
        lines += ["", *everything]
    undeclared = sorted(
        {f"`{c.cluster}/{c.product}`" for c in changes if c.after and c.after.declared is None}
    )
    if undeclared:
        lines += [
            "",
            f"Cannot judge {', '.join(undeclared)}: no `capacity.nodes` in the cluster profile.",
        ]
    return "\n".join(lines) + "\n"
