"""The HTML report and the PR comment's Mermaid chart, rendered in a real headless Chromium.

Assertions read the DOM Chromium built (`--dump-dom`), not the HTML text; the report's
screenshot is saved to build/test-artifacts/report.png (gitignored; CI uploads it). The
Mermaid block is rendered by the real `mermaid` npm package (pinned, installed by `make
setup` into .tools/) in the same Chromium, and must produce an SVG without a parse error.
"""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest

from tests.report.browser import ARTIFACTS, Dom, dump_dom, screenshot
from tests.tools import REPO, copy_inputs, require_kustomize, require_mermaid
from trainops.cli import main
from trainops.jobspec.load import load_repository
from trainops.report import capacity, capacity_view


def _unschedulable_repo(tmp_path: Path) -> Path:
    """The shipped repository with resnet50-ddp at 40 pods x 1 GPU on cloud-h100 (32 H100s
    declared, queue quota 32): one gang-unschedulable error, one queue-quota warning."""
    root = copy_inputs(REPO, tmp_path / "repo")
    job = root / "jobs" / "resnet50-ddp.yaml"
    text = job.read_text()
    assert "  - cluster: cloud-h100\n" in text
    job.write_text(
        text.replace("  - cluster: cloud-h100\n", "  - cluster: cloud-h100\n    replicas: 40\n")
    )
    return root


def test_report_renders_charts_placement_and_findings(tmp_path: Path) -> None:
    require_kustomize()
    root = _unschedulable_repo(tmp_path)
    findings = tmp_path / "findings.json"
    out = tmp_path / "report.html"
    assert main(["--root", str(root), "report", "--out", str(out)]) == 0
    dom = Dom(dump_dom(out))

    clusters = sorted(p.stem for p in (root / "clusters").glob("*.yaml"))
    charts = dom.find("svg", class_="capacity-chart")
    assert sorted(c["data-cluster"] for c in charts) == clusters
    # Every product of every shipped profile declares nodes: one declared bar each.
    products = sum(len(p.capacity.nodes) for p in load_repository(root).clusters.values())
    assert len(dom.find("rect", class_="declared")) == products == 4
    assert dom.find("rect", fill="#c0392b"), "cloud-h100 asks for more than it has: a red bar"

    assert dom.find("table", id="placement-table")
    cells = {a["data-gpus"] for a in dom.find("td") if "data-gpus" in a}
    assert "40" in cells  # 40 pods x 1 GPU of the changed job

    assert dom.find("table", id="findings-table")
    rules = {a["id"] for a in dom.find("tbody", class_="rule")}
    assert {"rule-gang-unschedulable", "rule-queue-quota-exceeded"} <= rules
    links = [a["href"] for a in dom.find("a") if "href" in a]
    assert any(h.endswith(".yaml") or "#L" in h for h in links), links

    shot = screenshot(out, ARTIFACTS / "report.png")
    width, height = struct.unpack(">II", shot.read_bytes()[16:24])
    assert (width, height) == (1200, 1400)

    # The same findings through --findings (CI validates once) give the same tables.
    assert main(["--root", str(root), "validate", "--format", "json"]) == 1
    findings.write_text(json.dumps({"findings": [], "summary": {}}))
    again = tmp_path / "again.html"
    assert (
        main(["--root", str(root), "report", "--out", str(again), "--findings", str(findings)]) == 0
    )
    assert Dom(dump_dom(again)).find("p", id="no-findings")


def _mermaid_page(tmp_path: Path, chart: str) -> Path:
    js = tmp_path / "mermaid.min.js"
    shutil.copy(require_mermaid(), js)
    source = chart.removeprefix("```mermaid\n").removesuffix("\n```")
    page = tmp_path / "mermaid.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta charset="utf-8"><script src="mermaid.min.js">'
        '</script></head><body><pre id="source"></pre><div id="out" data-status="pending">'
        "</div><script>\n"
        f"document.getElementById('source').textContent = {json.dumps(source)};\n"
        "mermaid.initialize({startOnLoad: false});\n"
        "const out = document.getElementById('out');\n"
        "mermaid.render('chart', document.getElementById('source').textContent)"
        ".then(r => { out.innerHTML = r.svg; out.dataset.status = 'ok'; })"
        ".catch(e => { out.dataset.status = 'error'; out.textContent = String(e.message || e); });"
        "\n</script></body></html>"
    )
    return page


def _comment_chart() -> str:
    repo = load_repository(REPO)
    after = capacity.repository_fleet(repo)
    before = capacity.Fleet(
        [
            capacity.ProductUse(p.cluster, p.product, p.per_node, p.nodes, 0, 0)
            for p in after.products
        ]
    )
    section = capacity_view.markdown_section(capacity.compare(before, after))
    start = section.index("```mermaid")
    return section[start : section.index("```", start + 3) + 3]


def test_comment_chart_renders_with_real_mermaid(tmp_path: Path) -> None:
    chart = _comment_chart()
    dom = Dom(dump_dom(_mermaid_page(tmp_path, chart)))
    status = dom.find("div", id="out")[0]["data-status"]
    assert status == "ok", dom.text[-500:]
    assert dom.find("svg"), "mermaid produced no SVG"
    classes = {c for _, a in dom.elements for c in a.get("class", "").split()}
    assert any(c.startswith("bar-plot") for c in classes), classes
    assert any(c.startswith("line-plot") for c in classes), classes
    assert "Parse error" not in dom.text


@pytest.mark.parametrize("broken", ["    bar [1, 2"])
def test_a_broken_chart_is_reported_as_a_parse_error(tmp_path: Path, broken: str) -> None:
    """The check above can fail: a malformed chart comes back as mermaid's parse error."""
    chart = _comment_chart().replace("```\n", "").rstrip("`") + "\n" + broken + "\n"
    dom = Dom(dump_dom(_mermaid_page(tmp_path, chart)))
    assert dom.find("div", id="out")[0]["data-status"] == "error"
