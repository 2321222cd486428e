"""Findings told on the line the author wrote: the way back from a rendered object to its spec.

A finding on an object trainops rendered names the rendered file and line when the rules make
it. `SpecLines.to_specs` moves it to the job spec or cluster profile line that produced the
field (`trainops.render.sources`: the source map), and keeps the rendered place as its related
location; a platform object's finding goes to its file under `clusters/<name>/manifests/`.
`merge` then makes one finding of a rule's findings on one source line (the same message but
for where it was found said once): one mistake in a job that targets three clusters, in its
Master and its Worker, is one finding that says where it applies. Findings
of `--manifests` never come here: a manifest's own lines are the author's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from pathlib import Path

from trainops.core import paths, yamlio
from trainops.core.errors import InputError
from trainops.core.findings import Finding, Location
from trainops.core.manifest import Manifest
from trainops.core.values import as_dict
from trainops.jobspec.model import Repository
from trainops.render import MONITORING_DIR, PLATFORM_DIR, RUNTIMES_DIR
from trainops.render.sources import Specs, container_name, replica_type
from trainops.validate.pipeline import path_text

_CLUSTER_OWNED = frozenset({RUNTIMES_DIR, MONITORING_DIR})


class SpecLines:
    """The spec files of one repository, each read once, and the way findings map to them."""

    def __init__(self, root: Path, repo: Repository) -> None:
        self.root, self.repo = root, repo
        self.jobs = {job.name: job.file for job in repo.jobs}
        self._documents: dict[str, list[yamlio.Document]] = {}

    def _documents_of(self, file: str) -> list[yamlio.Document]:
        if file not in self._documents:
            try:
                self._documents[file] = yamlio.load_file(self.root / file, file)
            except (InputError, OSError):
                self._documents[file] = []
        return self._documents[file]

    def _first(self, file: str | None) -> yamlio.Document | None:
        found = self._documents_of(file) if file else []
        return found[0] if found else None

    def to_specs(self, findings: Iterable[Finding], manifests: Sequence[Manifest]) -> list[Finding]:
        """`findings` (of `manifests`, one overlay's) moved to the spec lines."""
        objects = {(m.kind, m.namespace, m.name): m for m in manifests}
        out = []
        for finding in findings:
            manifest = objects.get((finding.kind or "", finding.namespace, finding.name))
            moved = None
            if manifest is not None and finding.path is not None and not finding.related:
                moved = self._moved(finding, manifest, finding.path)
            out.append(moved or finding)
        return out

    def _moved(self, f: Finding, m: Manifest, path: tuple[str | int, ...]) -> Finding | None:
        where = self._platform(m, path) or self._rendered(m, f.cluster, path)
        if where is None:
            return None
        rtype, container = replica_type(m.kind, m.data, path), container_name(m.data, path)
        rendered = Location(
            f.file, f.line, f.kind, f.name, f.namespace, f.cluster, rtype, container
        )
        return dataclasses.replace(f, file=where[0], line=where[1], related=(rendered,))

    def _rendered(
        self, m: Manifest, cluster: str | None, path: tuple[str | int, ...]
    ) -> tuple[str, int] | None:
        """A job's object (`base/<job>/`, `overlays/<cluster>/<job>/`) or the cluster's own
        (its runtimes and monitoring): through the source map."""
        parts = (m.file or "").split("/")
        profile = self.repo.clusters.get(cluster or "")
        owner = None
        if len(parts) > 2 and parts[0] == paths.BASE_DIR:
            owner = parts[1]
        elif len(parts) > 3 and parts[0] == paths.OVERLAYS_DIR:
            owner = parts[2]
        if owner is None or (owner not in _CLUSTER_OWNED and owner not in self.jobs):
            return None
        job = None if owner in _CLUSTER_OWNED else self.jobs[owner]
        specs = Specs(self._first(job), self._first(profile.file if profile else None), cluster)
        return specs.locate(m.kind, m.data, path)

    def _platform(self, m: Manifest, path: tuple[str | int, ...]) -> tuple[str, int] | None:
        """An object of `clusters/<name>/manifests/`: the same field in the file it came from."""
        parts = (m.file or "").split("/")
        if not (len(parts) == 4 and parts[0] == paths.OVERLAYS_DIR and parts[2] == PLATFORM_DIR):
            return None
        for item in self.repo.platform.get(parts[1], ()):
            for doc in self._documents_of(item.file):
                data = as_dict(doc.data)
                meta = as_dict(data.get("metadata"))
                same = (data.get("kind"), meta.get("name")) == (m.kind, m.name)
                if same and meta.get("namespace", m.namespace) == m.namespace:
                    return doc.file, doc.line_of(path)
        return None


# Where a merged message names the containers it was found in (`pytorch`/`node`).
_CONTAINERS = "`\0containers\0`"


def _bare(f: Finding) -> str:
    """The message without what names where it was found: the rendered path it may start
    with (`spec.pytorchReplicaSpecs.Master.template...: `) and the container it names (a
    PyTorchJob's `pytorch` is a TrainJob's `node`); what stays the same everywhere."""
    prefix = f"{path_text(f.path)}: " if f.path else None
    text = f.message[len(prefix) :] if prefix and f.message.startswith(prefix) else f.message
    for r in f.related:
        if r.container:
            text = text.replace(f"`{r.container}`", _CONTAINERS)
    return text


def _common(values: Iterable[str | None]) -> str | None:
    found = set(values)
    return found.pop() if len(found) == 1 else None


def merge(findings: Sequence[Finding]) -> list[Finding]:
    """The findings of one rule on one spec line as one, with every rendered place it was
    found: identical ones (the same message but for where it was found) say it once, and a
    rule that says two things about one line (a secret in the env, and the mpirun argv that
    exports it) says both in one finding: one mistake, one annotation."""
    groups: dict[tuple[object, ...], list[Finding]] = {}
    for index, f in enumerate(findings):
        key = (f.rule, f.severity, f.waived, f.file, f.line) if f.related else (index,)
        groups.setdefault(key, []).append(f)
    return sorted((_merged(group) for group in groups.values()), key=Finding.sort_key)


def _merged(group: list[Finding]) -> Finding:
    first = group[0]
    if len(group) == 1:
        return first
    related = tuple(sorted({r for f in group for r in f.related}, key=_location_key))
    said: dict[str, list[Finding]] = {}
    for f in sorted(group, key=lambda f: f.message):
        said.setdefault(_bare(f), []).append(f)
    message = "; also: ".join(_said(alike) for alike in said.values())
    return dataclasses.replace(
        first,
        message=message,
        kind=_common(r.kind for r in related),
        name=_common(r.name for r in related),
        namespace=_common(r.namespace for r in related),
        cluster=_common(r.cluster for r in related),
        related=related,
    )


def _said(alike: list[Finding]) -> str:
    """One message for findings that say the same but where: as it is when they say it in the
    same words, else without the rendered path and naming every container."""
    first = alike[0]
    if all(f.message == first.message for f in alike):
        return first.message
    names = sorted({r.container for f in alike for r in f.related if r.container})
    bare = _bare(first).replace(_CONTAINERS, "/".join(f"`{n}`" for n in names))
    prefixed = first.path and first.message.startswith(f"{path_text(first.path)}: ")
    field = next((p for p in reversed(first.path or ()) if isinstance(p, str)), "")
    return f"{field}: {bare}" if prefixed and field else bare


def _location_key(r: Location) -> tuple[str, ...]:
    return (
        r.cluster or "",
        r.kind or "",
        r.namespace or "",
        r.name or "",
        r.replica_type or "",
        r.file or "",
        f"{r.line or 0:09d}",
    )
