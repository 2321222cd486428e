"""Issue 23, item 8: every queue, network and priority class a cluster profile names is
either delivered from `clusters/<name>/manifests/` or declared installed by the platform
(`providedByPlatform`); a name that is neither is refused at load, with its line (exit 2).

Why it matters, by consumer: Volcano's admission refuses a PodGroup whose queue it cannot
find (volcano-sh/volcano `pkg/webhooks/admission/podgroups/validate/validate_podgroup.go`,
`checkQueueState`: "unable to find queue"), Multus cannot attach a network whose
NetworkAttachmentDefinition is not in the pod's namespace (a name without a namespace means
the pod's own), and Kueue keeps a workload whose LocalQueue is missing inadmissible.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.tools import REPO, copy_inputs, trainops, tree


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]


def _delivered(root: Path, cluster: str) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of every object in the cluster's platform manifests."""
    manifests = root / "clusters" / cluster / "manifests"
    out = set()
    for path in sorted(manifests.glob("*.y*ml")) if manifests.is_dir() else []:
        for doc in _documents(path):
            meta = doc["metadata"]
            out.add((doc["kind"], meta.get("namespace", ""), meta["name"]))
    return out


def test_shipped_profiles_name_only_objects_that_are_delivered_or_provided() -> None:
    """Read as plain YAML: what each shipped profile names exists in its manifests or is
    listed under `providedByPlatform` (onprem-h200 named a Queue and a network it shipped
    nowhere)."""
    for path in sorted((REPO / "clusters").glob("*.yaml")):
        profile = yaml.safe_load(path.read_text(encoding="utf-8"))
        delivered = _delivered(REPO, profile["name"])
        provided = profile.get("providedByPlatform", {})
        scheduler = profile.get("scheduler", {})
        namespaces = profile["namespaces"]
        wanted: list[tuple[str, list[tuple[str, str, str]]]] = []
        if scheduler.get("name") == "volcano" and "queue" in scheduler:
            wanted.append(("queues", [("Queue", "", scheduler["queue"])]))
        if scheduler.get("name") == "kueue":
            wanted.append(("queues", [("LocalQueue", ns, scheduler["queue"]) for ns in namespaces]))
        if "priorityClass" in scheduler:
            wanted.append(("priorityClasses", [("PriorityClass", "", scheduler["priorityClass"])]))
        network = profile["network"].get("rdma", {}).get("multusNetwork")
        if network:
            nads = [("NetworkAttachmentDefinition", ns, network) for ns in namespaces]
            wanted.append(("networks", nads))
        for key, objects in wanted:
            name = objects[0][2]
            missing = [o for o in objects if o not in delivered]
            assert not missing or name in provided.get(key, []), (path.name, missing)


def _repo_without(tmp_path: Path, manifest: str) -> Path:
    root = copy_inputs(REPO, tmp_path / "repo")
    (root / "clusters" / "onprem-a100" / "manifests" / manifest).unlink()
    return root


def test_a_queue_neither_delivered_nor_provided_is_refused_with_its_line(
    tmp_path: Path,
) -> None:
    root = _repo_without(tmp_path, "volcano.yaml")
    before = tree(root)
    result = trainops(root, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = (root / "clusters" / "onprem-a100.yaml").read_text(encoding="utf-8").splitlines()
    queue_line = next(i for i, text in enumerate(lines, 1) if "queue: research" in text)
    class_line = next(i for i, text in enumerate(lines, 1) if "priorityClass: training" in text)
    assert f"clusters/onprem-a100.yaml:{queue_line}:" in result.stderr
    assert "Volcano Queue `research`" in result.stderr
    assert "providedByPlatform.queues" in result.stderr
    assert f"clusters/onprem-a100.yaml:{class_line}:" in result.stderr
    assert "providedByPlatform.priorityClasses" in result.stderr
    assert "Traceback" not in result.stderr
    assert tree(root) == before  # nothing written


def test_declared_provided_by_the_platform_loads(tmp_path: Path) -> None:
    root = _repo_without(tmp_path, "volcano.yaml")
    profile = root / "clusters" / "onprem-a100.yaml"
    profile.write_text(
        profile.read_text(encoding="utf-8")
        + "providedByPlatform:\n  queues: [research]\n  priorityClasses: [training]\n",
        encoding="utf-8",
    )
    result = trainops(root, "validate", "--cluster", "onprem-a100")
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_network_missing_in_one_namespace_names_it(tmp_path: Path) -> None:
    """A NetworkAttachmentDefinition is namespaced and a pod's annotation without a namespace
    means its own: the network must exist in every training namespace."""
    root = copy_inputs(REPO, tmp_path / "repo")
    nads = root / "clusters" / "onprem-a100" / "manifests" / "rdma-net.yaml"
    kept = [d for d in _documents(nads) if d["metadata"]["namespace"] == "ai-training"]
    nads.write_text(yaml.safe_dump_all(kept), encoding="utf-8")
    result = trainops(root, "render")
    assert result.returncode == 2
    assert "NetworkAttachmentDefinition" in result.stderr
    assert "missing in namespace `ml-vision`" in result.stderr
    assert "`ai-training`" not in result.stderr


def test_delivered_and_declared_is_refused(tmp_path: Path) -> None:
    """One owner per object: the repository delivers it, or the platform installs it."""
    root = copy_inputs(REPO, tmp_path / "repo")
    profile = root / "clusters" / "onprem-a100.yaml"
    profile.write_text(
        profile.read_text(encoding="utf-8") + "providedByPlatform: {queues: [research]}\n",
        encoding="utf-8",
    )
    result = trainops(root, "render")
    assert result.returncode == 2
    assert "also declared provided by the platform" in result.stderr
