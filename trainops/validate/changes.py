"""What a change can reach: the part of the repository `validate --changed` and
`render --check --changed` build, check and compare, and what they skip and why.

The change is every file that differs between a base commit and the working tree
(committed, staged, unstaged and untracked). Each path reaches:

- `jobs/<file>`: that job, as it is now and as it was at the base (a renamed or deleted
  job's old name), on every cluster it targets or targeted;
- `clusters/<name>.yaml` (the profile) or `clusters/<name>/manifests/` (platform objects
  the rules look up: Namespaces' Pod Security labels, queues): every job on that cluster;
- `trainops.yaml`, `trainops/` (the renderer, the schemas, the rules), the packaging, or a
  path this module does not know: everything (when in doubt, widen);
- docs, tests, benchmarks, the trainer's code, CI files: nothing that is built.

Rules look objects up beyond their own (`trainops.rules.context`): by kind and name in a
namespace (a claim, a ConfigMap, a Service) and by label selector. Every object a job
renders is named after the job or after a claim the spec names, and every selector it
renders carries the job's name, so one job reaches another only by naming it (or one of
its claims) in its spec. Jobs are therefore widened by those names, in both directions
and on the same cluster and namespace: a job that names a changed (or removed) job is
checked too, since its findings can change; a job a checked job names is built as
context, its own findings left out. Each checked cluster keeps its platform folder and
runtimes (what the jobs look up), and gitops/ is checked whenever anything is: the
AppProject's and Flux RBAC's kinds are computed from every job and platform object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainops import build
from trainops.core import paths
from trainops.core.errors import InputError, Problem
from trainops.core.findings import Finding, Severity
from trainops.jobspec.checked import CheckedSpecs, spec_targets
from trainops.jobspec.model import Repository, TrainingJob
from trainops.render import (
    MONITORING_DIR,
    PLATFORM_DIR,
    RUNTIMES_DIR,
    render_part,
    render_repository,
    write,
)
from trainops.render.delivered import JOBS_PART, PLATFORM_PART, targets_on
from trainops.render.write import Drift
from trainops.validate.changed_files import Change, sort_path
from trainops.validate.repo import Part, RepoResult, validate_repository


@dataclass
class Scope:
    """The part of the repository a change can reach."""

    base: str
    """The base commit compared with the working tree."""
    changed: list[str]
    """Every changed path, relative to the repository root."""
    everything: str | None = None
    """Why the whole repository is checked (None: only the parts below)."""
    checked: dict[str, set[str]] = field(default_factory=dict)
    """cluster -> jobs built and reported there (with its platform folder and runtimes)."""
    context: dict[str, set[str]] = field(default_factory=dict)
    """cluster -> jobs built only for the lookups of checked ones; their findings dropped."""
    gitops: bool = False
    """gitops/ is checked."""
    touched: dict[str, set[str]] = field(default_factory=dict)
    """cluster -> names of the changed jobs there, old and new (a removed job's too)."""
    generated: list[str] = field(default_factory=list)
    """Changed generated files (validate renders from the specs; render --check compares)."""
    reasons: list[str] = field(default_factory=list)
    """Why each part is in, one line each."""
    skipped: list[str] = field(default_factory=list)
    """Changed paths that reach nothing built, with why."""

    def clusters(self) -> dict[str, set[str]]:
        """cluster -> every job to build there (checked and context)."""
        return {c: jobs | self.context.get(c, set()) for c, jobs in self.checked.items()}

    def keeps(self, finding: Finding) -> bool:
        """A finding about what this scope checks (not about a context-only job)."""
        # A finding moved to its spec line was found in the rendered file it names first.
        job = job_of(finding.related[0].file if finding.related else finding.file)
        cluster = finding.cluster or ""
        return job is None or job not in self.context.get(cluster, set())


# The folders of an overlay that are not a job's: job names are DNS labels (no `_`), and
# `platform` is a reserved job name (spec/job_checks.py).
NOT_JOBS = (PLATFORM_DIR, RUNTIMES_DIR, MONITORING_DIR, PLATFORM_PART, JOBS_PART)


def job_of(file: str | None) -> str | None:
    """The job whose rendered folder holds `file` (`base/<job>/...`,
    `overlays/<cluster>/<job>/...`), None for anything else."""
    parts = (file or "").split("/")
    if len(parts) >= 3 and parts[0] == paths.BASE_DIR:
        return parts[1]
    if len(parts) >= 4 and parts[0] == paths.OVERLAYS_DIR:
        return None if parts[2] in NOT_JOBS else parts[2]
    return None


def _spec_text(root: Path, job: TrainingJob) -> str:
    try:
        return (root / job.file).read_text(encoding="utf-8")
    except OSError:
        return ""


def _names_of(job: TrainingJob) -> set[str]:
    """The names the job's rendered objects carry: its own and the claims it creates."""
    return {job.name} | {v.claim_name for v in job.volumes if v.create}


def _old_names(data: dict[str, Any]) -> set[str]:
    """The same for a spec as it was at the base (every claim it names: a superset)."""
    volumes = data.get("volumes")
    entries = volumes.values() if isinstance(volumes, dict) else []
    claims = {str(v["claimName"]) for v in entries if isinstance(v, dict) and "claimName" in v}
    return ({str(data["name"])} if data.get("name") else set()) | claims


def _mentions(text: str, names: Iterable[str]) -> bool:
    return any(name and name in text for name in names)


class _Widener:
    """Jobs on one cluster, and who names whom (by spec text, within a namespace)."""

    def __init__(self, root: Path, repo: Repository, cluster: str, texts: dict[str, str]) -> None:
        self.jobs = {job.name: job for job, _ in targets_on(repo, repo.clusters[cluster])}
        self._texts = texts  # job name -> spec text, shared by every cluster's widener
        self._root = root

    def text(self, name: str) -> str:
        if name not in self._texts:
            self._texts[name] = _spec_text(self._root, self.jobs[name])
        return self._texts[name]

    def naming(self, names: set[str], namespaces: set[str]) -> set[str]:
        """Jobs here whose spec names any of `names` (the jobs that can look them up)."""
        return {
            n
            for n, job in self.jobs.items()
            if job.namespace in namespaces and _mentions(self.text(n), names)
        }

    def named_by(self, checked: set[str]) -> set[str]:
        """Jobs here that a job of `checked` names (what its lookups can find)."""
        found: set[str] = set()
        for name in checked:
            text, namespace = self.text(name), self.jobs[name].namespace
            found |= {
                other
                for other, job in self.jobs.items()
                if job.namespace == namespace and _mentions(text, _names_of(job))
            }
        return found - checked


@dataclass
class _Reach:
    """What the changed paths reach, cluster by cluster, before widening to neighbours."""

    wide: dict[str, str] = field(default_factory=dict)
    """cluster -> why all its jobs (its profile or platform objects changed)."""
    touched: dict[str, set[str]] = field(default_factory=dict)
    """cluster -> the changed jobs' names (old or new)."""
    exported: dict[str, set[str]] = field(default_factory=dict)
    """cluster -> the names the changed jobs' objects carry."""
    namespaces: dict[str, set[str]] = field(default_factory=dict)
    """cluster -> the changed jobs' namespaces."""

    def add_job(self, side: tuple[Any, Any, set[str], set[str]], clusters: set[str]) -> None:
        """One side (base or working tree) of a changed job, on the clusters it targets."""
        name, namespace, targets, names = side
        for c in targets & clusters if name else ():
            self.touched.setdefault(c, set()).add(str(name))
            self.exported.setdefault(c, set()).update(names)
            self.namespaces.setdefault(c, set()).add(str(namespace))

    def only(self, repo: Repository, cluster: str) -> None:
        """Keep `--cluster`'s part; bad input when there is no such cluster."""
        if cluster not in repo.clusters:
            known = ", ".join(sorted(repo.clusters)) or "none"
            raise InputError(
                Problem.about("--cluster", f"unknown cluster {cluster!r} (known: {known})")
            )
        self.touched = {c: v for c, v in self.touched.items() if c == cluster}
        self.wide = {c: v for c, v in self.wide.items() if c == cluster}


def affected(root: Path, repo: Repository, change: Change, cluster: str | None = None) -> Scope:
    """The scope of `change` (`cluster`: that one only)."""
    scope = Scope(base=change.commit, changed=change.paths)
    reach = _reach(repo, scope, change)
    if cluster is not None:
        reach.only(repo, cluster)
    _widen(root, repo, scope, reach)
    scope.touched = reach.touched
    scope.gitops = cluster is None and bool(scope.checked or reach.wide or reach.touched)
    return scope


def _reach(repo: Repository, scope: Scope, change: Change) -> _Reach:
    """Each changed path sorted (`sort_path`) into what it reaches."""
    jobs_by_file = {job.file: job for job in repo.jobs}
    profiles = {c.file: name for name, c in repo.clusters.items()}
    reach = _Reach()
    for rel in scope.changed:
        kind, cluster = sort_path(rel, profiles)
        if kind == "generated":
            scope.generated.append(rel)
        elif kind == "unbuilt":
            scope.skipped.append(f"{rel}: nothing built reads it")
        elif kind == "job":
            for side in _job_sides(change.at_base(rel), jobs_by_file.get(rel)):
                reach.add_job(side, set(repo.clusters))
            scope.reasons.append(f"{rel}: the job, on each cluster it targets or targeted")
        elif kind == "platform" and cluster is not None:
            reach.wide.setdefault(cluster, f"{rel}: platform objects every job there looks up")
        elif kind == "profile" and cluster is not None:
            reach.wide.setdefault(cluster, f"{rel}: the profile of every job there")
        else:
            scope.everything = scope.everything or (
                f"{rel}: may change every rendered object (settings, renderer, schemas, rules,"
                " a removed or unknown file)"
            )
    return reach


def _job_sides(
    old: dict[str, Any], now: TrainingJob | None
) -> list[tuple[Any, Any, set[str], set[str]]]:
    """(name, namespace, clusters, names its objects carry) of a changed job at the base and,
    unless deleted, in the working tree."""
    sides = [(old.get("name"), old.get("namespace"), spec_targets(old), _old_names(old))]
    if now:
        targets = {t.cluster for t in now.targets}
        sides.append((now.name, now.namespace, targets, _names_of(now)))
    return sides


def _widen(root: Path, repo: Repository, scope: Scope, reach: _Reach) -> None:
    """What to check on each cluster reached: all its jobs, or the changed ones and the jobs
    that name them (built with the jobs they name as context)."""
    texts: dict[str, str] = {}
    for name, why in sorted(reach.wide.items()):
        widener = _Widener(root, repo, name, texts)
        scope.checked[name] = set(widener.jobs)
        scope.reasons.append(f"{why}: all {len(widener.jobs)} job(s) on {name}")
    for name, changed in sorted(reach.touched.items()):
        if name in reach.wide:
            continue
        widener = _Widener(root, repo, name, texts)
        named = widener.naming(reach.exported[name], reach.namespaces[name])
        checked = (changed & set(widener.jobs)) | named
        neighbours = checked - changed
        if neighbours:
            scope.reasons.append(
                f"{name}: {', '.join(sorted(neighbours))} name(s) a changed job or its claims"
            )
        scope.checked[name] = checked
        context = widener.named_by(checked)
        if context:
            scope.context[name] = context


def describe(scope: Scope, repo: Repository, specs: CheckedSpecs | None = None) -> list[str]:
    """What `--changed` checked and skipped, and why: lines for the terminal (`specs`: the
    job specs the loader checked; None: every one)."""
    lines = [f"--changed: compared with {scope.base[:12]}, {len(scope.changed)} changed path(s)"]
    if scope.everything:
        return [*lines, f"  everything is checked: {scope.everything}"]
    unchecked = (
        0
        if specs is None
        else sum(not specs.checks(j.file, (t.cluster for t in j.targets)) for j in repo.jobs)
    )
    lines += [f"  {reason}" for reason in scope.reasons]
    total = sum(len(targets_on(repo, c)) for c in repo.clusters.values())
    checked = sum(len(jobs) for jobs in scope.checked.values())
    context = sum(len(jobs) for jobs in scope.context.values())
    lines.append(
        f"  checked: {checked} of {total} job placement(s) on {len(scope.checked)} cluster(s)"
        + (f" (+{context} built as context, their findings left out)" if context else "")
        + (", gitops/" if scope.gitops else "")
    )
    lines.append(
        f"  skipped: {total - checked} job placement(s) no changed file reaches"
        + ("" if scope.gitops else ", gitops/")
    )
    if unchecked:
        lines.append(
            f"  {unchecked} of {len(repo.jobs)} job spec(s) loaded, not checked again: unchanged,"
            " on clusters no change reaches"
        )
    lines += [f"  skipped {line}" for line in scope.skipped]
    if scope.generated:
        lines.append(
            f"  {len(scope.generated)} generated file(s) changed: validate renders from the"
            " specs; `render --check --changed` compares them"
        )
    return lines


def validate_changed(
    root: Path,
    repo: Repository,
    scope: Scope,
    *,
    cluster_name: str | None = None,
    crds: Path | None = None,
    unknown_kind: Severity | None = Severity.ERROR,
    run: Callable[[Path], str] = build.kustomize,
) -> RepoResult:
    """`validate_repository` on the part of the repository `scope` reaches: the findings a
    whole run reports there, and none about context-only jobs."""
    if scope.everything:
        return validate_repository(
            root, repo, cluster_name=cluster_name, crds=crds, unknown_kind=unknown_kind, run=run
        )
    part = Part({c: frozenset(jobs) for c, jobs in scope.clusters().items()}, scope.gitops)
    result = validate_repository(
        root, repo, crds=crds, unknown_kind=unknown_kind, run=run, part=part
    )
    result.findings = [f for f in result.findings if scope.keeps(f)]
    return result


def check_changed(root: Path, repo: Repository, scope: Scope) -> tuple[int, list[Drift]]:
    """`render --check` on what `scope` reaches, and on every changed generated file: the
    number of files compared and the drift among them."""
    if scope.everything:
        files = render_repository(repo)
        return len(files), write.check(root, files)
    clusters = {c: set(jobs) for c, jobs in scope.clusters().items()}
    gitops = scope.gitops
    within = set(scope.generated)
    for rel in scope.generated:
        parts = rel.split("/")
        if parts[0] == paths.GITOPS_DIR:
            gitops = True
        elif parts[0] == paths.OVERLAYS_DIR and len(parts) > 2 and parts[1] in repo.clusters:
            job = job_of(rel)
            clusters.setdefault(parts[1], set()).update([job] if job else [])
        elif (job := job_of(rel)) is not None:
            for target in next((j.targets for j in repo.jobs if j.name == job), ()):
                clusters.setdefault(target.cluster, set()).add(job)
    names = {name for jobs in scope.touched.values() for name in jobs}
    for cluster, jobs in clusters.items():
        overlay = f"{paths.OVERLAYS_DIR}/{cluster}"
        within |= {f"{overlay}/{part}/" for part in NOT_JOBS}
        within |= {f"{overlay}/kustomization.yaml"}
        within |= {f"{overlay}/{job}/" for job in jobs | names}
        names |= jobs
    within |= {f"{paths.BASE_DIR}/{job}/" for job in names}
    if gitops:
        within.add(f"{paths.GITOPS_DIR}/")
    files = render_part(repo, clusters, gitops=gitops, list_all=True)
    return len(files), write.check(root, files, within)
