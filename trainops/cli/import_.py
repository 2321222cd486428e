"""Import Kubeflow manifests (PyTorchJob, TFJob, MPIJob v2beta1/v1, with their claims, Services
and monitors) as job specs.

Writes `jobs/<name>.yaml` (or `--out DIR`) targeting `--cluster` (the repository's only
cluster when there is one), using the high-level fields where they fit and `podTemplate` for
the rest; prints every field it could not carry and why. Removed APIs that map onto a served
one (TFJob/PyTorchJob v1alpha2/v1beta*, MPIJob v1alpha1/v1alpha2) are converted with a note,
the others refused. `--namespace NS` moves the jobs into NS (docs/import.md).
Exit 0: everything imported; 1: some objects were not imported (listed); 2: bad input
(unreadable YAML, a removed API, an unknown cluster, a job file that already exists), and
nothing is written.
"""

from __future__ import annotations

import argparse
import difflib
from pathlib import Path

from trainops.cli.load import load
from trainops.core import paths
from trainops.core.errors import InputError, Problem
from trainops.importer.build import import_files
from trainops.spec.model import ClusterProfile, Repository


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE", help="manifests to read")
    parser.add_argument(
        "--out", type=Path, default=None, help="where to write the job specs (default: jobs/)"
    )
    parser.add_argument(
        "--cluster", default=None, help="the cluster the jobs target (default: the only one)"
    )
    parser.add_argument(
        "--namespace",
        default=None,
        metavar="NS",
        help="move the imported jobs into NS, one of the cluster's namespaces (manifests"
        " written for `default` or `kubeflow`, which no profile may list)",
    )


def _cluster(repo: Repository, name: str | None) -> ClusterProfile:
    known = ", ".join(sorted(repo.clusters)) or "none"
    if name is None:
        if len(repo.clusters) == 1:
            return next(iter(repo.clusters.values()))
        raise InputError(
            Problem(
                "--cluster",
                None,
                None,
                f"name the cluster the imported jobs target (known: {known})",
            )
        )
    if name not in repo.clusters:
        hint = difflib.get_close_matches(name, list(repo.clusters), n=1)
        did = f"; did you mean `{hint[0]}`?" if hint else ""
        raise InputError(
            Problem("--cluster", None, None, f"unknown cluster `{name}`{did} (known: {known})")
        )
    return repo.clusters[name]


def run(args: argparse.Namespace) -> int:
    root = Path(args.root)
    repo = load(root)
    cluster = _cluster(repo, args.cluster)
    if args.namespace is not None and args.namespace not in cluster.namespaces:
        allowed = ", ".join(cluster.namespaces)
        raise InputError(
            Problem(
                "--namespace",
                None,
                None,
                f"`{args.namespace}` is not one of cluster `{cluster.name}`'s namespaces"
                f" ({allowed})",
            )
        )
    result = import_files([Path(f) for f in args.files], root.resolve(), cluster, args.namespace)
    out = args.out if args.out is not None else root / paths.JOBS_DIR
    targets = {job.name: out / f"{job.name}.yaml" for job in result.jobs}
    existing = [
        Problem(str(p), None, None, "exists: remove it, or import into another --out")
        for p in targets.values()
        if p.exists() or p.with_suffix(".yml").exists()
    ]
    if existing:
        raise InputError(existing)
    out.mkdir(parents=True, exist_ok=True)
    for job in result.jobs:
        targets[job.name].write_text(job.text(), encoding="utf-8")
        print(f"imported {targets[job.name]} from {job.source} ({job.kind} {job.name})")
        for note in job.notes:
            print(f"  not carried: {note}")
    for problem in result.skipped:
        print(f"not imported: {problem}")
    if result.jobs:
        print(
            f"{len(result.jobs)} job(s) imported for cluster `{cluster.name}`: review them,"
            " then `trainops render` and `trainops validate`"
        )
    return 1 if result.skipped else 0
