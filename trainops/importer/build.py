"""Import one set of files: read every object, refuse removed APIs, import each training job
with the objects beside it, add the escape hatch, and check the result loads as a job spec
of this repository (schema, file checks, core schemas at the cluster's version)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from trainops.core.errors import InputError, Problem
from trainops.core.yamlio import Document, load_file, load_text
from trainops.facts.kubeflow import JOB_NAME_LABEL, REPLICA_TYPES
from trainops.importer.hatch import template_override
from trainops.importer.kinds import BESIDE, IMPORTERS, REMOVED
from trainops.importer.launch import same_launch
from trainops.importer.notes import Notes
from trainops.importer.pod import normalised_template
from trainops.importer.precheck import note_replaced, unreadable
from trainops.render.objects import training_job
from trainops.render.overrides import merge
from trainops.render.pod import pod_template
from trainops.spec.job import build_job
from trainops.spec.load import job_against_cluster
from trainops.spec.model import ClusterProfile
from trainops.spec.podtemplate import check_fields
from trainops.spec.problems import Collector

# The key order of a written spec: the way the shipped examples read.
KEY_ORDER = (
    "apiVersion",
    "kind",
    "name",
    "namespace",
    "framework",
    "image",
    "command",
    "args",
    "replicas",
    "gpusPerReplica",
    "resources",
    "elastic",
    "tensorflow",
    "mpi",
    "volumes",
    "sharedMemory",
    "env",
    "secretEnv",
    "metricsPort",
    "hostNetwork",
    "securityContext",
    "terminationGracePeriodSeconds",
    "runPolicy",
    "labels",
    "annotations",
    "imagePullSecrets",
    "serviceAccountName",
    "priorityClassName",
    "affinity",
    "podLabels",
    "podAnnotations",
    "extraVolumes",
    "extraVolumeMounts",
    "podTemplate",
    "replicaPodTemplates",
    "targets",
)
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
        lines = [
            "# yaml-language-server: $schema=../trainops/schemas/trainingjob.schema.json",
            f"# Imported by `trainops import` from {self.source} ({self.kind} {self.name}).",
        ]
        lines += [f"# not carried: {n.message}" for n in self.notes]
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


def _ordered(spec: dict[str, Any]) -> dict[str, Any]:
    """`spec` in KEY_ORDER (a key it does not list last: never dropped)."""
    return {
        **{k: spec[k] for k in KEY_ORDER if k in spec},
        **{k: v for k, v in spec.items() if k not in KEY_ORDER},
    }


def _templates(model: Any, cluster: ClusterProfile, key: str) -> Callable[[str], dict[str, Any]]:
    """The pod template trainops renders for each replica type of the job (before the hatch);
    a PyTorchJob's Worker-only original is compared with the Worker template."""
    target = model.targets[0]
    specs = training_job(model, cluster, target)["spec"][key]

    def template(rtype: str) -> dict[str, Any]:
        if rtype in specs:
            return copy.deepcopy(specs[rtype]["template"])
        return pod_template(model, cluster, target, replica_type=rtype)

    return template


def _carried(obj: dict[str, Any], key: str, model: Any) -> dict[str, dict[str, Any]]:
    """The original pod template of every replica type trainops renders (the importers name
    the types they drop)."""
    rendered = set(REPLICA_TYPES[str(obj.get("kind"))])
    out = {
        t: normalised_template(s.get("template") or {})
        for t, s in (obj["spec"].get(key) or {}).items()
        if t in rendered
    }
    if model.elastic:
        out.pop("Master", None)
    return out


def _hatch(
    job: dict[str, Any], obj: dict[str, Any], key: str, cluster: ClusterProfile, notes: Notes
) -> dict[str, Any]:
    """`job` with the overrides that make each replica type's pod the original's."""
    model = _load(job, cluster, "(import)")
    rendered_for = _templates(model, cluster, key)
    originals = _carried(obj, key, model)
    overrides: dict[str, dict[str, Any]] = {}
    added: list[str] = []
    for rtype, original in sorted(originals.items()):
        rendered = rendered_for(rtype)
        _same_container(original, rendered)
        _same_program(original, rendered)
        override, extra = template_override(original, rendered)
        added += [p for p in extra if p not in added]
        overrides[rtype] = override
    out = dict(job)
    shared = _common(list(overrides.values()))
    if shared:
        out["podTemplate"] = shared
    rest: dict[str, dict[str, Any]] = {}
    for rtype, original in sorted(originals.items()):
        rendered = merge(rendered_for(rtype), shared)
        remainder, _ = template_override(original, rendered)
        if remainder:
            rest[rtype] = remainder
    if rest:
        out["replicaPodTemplates"] = rest
    if added:
        notes.add(
            ["spec", key],
            "trainops adds (its guarantees and explicit defaults):"
            f" {', '.join(a.lstrip('.') for a in added)}",
        )
    return out


def _same_container(original: dict[str, Any], rendered: dict[str, Any]) -> None:
    """The original's training container under trainops's name, where it has another (the
    importers said so): the operator finds it by that name (the MPI Operator by position)."""
    ours = [c.get("name") for c in (rendered.get("spec") or {}).get("containers") or []]
    theirs = (original.get("spec") or {}).get("containers") or []
    if ours and theirs and ours[0] not in [c.get("name") for c in theirs]:
        theirs[0]["name"] = ours[0]


def _same_program(original: dict[str, Any], rendered: dict[str, Any]) -> None:
    """Where the original runs what trainops renders (the same argv split otherwise between
    command and args; the same program and arguments under python, torchrun or
    `python -m torch.distributed.run`; the same program and author's options under mpirun),
    take trainops's argv: the generated launcher is the point, not a difference to carry in
    the escape hatch."""
    ours = {c.get("name"): c for c in (rendered.get("spec") or {}).get("containers") or []}
    for container in (original.get("spec") or {}).get("containers") or []:
        mine = ours.get(container.get("name"))
        if mine is None or "command" not in mine:
            continue
        if same_launch(container, mine):
            for key in ("command", "args"):
                container.pop(key, None)
                if key in mine:
                    container[key] = list(mine[key])


def _common(values: list[Any]) -> Any:
    """What every override says the same (the part that goes into `podTemplate`)."""
    if not values:
        return {}
    first = values[0]
    if all(v == first for v in values):
        return first
    if all(isinstance(v, dict) for v in values):
        out = {}
        for key in first:
            if all(key in v for v in values):
                got = _common([v[key] for v in values])
                if got not in ({}, [], None):
                    out[key] = got
        return out
    if all(isinstance(v, list) for v in values):
        return [item for item in first if all(item in v for v in values)]
    return None


def _load(job: dict[str, Any], cluster: ClusterProfile, source: str) -> Any:
    """The job spec as the loader reads it; its problems (a bug or an unexpressible value)
    raised with the source object named."""
    text = yaml.safe_dump(job, sort_keys=False)
    (doc,) = load_text(text, f"jobs/{job['name']}.yaml")
    out = Collector(doc)
    built = build_job(doc, out)
    check_fields(doc.data, [cluster.kubernetes_version], out)
    problems = list(out.problems)
    if built is not None and not problems:
        problems = job_against_cluster(built, doc, cluster)
    if built is None or problems:
        raise InputError(
            [
                Problem.whole_file(
                    source,
                    f"the imported spec does not load ({p.message}); the object cannot be imported"
                    " as it is",
                )
                for p in problems
            ]
        )
    return built


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


# Over the complexity limits: the import branch reworks this file; split after merging.
def import_files(  # noqa: PLR0915
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
        if gvk not in IMPORTERS:
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
        obj = copy.deepcopy(doc.data)
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
        notes = Notes(doc, beside_docs)
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
        before = set(claims)
        job = importer(obj, doc, claims, cluster, notes)
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
        note_replaced(obj, key, notes)
        _metrics_port(job, mine, notes, used)
        job = _ordered(_hatch(_ordered(job), obj, key, cluster, notes))
        _load(job, cluster, f"{doc.file}:{doc.line}")
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
