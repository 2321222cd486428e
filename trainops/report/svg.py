"""Inline SVG bar charts for the HTML report: no script, no font or library to fetch, so the
report renders the same offline, in a CI artifact and in a mail attachment."""

from __future__ import annotations

from html import escape

from trainops.report.capacity import ProductUse

BAR_HEIGHT = 18
ROW_GAP = 30
LABEL_WIDTH = 150
PLOT_WIDTH = 420
DECLARED_COLOR = "#d0d7de"
REQUESTED_COLOR = "#2f6fb3"
OVER_COLOR = "#c0392b"
MIN_COLOR = "#111111"


def capacity_chart(cluster: str, products: list[ProductUse]) -> str:
    """One cluster's products: declared GPUs (grey), requested at configured size (blue, red
    when over), a tick at the elastic minimum; an undeclared product says it cannot judge."""
    top = max([1, *(max(p.declared or 0, p.requested) for p in products)])
    scale = PLOT_WIDTH / top
    height = ROW_GAP * len(products) + 24
    width = LABEL_WIDTH + PLOT_WIDTH + 150
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="capacity-chart" role="img"'
        f' data-cluster="{escape(cluster)}" width="{width}" height="{height}"'
        f' viewBox="0 0 {width} {height}">',
        f"<title>GPUs requested vs declared on {escape(cluster)}</title>",
    ]
    for i, p in enumerate(products):
        y = 8 + i * ROW_GAP
        parts.append(
            f'<text x="{LABEL_WIDTH - 8}" y="{y + 13}" text-anchor="end">{escape(p.product)}</text>'
        )
        if p.declared is not None:
            parts.append(
                f'<rect class="declared" x="{LABEL_WIDTH}" y="{y}" width="{p.declared * scale:.1f}"'
                f' height="{BAR_HEIGHT}" fill="{DECLARED_COLOR}"><title>declared {p.declared}'
                "</title></rect>"
            )
        over = p.headroom is not None and p.headroom < 0
        color = OVER_COLOR if over else REQUESTED_COLOR
        parts.append(
            f'<rect class="requested" x="{LABEL_WIDTH}" y="{y + 4}"'
            f' width="{p.requested * scale:.1f}" height="{BAR_HEIGHT - 8}" fill="{color}">'
            f"<title>requested {p.requested}</title></rect>"
        )
        if p.requested_min != p.requested:
            x = LABEL_WIDTH + p.requested_min * scale
            parts.append(
                f'<line class="minimum" x1="{x:.1f}" x2="{x:.1f}" y1="{y}" y2="{y + BAR_HEIGHT}"'
                f' stroke="{MIN_COLOR}" stroke-width="2"><title>elastic minimum'
                f" {p.requested_min}</title></line>"
            )
        label = (
            f"{p.requested} / {p.declared}"
            if p.declared is not None
            else f"{p.requested} / not declared"
        )
        over_class = ' class="over"' if over else ""
        parts.append(
            f'<text x="{LABEL_WIDTH + PLOT_WIDTH + 8}" y="{y + 13}"{over_class}>'
            f"{escape(label)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)
