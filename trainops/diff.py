"""The rendered diff of a change: every overlay built at a base ref and at the working tree.

Base side: the committed `base/` and `overlays/` at the ref (the rendered-manifests
pattern: that is what the clusters sync today), extracted with `git archive`.
Head side: the working tree's jobs/ and clusters/ rendered in memory, so a PR that
forgot to run `trainops render` still shows what it will deliver. Both sides go
through the real kustomize, then objects are matched by kind, namespace and name
(configMapGenerator's hash suffix removed, so a changed ConfigMap is "changed",
not "removed + added").
"""

from __future__ import annotations

import difflib
import io
import tarfile
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainops import build
from trainops.core.errors import InputError
from trainops.core.git import commit_of, git
from trainops.core.yaml_dump import dump
from trainops.core.yamlio import load_text
from trainops.facts import kustomize as kustomize_facts
from trainops.facts.gpus import job_gpus
from trainops.jobspec.model import ClusterProfile, Repository

OVERLAYS = "overlays"
BUILD_INPUTS = ("base", OVERLAYS)

# GitHub rejects comments over 65,536 characters; leave room for the summary.
MARKDOWN_DIFF_BUDGET = 60_000
COMMENT_MARKER = "<!-- trainops-diff -->"


def extract_ref(root: Path, ref: str, dest: Path, inputs: Sequence[str] = BUILD_INPUTS) -> None:
    """Write the committed `inputs` (default base/ and overlays/) at `ref` under `dest`
    (none there: nothing)."""
    commit = commit_of(root, ref)
    prefix = git(root, "rev-parse", "--show-prefix").decode().strip()
    tree = f"{commit}:{prefix}"
    present = git(root, "ls-tree", "--name-only", tree).decode().split()
    paths = [p for p in inputs if p in present]
    if not paths:
        return
    archive = git(root, "archive", "--format=tar", tree, *paths)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(dest, filter="data")
        else:  # Python before 3.11.4 has no filters; this is git's archive of our own repo
            tar.extractall(dest)


def object_key(obj: Mapping[str, Any]) -> str:
    """`Kind/namespace/name`, hash suffix of generated ConfigMaps and Secrets removed."""
    meta = obj.get("metadata") or {}
    name = str(meta.get("name", ""))
    kind = str(obj.get("kind", ""))
    if kind in kustomize_facts.HASHED_KINDS:
        name = kustomize_facts.unhashed(name)
    return f"{kind}/{meta.get('namespace') or '_'}/{name}"


def build_overlays(
    tree: Path, run: Callable[[Path], str] = build.kustomize
) -> dict[str, dict[str, dict[str, Any]]]:
    """cluster -> object key -> object, for every `overlays/<cluster>` under `tree`."""
    built: dict[str, dict[str, dict[str, Any]]] = {}
    for name, stream in build.build_overlays(tree, build.overlays_in(tree), run):
        if isinstance(stream, build.KustomizeError):
            raise stream
        docs = load_text(stream, f"kustomize build {OVERLAYS}/{name}", as_kubernetes=True)
        built[name] = {object_key(d.data): d.data for d in docs}
    return built


def gpu_count(objects: Iterable[Mapping[str, Any]], products: Collection[str] = ()) -> int:
    """GPUs the training jobs ask for (`trainops.facts.gpus.job_gpus`, summed); `products`:
    the GPU resources the cluster profile declares beyond the device plugins' own."""
    return sum(job_gpus(obj, products) for obj in objects)


@dataclass
class ClusterDiff:
    cluster: str
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    gpus_base: int = 0
    gpus_head: int = 0
    patches: dict[str, str] = field(default_factory=dict)
    """object key -> unified diff text, for every added, changed or removed object."""

    @property
    def gpu_delta(self) -> int:
        return self.gpus_head - self.gpus_base

    @property
    def has_changes(self) -> bool:
        return bool(self.added or self.changed or self.removed)


def _unified(cluster: str, key: str, old: Any, new: Any) -> str:
    before = dump(old).splitlines(keepends=True) if old is not None else []
    after = dump(new).splitlines(keepends=True) if new is not None else []
    return "".join(
        difflib.unified_diff(
            before,
            after,
            fromfile=f"a/{cluster}/{key}" if old is not None else "/dev/null",
            tofile=f"b/{cluster}/{key}" if new is not None else "/dev/null",
        )
    )


def compare(
    base: Mapping[str, Mapping[str, dict[str, Any]]],
    head: Mapping[str, Mapping[str, dict[str, Any]]],
    products: Mapping[str, Collection[str]] | None = None,
) -> list[ClusterDiff]:
    """Per cluster (union of both sides, by name): what was added, changed, removed, and the
    GPUs asked for before and after (`products`: each cluster's declared GPU resources)."""
    result: list[ClusterDiff] = []
    for cluster in sorted(set(base) | set(head)):
        old, new = base.get(cluster, {}), head.get(cluster, {})
        gpus = (products or {}).get(cluster, ())
        diff = ClusterDiff(
            cluster,
            gpus_base=gpu_count(old.values(), gpus),
            gpus_head=gpu_count(new.values(), gpus),
        )
        for key in sorted(set(old) | set(new)):
            if key not in old:
                diff.added.append(key)
            elif key not in new:
                diff.removed.append(key)
            elif old[key] != new[key]:
                diff.changed.append(key)
            else:
                continue
            diff.patches[key] = _unified(cluster, key, old.get(key), new.get(key))
        result.append(diff)
    return result


def _counts(d: ClusterDiff) -> str:
    return f"{len(d.added)} added, {len(d.changed)} changed, {len(d.removed)} removed"


def _gpus(d: ClusterDiff) -> str:
    return f"{d.gpus_base} -> {d.gpus_head} ({d.gpu_delta:+d})"


def format_text(diffs: list[ClusterDiff], base_ref: str, sections: Sequence[str] = ()) -> str:
    """The summary, the `sections` (e.g. what the change does to the jobs), then the diffs."""
    lines = [f"trainops diff: {base_ref} -> working tree"]
    for d in diffs:
        lines.append(f"cluster {d.cluster}: {_counts(d)}; GPUs {_gpus(d)}")
    if not any(d.has_changes for d in diffs):
        lines.append("no changes to the built manifests")
    out = "\n".join(lines) + "\n"
    for section in sections:
        out += "\n" + section
    for d in diffs:
        for key in [*d.removed, *d.changed, *d.added]:
            out += "\n" + d.patches[key]
    return out


def format_markdown(diffs: list[ClusterDiff], base_ref: str, sections: Sequence[str] = ()) -> str:
    """A PR comment: a summary table, the `sections` (markdown, e.g. the GPU capacity), then
    one collapsed diff per cluster (size-capped)."""
    lines = [
        COMMENT_MARKER,
        "### trainops diff",
        "",
        f"Built manifests at `{base_ref}` compared with this change.",
        "",
        "| cluster | added | changed | removed | GPUs (base → head) |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for d in diffs:
        gpus = f"{d.gpus_base} → {d.gpus_head} ({d.gpu_delta:+d})"
        lines.append(
            f"| `{d.cluster}` | {len(d.added)} | {len(d.changed)} | {len(d.removed)} | {gpus} |"
        )
    if not any(d.has_changes for d in diffs):
        lines += ["", "No changes to the built manifests."]
    for section in sections:
        lines += ["", section.rstrip("\n")]
    budget = MARKDOWN_DIFF_BUDGET - sum(len(s) for s in sections)
    for d in diffs:
        if not d.has_changes:
            continue
        body = "".join(d.patches[k] for k in [*d.removed, *d.changed, *d.added])
        fence = "````" if "```" in body else "```"
        if len(body) > budget:
            body = body[: max(budget, 0)] + "\n… diff truncated: run `trainops diff` locally\n"
        budget -= len(body)
        lines += [
            "",
            f"<details><summary><code>{d.cluster}</code>: {_counts(d)}</summary>",
            "",
            f"{fence}diff",
            body.rstrip("\n"),
            fence,
            "",
            "</details>",
        ]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the two sides, built


class SideFailed(Exception):
    """kustomize could not build one side: which (at the base ref, or the working tree) and why."""


@dataclass(frozen=True)
class Trees:
    """The two sides of a diff written out for kustomize: base/ and overlays/ committed at the
    base ref, and the working tree's render; with the cluster profiles declared at the base."""

    base: Path
    head: Path
    base_clusters: dict[str, ClusterProfile]

    def overlays(self) -> int:
        """How many overlays the two sides build together."""
        return len(build.overlays_in(self.base)) + len(build.overlays_in(self.head))


def write_trees(
    root: Path,
    repo: Repository,
    files: Mapping[str, str],
    base_ref: str,
    dest: Path,
    *,
    load: Callable[[Path], Repository],
) -> Trees:
    """Both sides under `dest` (`files`: the working tree's render); `load` loads a checkout's
    specs, for the profiles at the base ref."""
    base_tree, head_tree = dest / "base", dest / "head"
    base_tree.mkdir()
    extract_ref(root, base_ref, base_tree)
    inputs = dest / "inputs"
    inputs.mkdir()
    extract_ref(root, base_ref, inputs, ("jobs", "clusters", "trainops.yaml"))
    try:
        # What was declared before the change; the working tree's profiles where the base's
        # do not load (an older schema): declared then reads unchanged.
        base_clusters = load(inputs).clusters
    except InputError:
        base_clusters = repo.clusters
    build.write_tree({p: t for p, t in files.items() if p.startswith(BUILD_INPUTS)}, head_tree)
    return Trees(base_tree, head_tree, base_clusters)


def build_trees(
    trees: Trees, base_ref: str, run: Callable[[Path], str] = build.kustomize
) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, dict[str, dict[str, Any]]]]:
    """(base, head): cluster -> object key -> object on each side; `SideFailed` when kustomize
    fails on either."""
    where = f"at {base_ref}"
    try:
        base = build_overlays(trees.base, run)
        where = "for the working tree"
        head = build_overlays(trees.head, run)
    except build.KustomizeError as err:
        raise SideFailed(f"kustomize build failed {where}: {err}") from None
    return base, head
