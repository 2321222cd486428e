"""A generated fleet: N jobs over copies of the shipped clusters, for `validate --changed`'s
benchmark (bench/changed.py) and its property test (tests/validate/test_changed_property.py).

Every shipped cluster profile (Training Operator v1 and Trainer v2 alike) is copied
`copies` times (`<name>`, `<name>-b`, `<name>-c`, ...) with its platform manifests; job `i`
is a copy of the shipped job `TEMPLATES[i % len(TEMPLATES)]`, renamed `<template>-<i>`, on
the copies of the clusters its template targets. The specs are edited as text (only the
`name:` line and the targets block), so everything else is exactly the shipped spec.

With `groups` > 1 the clusters are copied `copies x groups` times and each job targets the
copies of one group (the groups take turns, a template's worth of jobs at a time): a fleet
`groups` times larger whose overlays are each as large as the one-group fleet's. kustomize's
own time grows with the square of the objects in one overlay (its resource map checks every
object it adds against those it holds: 2,500 ConfigMaps in one kustomization build in 9 CPU
seconds, 5,000 in 63), so 5,000 jobs in 6 overlays of ~24,000 objects each would take
kustomize hours (and pass its 300 s timeout per overlay), where a real fleet of that size
spreads over more clusters.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUFFIXES = ("", *(f"-{letter}" for letter in "bcdefghijklmnopqrstuvwxyz"))
# Shipped jobs whose targets are a plain `targets:` block at the end of the file.
TEMPLATES = ("resnet50-ddp", "llm-finetune", "horovod-training", "tf-distributed")


def _cluster_names(source: Path) -> list[str]:
    names = []
    for path in sorted((source / "clusters").glob("*.yaml")):
        found = re.search(r"^name: (\S+)$", path.read_text(), re.M)
        if found:
            names.append(found.group(1))
    return names


def _targets(text: str, suffixes: tuple[str, ...]) -> str:
    """The template's `targets:` block with each entry repeated for every copy."""
    head, _, block = text.partition("\ntargets:\n")
    entries = re.split(r"\n(?=  - )", block.rstrip("\n"))
    out = []
    for suffix in suffixes:
        for entry in entries:
            out.append(re.sub(r"(cluster: )(\S+)", rf"\g<1>\g<2>{suffix}", entry, count=1))
    return head + "\ntargets:\n" + "\n".join(out) + "\n"


def generate(dest: Path, jobs: int, copies: int, source: Path = ROOT, groups: int = 1) -> list[str]:
    """Write `jobs/`, `clusters/` and `trainops.yaml` of a fleet under `dest`; return the
    cluster names."""
    if copies * groups > len(SUFFIXES):
        raise ValueError(f"at most {len(SUFFIXES)} copies of a cluster")
    (dest / "jobs").mkdir(parents=True)
    (dest / "clusters").mkdir()
    if (source / "trainops.yaml").is_file():
        shutil.copy(source / "trainops.yaml", dest / "trainops.yaml")
    clusters = []
    for name in _cluster_names(source):
        profile = (source / "clusters" / f"{name}.yaml").read_text()
        for suffix in SUFFIXES[: copies * groups]:
            clusters.append(name + suffix)
            text = profile.replace(f"\nname: {name}\n", f"\nname: {name}{suffix}\n")
            (dest / "clusters" / f"{name}{suffix}.yaml").write_text(text)
            manifests = source / "clusters" / name / "manifests"
            if manifests.is_dir():
                shutil.copytree(manifests, dest / "clusters" / f"{name}{suffix}" / "manifests")
    texts = {t: (source / "jobs" / f"{t}.yaml").read_text() for t in TEMPLATES}
    for i in range(jobs):
        template = TEMPLATES[i % len(TEMPLATES)]
        name = f"{template}-{i:03d}"
        text = texts[template].replace(f"\nname: {template}\n", f"\nname: {name}\n")
        group_index = i // len(TEMPLATES) % groups  # each group gets every template alike
        group = SUFFIXES[group_index * copies : (group_index + 1) * copies]
        (dest / "jobs" / f"{name}.yaml").write_text(_targets(text, group))
    return clusters
