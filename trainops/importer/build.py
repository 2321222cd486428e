"""Import one set of files: read every object, refuse removed APIs, import each training job
with the objects beside it (its claims, its metrics Service and monitors), then add the
escape hatch (`adopt.py`) and check the result loads as a job spec of this repository
(`reload.py`)."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trainops.core.errors import InputError, Problem
from trainops.core.text import one_line
from trainops.core.yamlio import Document, load_file
from trainops.facts.kubeflow import JOB_NAME_LABEL
from trainops.importer.adopt import with_hatch
from trainops.importer.convert import CONVERTERS, converted
from trainops.importer.kinds import BESIDE, IMPORTERS, REMOVED
from trainops.importer.notes import Notes
from trainops.importer.pod import drop_listed_env_from
from trainops.importer.precheck import named, note_replaced, unreadable
from trainops.importer.reload import load_spec, ordered
from trainops.jobspec.model import ClusterProfile

# Operator-set labels a metrics Service may select the job's pods by.
JOB_SELECTORS = (JOB_NAME_LABEL, "job-name")


@dataclass(frozen=True)
class Imported:
    """One job spec written by import."""

    name: str
    """The job's name (its file is `<name>.yaml`)."""
    source: str
    """`file:line` of the object it came from."""
    kind: str
    """The imported object's kind."""
    spec: dict[str, Any]
    """The job spec."""
    notes: tuple[Problem, ...]
    """What could not be carried, and why."""

    def text(self) -> str:
        # One comment line each, whatever the manifest's keys and names hold: a newline in a
        # dropped key wrote `secretEnv:` into the spec below (issue 35.6).
        lines = [
            "# yaml-language-server: $schema=../trainops/schemas/trainingjob.schema.json",
            one_line(
                f"# Imported by `trainops import` from {self.source} ({self.kind} {self.name})."
            ),
        ]
        lines += [one_line(f"# not carried: {n.message}") for n in self.notes]
        body = yaml.safe_dump(self.spec, sort_keys=False, default_flow_style=False, width=100)
        return "\n".join(lines) + "\n" + body


@dataclass(frozen=True)
class Result:
    jobs: tuple[Imported, ...]
    """The job specs, by name."""
    skipped: tuple[Problem, ...]
    """Objects not imported (kinds trainops does not render, objects no job uses)."""


def _read(paths: list[Path], root: Path) -> list[Document]:
    docs: list[Document] = []
    problems: list[Problem] = []
    for path in paths:
        display = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        if not path.is_file():
            problems.append(Problem.whole_file(display, "no such file"))
            continue
        try:
            docs += [d for d in load_file(path, display) if d.data is not None]
        except InputError as err:
            problems += err.problems
    if problems:
        raise InputError(problems)
    return docs


def _gvk(data: Any) -> tuple[str, str] | None:
    if isinstance(data, dict) and isinstance(data.get("apiVersion"), str):
        return str(data["apiVersion"]), str(data.get("kind"))
    return None


def _refuse_removed(docs: list[Document]) -> None:
    problems = []
    for doc in docs:
        gvk = _gvk(doc.data)
        if gvk in REMOVED:
            line, column = doc.position(["apiVersion"])
            problems.append(
                Problem(
                    doc.file,
                    line,
                    column,
                    f"{gvk[1]} {gvk[0]} was removed: no operator serves it any more; rewrite it"
                    f" as {REMOVED[gvk]} and import that",
                )
            )
    if problems:
        raise InputError(problems)


def _metrics_port(
    job: dict[str, Any], beside: list[tuple[dict[str, Any], Document]], notes: Notes, used: set[int]
) -> None:
    for obj, _ in beside:
        if obj.get("kind") != "Service":
            continue
        selector = (obj.get("spec") or {}).get("selector") or {}
        if not any(selector.get(label) == job["name"] for label in JOB_SELECTORS):
            continue
        used.add(id(obj))
        ports = (obj.get("spec") or {}).get("ports") or []
        if ports:
            job["metricsPort"] = int(ports[0]["port"])
        notes.add_object(
            obj,
            "re-rendered by trainops as the job's metrics Service"
            f" `{job['name']}-metrics` (headless, selecting the operator's"
            f" {JOB_NAME_LABEL} label) on port {job.get('metricsPort')}",
        )
        for other, _ in beside:
            if other.get("kind") in {"ServiceMonitor", "PodMonitor"}:
                used.add(id(other))
                notes.add_object(
                    other,
                    f"re-rendered by trainops as ServiceMonitor"
                    f" `{job['name']}` scraping the metrics port",
                )


# Over the complexity limits after the import and house branches met; split next.
def import_files(  # noqa: C901, PLR0915
    paths: list[Path], root: Path, cluster: ClusterProfile, namespace: str | None = None
) -> Result:
    """Every training job in `paths` as a job spec targeting `cluster`, in `namespace` where
    one is given (`--namespace`: manifests written for `default` or `kubeflow`, which no
    profile may list, move into one the cluster allows; the objects beside move with them)."""
    docs = _read(paths, root)
    _refuse_removed(docs)
    beside = [(d.data, d) for d in docs if _gvk(d.data) in BESIDE]
    beside_docs = {id(d.data): d for _, d in beside}
    jobs: list[Imported] = []
    skipped: list[Problem] = []
    used: set[int] = set()
    refused: list[Problem] = []
    for doc in docs:
        gvk = _gvk(doc.data)
        if gvk is None or gvk in BESIDE:
            continue
        line, column = doc.position(["kind"])
        if gvk not in IMPORTERS and gvk not in CONVERTERS:
            skipped.append(
                Problem(
                    doc.file,
                    line,
                    column,
                    f"{gvk[1]} {gvk[0]} not imported: not a training job kind trainops renders,"
                    " nor an object read beside one",
                )
            )
            continue
        notes = Notes(doc, beside_docs)
        obj = converted(copy.deepcopy(doc.data), notes, cluster)
        if obj is None:
            refused += notes.refused
            continue
        gvk = (str(obj["apiVersion"]), str(obj["kind"]))
        named(obj, notes, Path(doc.file).stem)
        origin = (obj.get("metadata") or {}).get("namespace") or "default"
        mine = [
            (o, d)
            for o, d in beside
            if ((o.get("metadata") or {}).get("namespace") or "default") == origin
        ]
        claims: dict[str, dict[str, Any]] = {
            str((o.get("metadata") or {}).get("name")): o
            for o, _ in mine
            if o.get("kind") == "PersistentVolumeClaim"
        }
        if namespace is not None and namespace != origin:
            obj.setdefault("metadata", {})["namespace"] = namespace
            notes.add(
                ["metadata", "namespace"]
                if (doc.data.get("metadata") or {}).get("namespace")
                else ["kind"],
                f"namespace `{origin}` -> `{namespace}` (--namespace)",
            )
        importer, key = IMPORTERS[gvk]
        unreadable(obj, key, notes)
        if notes.refused:
            refused += notes.refused
            continue
        secrets = {
            str((o.get("metadata") or {}).get("name")): o
            for o, _ in mine
            if o.get("kind") == "Secret"
        }
        before = set(claims)
        job = importer(obj, doc, claims, cluster, notes, secrets=secrets)
        if notes.refused:
            refused += notes.refused
            continue
        if job is None:
            skipped += notes.items
            continue
        used |= {
            id(o)
            for o, _ in mine
            if (o.get("metadata") or {}).get("name") in before - set(claims)
            and o.get("kind") == "PersistentVolumeClaim"
        }
        listed = {str(v.get("secret")) for v in (job.get("secretEnv") or {}).values()}
        used |= {id(o) for name, o in secrets.items() if name in listed}
        drop_listed_env_from(obj, key, listed & set(secrets))
        note_replaced(obj, notes)
        _metrics_port(job, mine, notes, used)
        source = f"{doc.file}:{doc.line}"
        job = ordered(with_hatch(ordered(job), obj, key, cluster, notes, source=source))
        load_spec(job, cluster, source)
        jobs.append(
            Imported(job["name"], f"{doc.file}:{doc.line}", gvk[1], job, tuple(notes.items))
        )
    for obj, doc in beside:
        if id(obj) not in used:
            line, column = doc.position(["kind"])
            skipped.append(
                Problem(
                    doc.file,
                    line,
                    column,
                    f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')} not imported: no"
                    " imported job uses it (trainops delivers only the objects its jobs render)",
                )
            )
    if refused:
        raise InputError(refused)
    names = [j.name for j in jobs]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise InputError(
            [
                Problem.whole_file(j.source, f"two objects import as job `{j.name}`")
                for j in jobs
                if j.name in clashes
            ]
        )
    return Result(tuple(sorted(jobs, key=lambda j: j.name)), tuple(skipped))
