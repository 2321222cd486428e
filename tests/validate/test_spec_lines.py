"""The pull request's annotations land on the lines the author wrote, once per mistake (issue 34).

Every shipped job spec is edited the ways PR authors break them: an unpinned image, an NCCL
variable NCCL does not have, more GPUs per pod than a node holds; and a cluster profile is
switched in ways that strand jobs. `trainops validate --format github` must then annotate the
spec's (or profile's) own line, found here by searching the edited text, exactly once per
mistake, however many clusters and replica types render it; the generated files it was found
in stay in the JSON report as related locations.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.tools import REPO, copy_inputs, line_of, require_kustomize, trainops

JOBS = sorted(p.name for p in (REPO / "jobs").glob("*.yaml"))
ANNOTATION = re.compile(
    r"^::(error|warning|notice) file=([^,]+),line=(\d+),title=trainops ([^:]+)::"
)


def _annotations(root: Path, *args: str) -> list[tuple[str, int, str]]:
    result = trainops(root, "validate", "--format", "github", *args)
    assert "Traceback" not in result.stderr, result.stderr
    found = []
    for line in result.stdout.splitlines():
        match = ANNOTATION.match(line)
        if match:
            found.append((match[2], int(match[3]), match[4]))
    return found


def _edit(path: Path, pattern: str, replacement: str) -> None:
    text, count = re.subn(pattern, replacement, path.read_text(), count=1, flags=re.M)
    assert count == 1, (path, pattern)
    path.write_text(text)


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[str, int, str]]]:
    """Every shipped job with an unpinned image, an unknown NCCL variable and a secret in plain
    env, validated once."""
    require_kustomize()
    root = copy_inputs(REPO, tmp_path_factory.mktemp("repo"))
    for name in JOBS:
        job = root / "jobs" / name
        _edit(job, r"^image: (\S+?):[^:\s]+$", r"image: \1:latest")
        _edit(job, r"^env:\n", 'env:\n  NCCL_TIMEOUT: "1800"\n  WANDB_API_KEY: abc123\n')
    # Rendered, so that the related locations name files that are there.
    assert trainops(root, "render").returncode == 0
    return root, _annotations(root)


@pytest.mark.parametrize("name", JOBS)
def test_an_unpinned_image_is_one_annotation_at_the_image_line(
    broken: tuple[Path, list[tuple[str, int, str]]], name: str
) -> None:
    root, found = broken
    line = line_of(root / "jobs" / name, "image: ")
    assert [a for a in found if a[2] == "image-unpinned" and a[0] == f"jobs/{name}"] == [
        (f"jobs/{name}", line, "image-unpinned")
    ]


@pytest.mark.parametrize("name", JOBS)
def test_an_unknown_nccl_variable_is_one_annotation_at_its_line(
    broken: tuple[Path, list[tuple[str, int, str]]], name: str
) -> None:
    root, found = broken
    line = line_of(root / "jobs" / name, "NCCL_TIMEOUT")
    assert [a for a in found if a[2] == "nccl-env-unknown" and a[0] == f"jobs/{name}"] == [
        (f"jobs/{name}", line, "nccl-env-unknown")
    ]


@pytest.mark.parametrize("name", JOBS)
def test_a_secret_in_plain_env_is_one_annotation_at_its_line(
    broken: tuple[Path, list[tuple[str, int, str]]], name: str
) -> None:
    """The message names the container, `pytorch` in a PyTorchJob and `node` in a TrainJob:
    still one mistake, one annotation."""
    root, found = broken
    line = line_of(root / "jobs" / name, "WANDB_API_KEY")
    assert [a for a in found if a[2] == "secret-in-plain-env" and a[0] == f"jobs/{name}"] == [
        (f"jobs/{name}", line, "secret-in-plain-env")
    ]


def test_nothing_is_annotated_in_generated_files(
    broken: tuple[Path, list[tuple[str, int, str]]],
) -> None:
    _, found = broken
    assert found
    assert [a for a in found if not a[0].startswith(("jobs/", "clusters/"))] == []


def test_the_generated_places_stay_in_json(
    broken: tuple[Path, list[tuple[str, int, str]]],
) -> None:
    """`file`/`line` are the spec's; each rendered object, cluster and replica type the
    finding was found in is a related location."""
    root, _ = broken
    result = trainops(root, "validate", "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    [image] = [
        f
        for f in findings
        if f["rule"] == "image-unpinned" and f["file"] == "jobs/resnet50-ddp.yaml"
    ]
    places = {(r["cluster"], r["kind"], r["replicaType"]) for r in image["relatedLocations"]}
    assert places == {
        ("cloud-h100", "PyTorchJob", "Master"),
        ("cloud-h100", "PyTorchJob", "Worker"),
        ("onprem-a100", "PyTorchJob", "Master"),
        ("onprem-a100", "PyTorchJob", "Worker"),
        ("onprem-h200", "TrainJob", "node"),
    }
    for related in image["relatedLocations"]:
        assert (root / related["file"]).is_file(), related
    assert image["cluster"] is None  # found on several


def test_more_gpus_than_a_node_holds_is_one_annotation_per_job(scratch: Path) -> None:
    for name in JOBS:
        _edit(scratch / "jobs" / name, r"^gpusPerReplica: \d+$", "gpusPerReplica: 16")
    found = _annotations(scratch)
    for name in JOBS:
        line = line_of(scratch / "jobs" / name, "gpusPerReplica: 16")
        assert [a for a in found if a[0] == f"jobs/{name}"] == [(f"jobs/{name}", line, "spec")]


def test_a_profile_switched_to_kueue_is_one_annotation_at_the_profile(scratch: Path) -> None:
    """Kueue 0.19's defaults leave PyTorchJob and TFJob out: one annotation per kind at the
    profile line that made the switch, none in the jobs that target it."""
    profile = scratch / "clusters" / "cloud-h100.yaml"
    _edit(profile, r"^    integrations:\n(      - .*\n)+", "")
    _edit(profile, r"^ +# Kueue's Configuration.*\n +# TFJob.*\n", "")
    found = _annotations(scratch)
    line = line_of(profile, "name: kueue")
    assert sorted(found) == [("clusters/cloud-h100.yaml", line, "spec")] * 2


def test_a_platform_object_is_annotated_in_its_own_file(scratch: Path) -> None:
    """A Kueue downgrade leaves the platform's v1beta2 objects unserved: each annotated at
    its `apiVersion` in clusters/<name>/manifests/, not in the overlay it is copied into."""
    _edit(scratch / "clusters" / "cloud-h100.yaml", r'version: "0\.19"', 'version: "0.14"')
    found = _annotations(scratch, "--cluster", "cloud-h100")
    manifest = scratch / "clusters" / "cloud-h100" / "manifests" / "kueue.yaml"
    lines = [
        n
        for n, text in enumerate(manifest.read_text().splitlines(), 1)
        if text.startswith("apiVersion: kueue.x-k8s.io/v1beta2")
    ]
    assert sorted(found) == [
        ("clusters/cloud-h100/manifests/kueue.yaml", n, "kueue-api-version") for n in lines
    ]
