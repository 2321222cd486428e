"""`trainops capacity`, the PR comment's capacity section and the fleet model, on the shipped
repository (expectations read from the YAML specs, not from trainops), a scratch git history
and the generated 500 jobs x 4 clusters fleet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from bench.validate import generated_repository
from tests.test_diff import git, render_and_commit, set_replicas
from tests.tools import REPO, copy_inputs, require_tool
from trainops.cli import main
from trainops.facts.capacity import unplaceable
from trainops.jobspec.load import load_repository
from trainops.report import capacity, capacity_view


def _yaml(path: Path) -> dict:  # type: ignore[type-arg]
    return yaml.safe_load(path.read_text())


def _capacity_json(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> dict:  # type: ignore[type-arg]
    capsys.readouterr()
    assert main(["--root", str(root), "capacity", "--format", "json", *extra]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_shipped_repository_declared_and_requested(capsys: pytest.CaptureFixture[str]) -> None:
    data = _capacity_json(REPO, capsys)
    got = {(p["cluster"], p["product"]): p for p in data["products"]}
    expected_requested: dict[tuple[str, str], int] = {}
    for path in sorted((REPO / "clusters").glob("*.yaml")):
        profile = _yaml(path)
        nodes = profile["capacity"]["nodes"]
        for gpu in profile["gpus"]:
            key = (profile["name"], gpu["name"])
            assert got[key]["declared"] == nodes[gpu["name"]] * gpu["perNode"]
            expected_requested[key] = 0
    for path in sorted((REPO / "jobs").glob("*.yaml")):
        job = _yaml(path)
        for target in job["targets"]:
            profile = _yaml(REPO / "clusters" / f"{target['cluster']}.yaml")
            product = target.get("gpuProduct") or profile["gpus"][0]["name"]
            pods = target.get("replicas") or job["replicas"]
            expected_requested[(target["cluster"], product)] += pods * job["gpusPerReplica"]
    assert {k: p["requested"] for k, p in got.items()} == expected_requested
    for p in data["products"]:
        assert p["headroom"] == p["declared"] - p["requested"]


def test_every_queue_counts_its_jobs_trainjobs_too(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 33 item 7: onprem-h200's queue (Trainer v2: the queue is the runtime's Volcano
    annotation, not on the TrainJob) counted `requested: 0`. Every job of a cluster goes to its
    profile's queue, so the queue holds what the cluster's products hold."""
    data = _capacity_json(REPO, capsys)
    for path in sorted((REPO / "clusters").glob("*.yaml")):
        profile = _yaml(path)
        (queue,) = [q for q in data["queues"] if q["cluster"] == profile["name"]]
        assert queue["queue"] == profile["scheduler"]["queue"]
        products = [p for p in data["products"] if p["cluster"] == profile["name"]]
        assert queue["requested"] == sum(p["requested"] for p in products) > 0, queue


def test_without_capacity_it_cannot_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    for path in (root / "clusters").glob("*.yaml"):
        profile = yaml.safe_load(path.read_text())
        del profile["capacity"]
        path.write_text(yaml.safe_dump(profile))
    capsys.readouterr()
    assert main(["--root", str(root), "capacity"]) == 0
    out = capsys.readouterr().out
    assert "not declared" in out and "cannot judge" in out
    assert " 0 " not in out.splitlines()[1]  # no headroom computed from nothing


def test_capacity_naming_an_unknown_product_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_inputs(REPO, tmp_path / "repo")
    path = root / "clusters" / "cloud-h100.yaml"
    path.write_text(path.read_text().replace("    h100-80gb: 4", "    h100-80g: 4"))
    capsys.readouterr()
    assert main(["--root", str(root), "capacity"]) == 2
    err = capsys.readouterr().err
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "h100-80g:" in t)
    assert f"clusters/cloud-h100.yaml:{line}:" in err and "did you mean `h100-80gb`" in err


def test_base_shows_the_change_of_a_pr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    require_tool("git")
    root = copy_inputs(REPO, tmp_path / "repo")
    git(root, "init", "-q", "-b", "main")
    render_and_commit(root, "base")
    set_replicas(root, "resnet50-ddp", 4, 6)
    data = _capacity_json(root, capsys, "--base", "main")
    moved = {(c["cluster"], c["product"]): c for c in data["changes"]}
    # resnet50-ddp runs on every shipped cluster: each of its products moves.
    assert set(moved) == {
        ("cloud-h100", "h100-80gb"),
        ("onprem-a100", "a100-40gb"),
        ("onprem-h200", "h200-141gb"),
    }
    for change in moved.values():
        assert change["after"]["requested"] - change["before"]["requested"] == 2
    assert main(["--root", str(root), "capacity", "--base", "no-such-ref"]) == 2


def test_pod_placement_reasons() -> None:
    assert unplaceable({16: 1}, 8, 4) is not None  # a pod larger than a node
    assert unplaceable({16: 1}, 8, None) is not None  # sure even without declared nodes
    assert unplaceable({8: 5}, 8, None) is None  # the rest needs declared nodes
    assert unplaceable({8: 5}, 8, 4) is not None  # 40 > 32
    assert unplaceable({5: 5}, 8, 4) is not None  # 25 <= 32 but one 5-GPU pod per node
    assert unplaceable({5: 4}, 8, 4) is None
    assert unplaceable({8: 3, 4: 2}, 8, 4) is None  # 32 exactly, packs


def _fleet_changes(n_clusters: int) -> list[capacity.ProductChange]:
    uses = [capacity.ProductUse(f"c{i:02d}", "a100", 8, 4, 8 * i, 8 * i) for i in range(n_clusters)]
    bumped = [
        capacity.ProductUse(u.cluster, u.product, 8, 4, u.requested, u.requested_min) for u in uses
    ]
    bumped[0].requested += 8
    return capacity.compare(capacity.Fleet(uses), capacity.Fleet(bumped))


def test_comment_stays_short_with_50_clusters() -> None:
    section = capacity_view.markdown_section(_fleet_changes(50))
    visible = section[: section.index("<details>")]
    assert visible.count("\n| `c") == 1  # only the changed product outside the collapse
    assert "```mermaid" in visible and "All 50 clusters" in section
    assert section.count("\n| `c") == 51


def test_comment_with_no_change_says_so() -> None:
    changes = capacity.compare(*(capacity.repository_fleet(load_repository(REPO)),) * 2)
    section = capacity_view.markdown_section(changes)
    assert "moves no GPUs" in section and "```mermaid" not in section


@pytest.mark.slow
def test_500_jobs_x_4_clusters_in_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generated_repository(tmp_path)
    data = _capacity_json(tmp_path, capsys)
    assert sum(p["requested"] for p in data["products"]) == 500 * 4 * 4
    findings = tmp_path / "findings.json"
    findings.write_text(json.dumps({"findings": [], "summary": {}}))
    out = tmp_path / "report.html"
    assert (
        main(["--root", str(tmp_path), "report", "--out", str(out), "--findings", str(findings)])
        == 0
    )
    assert out.read_text().count("<tr><th>resnet50-ddp-") == 500
