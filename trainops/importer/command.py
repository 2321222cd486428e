"""What `trainops import` runs, without the command line: the target cluster and namespace
chosen and checked, the files imported, each job spec written where no file is in its way.

Nothing is written unless every spec can be: a job file that already exists (as `.yaml` or
`.yml`) is bad input, and the import stops before the first write.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path

from trainops.core import paths
from trainops.core.errors import InputError, Problem
from trainops.importer.build import Imported, Result, import_files
from trainops.jobspec.model import ClusterProfile, Repository


@dataclass(frozen=True)
class Written:
    cluster: ClusterProfile
    """The cluster the jobs target."""
    jobs: tuple[tuple[Path, Imported], ...]
    """Each job spec and the file it was written to, by name."""
    result: Result
    """The import itself (what was skipped and why)."""


def target_cluster(repo: Repository, name: str | None) -> ClusterProfile:
    """`--cluster`, or the repository's only cluster; bad input naming the known ones."""
    known = ", ".join(sorted(repo.clusters)) or "none"
    if name is None:
        if len(repo.clusters) == 1:
            return next(iter(repo.clusters.values()))
        raise InputError(
            Problem.about(
                "--cluster", f"name the cluster the imported jobs target (known: {known})"
            )
        )
    if name not in repo.clusters:
        hint = difflib.get_close_matches(name, list(repo.clusters), n=1)
        did = f"; did you mean `{hint[0]}`?" if hint else ""
        raise InputError(
            Problem.about("--cluster", f"unknown cluster `{name}`{did} (known: {known})")
        )
    return repo.clusters[name]


def import_into(
    root: Path,
    repo: Repository,
    files: list[Path],
    *,
    cluster_name: str | None = None,
    namespace: str | None = None,
    out: Path | None = None,
) -> Written:
    """Import `files` for the cluster named (or the only one), in `namespace` where given,
    and write each spec to `out` (default: the repository's jobs/)."""
    cluster = target_cluster(repo, cluster_name)
    if namespace is not None and namespace not in cluster.namespaces:
        allowed = ", ".join(cluster.namespaces)
        raise InputError(
            Problem.about(
                "--namespace",
                f"`{namespace}` is not one of cluster `{cluster.name}`'s namespaces ({allowed})",
            )
        )
    result = import_files(files, root.resolve(), cluster, namespace)
    folder = out if out is not None else root / paths.JOBS_DIR
    targets = {job.name: folder / f"{job.name}.yaml" for job in result.jobs}
    existing = [
        Problem.whole_file(str(p), "exists: remove it, or import into another --out")
        for p in targets.values()
        if p.exists() or p.with_suffix(".yml").exists()
    ]
    if existing:
        raise InputError(existing)
    folder.mkdir(parents=True, exist_ok=True)
    for job in result.jobs:
        targets[job.name].write_text(job.text(), encoding="utf-8")
    return Written(cluster, tuple((targets[j.name], j) for j in result.jobs), result)
