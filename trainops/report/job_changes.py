"""What a change does to the training jobs on each cluster: the question a reviewer of a
training PR asks first (`trainops diff`, the PR comment's "Running jobs" section).

Per cluster, every job the change touches is in one of five groups (docs/gitops.md, "A
changed job"):

- creates: a job name new on the cluster; its pods start.
- restarts: a job removed and one added in the same namespace, of the same kind, built alike
  (`RESTART_SIMILARITY` of their lines, the names aside): a job renamed, a new run. The GitOps
  tool creates the new run and prunes the old one, whose pods are killed; the new run's
  trainer resumes from the newest checkpoint in its checkpoint directory when it names the
  same one. The only way to run a change the consumers refuse.
- updates in place: a kept job whose changed fields the API server and the webhooks accept;
  the object is updated and the operator restarts no running pod: pods it creates from then on
  (a new replica, a restart) get the new template, running ones keep theirs.
- cannot update: a kept job with a field a consumer refuses to change (which, and who, cited
  in `trainops.facts.lifecycle`). Sent to the cluster, it would stop every sync of the cluster
  (Argo CD's server-side diff) or the jobs' stage (Flux); so `trainops diff` exits 1.
- deletes: a job name gone: pruned, its pods killed if it runs, its record gone if it ended.

Running or finished is the cluster's to say, not Git's: each group says what happens in both.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from trainops.core.yaml_dump import dump
from trainops.facts.gpus import job_gpus
from trainops.facts.kubeflow import TRAINING_JOB_KINDS
from trainops.facts.trainer import TRAINJOB
from trainops.kube.job_change import JobChange, classify, dotted

JOB_KINDS = frozenset(k.kind for k in TRAINING_JOB_KINDS) | {TRAINJOB}
SOURCE_ANNOTATION = "trainops.dev/source"
TITLE = "Running jobs"
# How alike a removed and an added job must be built to be one job renamed (a new run).
RESTART_SIMILARITY = 0.8

CREATES, RESTARTS, UPDATES, REFUSED, DELETES = (
    "creates", "restarts", "updates in place", "cannot update", "deletes",
)  # fmt: skip
GROUPS = (CREATES, RESTARTS, UPDATES, REFUSED, DELETES)
WHAT_HAPPENS = {
    CREATES: "its pods start",
    RESTARTS: "the old run is deleted (its pods killed, or its record if it ended) and the new"
    " one starts; the trainer resumes from the newest checkpoint in its checkpoint directory",
    UPDATES: "the object is updated, no running pod is restarted: pods created from now on (a"
    " new replica, a restart) get the new spec, running ones keep theirs",
    REFUSED: "refused by the cluster: merged, it would stop the cluster's sync; give the job a"
    " new name to run the change as a new run, or revert it",
    DELETES: "pruned: its pods are killed if it runs; its record goes if it ended",
}


@dataclass(frozen=True)
class Entry:
    """One job in one group."""

    job: str
    """`Kind namespace/name` (a restart: the new run, `was` the old)."""
    gpus: int
    detail: str = ""
    was: str = ""


@dataclass
class ClusterJobs:
    cluster: str
    tool: str
    groups: dict[str, list[Entry]] = field(default_factory=lambda: {g: [] for g in GROUPS})

    @property
    def empty(self) -> bool:
        return not any(self.groups.values())


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return f"{obj.get('kind')} {meta.get('namespace') or '_'}/{meta.get('name')}"


def _jobs(objects: Mapping[str, dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(kind family, namespace, name) -> job: a v1 and a v2beta1 MPIJob are the same job."""
    out = {}
    for obj in objects.values():
        if obj.get("kind") in JOB_KINDS:
            meta = obj.get("metadata") or {}
            out[str(obj["kind"]), str(meta.get("namespace")), str(meta.get("name"))] = obj
    return out


def _source(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str((meta.get("annotations") or {}).get(SOURCE_ANNOTATION) or "")


def _likeness(old: Mapping[str, Any], new: Mapping[str, Any]) -> float:
    """How alike two jobs are built, the old name written as the new one (0 to 1)."""
    old_name = str((old.get("metadata") or {}).get("name"))
    new_name = str((new.get("metadata") or {}).get("name"))
    # The name as a whole word: not inside another name or key.
    word = re.compile(rf"(?<![\w.-]){re.escape(old_name)}(?![\w-])")
    before = word.sub(new_name, dump(old)).splitlines()
    return difflib.SequenceMatcher(None, before, dump(new).splitlines()).ratio()


def _renamed(
    removed: Mapping[tuple[str, str, str], dict[str, Any]], key: tuple[str, str, str],
    obj: Mapping[str, Any],
) -> tuple[str, str, str] | None:  # fmt: skip
    """The removed job of the same kind and namespace that `obj` is a new run of, if any."""
    scored = [
        (_likeness(old, obj), old_key) for old_key, old in removed.items() if old_key[:2] == key[:2]
    ]
    best = max(scored, default=(0.0, None))
    return best[1] if best[0] >= RESTART_SIMILARITY else None


def _refused(change: JobChange) -> str:
    parts = []
    for refusal in change.refused:
        when = " while the job runs" if refusal.rule.while_running else ""
        parts.append(f"{dotted(refusal.path)} (refused{when} by {refusal.rule.who})")
    return "; ".join(parts)


def _updated(change: JobChange) -> str:
    fields = sorted({dotted(p) for p in change.changed})
    shown = ", ".join(fields[:6]) + (f" and {len(fields) - 6} more" if len(fields) > 6 else "")
    return f"changes {shown}"


def cluster_jobs(
    cluster: str,
    tool: str,
    base: Mapping[str, dict[str, Any]],
    head: Mapping[str, dict[str, Any]],
    *,
    kueue: bool,
    products: Collection[str] = (),
) -> ClusterJobs:
    """One cluster's jobs, built at the base ref and at the change, in the five groups."""
    out = ClusterJobs(cluster, tool)
    old, new = _jobs(base), _jobs(head)
    added = {k: new[k] for k in sorted(set(new) - set(old))}
    removed = {k: old[k] for k in sorted(set(old) - set(new))}
    for key in sorted(set(old) & set(new)):
        if old[key] == new[key]:
            continue
        change = classify(old[key], new[key], kueue)
        gpus = job_gpus(new[key], products)
        if change.applies:
            out.groups[UPDATES].append(Entry(_name(new[key]), gpus, _updated(change)))
        else:
            out.groups[REFUSED].append(Entry(_name(new[key]), gpus, _refused(change)))
    for key, obj in added.items():
        gone = _renamed(removed, key, obj)
        if gone is not None:
            was = removed.pop(gone)
            detail = f"from {_source(obj)}" if _source(obj) else ""
            out.groups[RESTARTS].append(
                Entry(_name(obj), job_gpus(obj, products), detail, _name(was))
            )
        else:
            out.groups[CREATES].append(Entry(_name(obj), job_gpus(obj, products)))
    for obj in removed.values():
        out.groups[DELETES].append(Entry(_name(obj), job_gpus(obj, products)))
    return out


def _gpus(entry: Entry) -> str:
    return f"{entry.gpus} GPU" + ("" if entry.gpus == 1 else "s")


def format_text(clusters: list[ClusterJobs]) -> str:
    """The text section: one line per job, grouped per cluster."""
    lines = [f"{TITLE.lower()}:"]
    for c in clusters:
        if c.empty:
            lines.append(f"  {c.cluster} ({c.tool}): no job changes")
            continue
        lines.append(f"  {c.cluster} ({c.tool}):")
        for group in GROUPS:
            for e in c.groups[group]:
                job = f"{e.was} -> {e.job}" if e.was else e.job
                detail = f"; {e.detail}" if e.detail else ""
                lines.append(f"    {group}: {job} ({_gpus(e)}){detail}: {WHAT_HAPPENS[group]}")
    return "\n".join(lines) + "\n"


def format_markdown(clusters: list[ClusterJobs]) -> str:
    """The PR comment's section: a table per cluster with a change, and a caution box when a
    job cannot be updated."""
    lines = [f"#### {TITLE}", ""]
    refused = [(c.cluster, e) for c in clusters for e in c.groups[REFUSED]]
    if refused:
        lines += ["> [!CAUTION]", "> This change cannot be applied as it is:"]
        lines += [f"> - `{cluster}`: `{e.job}`: {e.detail}" for cluster, e in refused]
        lines += ["> Give each a new name to run the change as a new run, or revert it.", ""]
    if all(c.empty for c in clusters):
        lines.append("This change creates, restarts, updates and deletes no job.")
    for c in clusters:
        if c.empty:
            continue
        lines += [f"`{c.cluster}` ({c.tool}):", "", "| change | job | GPUs | what happens |",
                  "| --- | --- | ---: | --- |"]  # fmt: skip
        for group in GROUPS:
            for e in c.groups[group]:
                job = f"`{e.was}` → `{e.job}`" if e.was else f"`{e.job}`"
                what = f"{e.detail}: {WHAT_HAPPENS[group]}" if e.detail else WHAT_HAPPENS[group]
                lines.append(f"| {group} | {job} | {e.gpus} | {what} |")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def refused(clusters: list[ClusterJobs]) -> list[str]:
    """One error line per job that cannot be updated."""
    return [
        f"{c.cluster}: {e.job} cannot be updated: {e.detail}: give it a new name to run the"
        " change as a new run, or revert the change"
        for c in clusters
        for e in c.groups[REFUSED]
    ]
