"""Show the rendered diff: every overlay built at a base ref and at the working tree.

Prints, per cluster, a unified diff of each added, changed or removed object of
the fully built manifests (real kustomize), and a summary: object counts and the
GPU count change. `--format markdown` is for a pull-request comment.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainops import build, diff
from trainops.cli import conventions, progress
from trainops.cli.load import load
from trainops.core.errors import InputError, Problem
from trainops.core.git import GitError, default_base
from trainops.core.text import inert_lines
from trainops.jobspec.model import ClusterProfile, Repository
from trainops.render import render_repository
from trainops.report import capacity, capacity_view, job_changes
from trainops.report.formats import rules_off_markdown
from trainops.rules.engine import switched_off


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--base",
        metavar="REF",
        help="git ref to compare with (default: the merge base of HEAD with main)",
    )
    conventions.add_format(
        parser,
        ("text", "markdown"),
        "text",
        "text (default) or markdown for a pull-request comment",
    )
    progress.add_argument(parser)


def run(args: argparse.Namespace) -> int:
    root: Path = args.root
    try:
        base_ref = args.base or default_base(root)
        repo = load(root)
        files = render_repository(repo)
        with tempfile.TemporaryDirectory(prefix="trainops-diff-") as tmp:
            trees = diff.write_trees(root, repo, files, base_ref, Path(tmp), load=load)
            with progress.Progress.for_args(args, "diff", trees.overlays()) as shown_progress:
                base, head = diff.build_trees(trees, base_ref, shown_progress.wrap(build.kustomize))
    except diff.SideFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except GitError as err:
        raise InputError(Problem.whole_file(str(root), f"git: {err}")) from None
    base_clusters = trees.base_clusters
    products = {name: {g.resource for g in c.gpus} for name, c in repo.clusters.items()}
    changes = diff.compare(base, head, products)
    jobs = _job_changes(repo, base_clusters, base, head, products)
    shown = base_ref if args.base else f"merge base {base_ref[:12]}"
    if args.format == "markdown":
        before = capacity.fleet_of(base_clusters, {c: o.values() for c, o in base.items()})
        after = capacity.fleet_of(repo.clusters, {c: o.values() for c, o in head.items()})
        section = capacity_view.markdown_section(capacity.compare(before, after))
        off = [f"{slug} ({name})" for name, cluster in sorted(repo.clusters.items())
               for slug in switched_off(cluster)]  # fmt: skip
        sections = [job_changes.format_markdown(jobs)]
        sections += [s for s in (rules_off_markdown(off), section) if s]
        sys.stdout.write(inert_lines(diff.format_markdown(changes, shown, sections)))
    else:
        # The pull request's values, on CI's log: inert (core/text.py).
        text = diff.format_text(changes, shown, [job_changes.format_text(jobs)])
        sys.stdout.write(inert_lines(text))
    refused = job_changes.refused(jobs)
    for line in refused:
        print(f"error: {line}", file=sys.stderr)
    return 1 if refused else 0


def _job_changes(
    repo: Repository,
    base_clusters: Mapping[str, ClusterProfile],
    base: Mapping[str, Mapping[str, dict[str, Any]]],
    head: Mapping[str, Mapping[str, dict[str, Any]]],
    products: Mapping[str, set[str]],
) -> list[job_changes.ClusterJobs]:
    """Per cluster (either side), what the change does to its jobs. A cluster's tool and
    scheduler are the change's (the base's for a cluster the change removes)."""
    out = []
    for name in sorted(set(base) | set(head)):
        profile = repo.clusters.get(name) or base_clusters.get(name)
        tool = profile.delivery.tool if profile else "unknown"
        kueue = profile is not None and profile.scheduler.kind == "kueue"
        out.append(
            job_changes.cluster_jobs(
                name,
                tool,
                base.get(name, {}),
                head.get(name, {}),
                kueue=kueue,
                products=products.get(name, set()),
            )
        )
    return out
