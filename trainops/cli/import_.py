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
from pathlib import Path

from trainops.cli.load import load
from trainops.core.text import one_line
from trainops.importer import command


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


def run(args: argparse.Namespace) -> int:
    root = Path(args.root)
    written = command.import_into(
        root,
        load(root),
        [Path(f) for f in args.files],
        cluster_name=args.cluster,
        namespace=args.namespace,
        out=args.out,
    )
    for path, job in written.jobs:
        print(one_line(f"imported {path} from {job.source} ({job.kind} {job.name})"))
        for note in job.notes:
            print(one_line(f"  not carried: {note}"))
    for problem in written.result.skipped:
        print(one_line(f"not imported: {problem}"))
    if written.jobs:
        print(
            f"{len(written.jobs)} job(s) imported for cluster `{written.cluster.name}`: review"
            " them, then `trainops render` and `trainops validate`"
        )
    return 1 if written.result.skipped else 0
