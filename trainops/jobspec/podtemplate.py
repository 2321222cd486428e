"""The escape hatch and the first-class pod fields, checked at the door: each against its core
Kubernetes schema (kubernetes-validate's strict schemas for the version of every cluster the
job targets), with file:line:column for every problem; labels and annotations against
Kubernetes' own syntax.

A `podTemplate` is partial (it is merged into what trainops renders), so the one thing it
may leave out that a pod may not is `spec.containers`; everything it does say must be valid.

Labels and annotations a job asks for on its pods (`podLabels`, `podAnnotations`, the
templates' metadata) get the same checks as the job's own (`spec/metadata.py`): Kubernetes'
syntax, and no control surface (waivers, Kueue, Volcano, Argo CD, Flux, Multus keys).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trainops.facts.kubernetes_schemas import core_definitions
from trainops.jobspec import metadata as meta
from trainops.jobspec.problems import Collector, report_errors

if TYPE_CHECKING:
    import jsonschema

_CORE = "io.k8s.api.core.v1."
# Which core definition each first-class field (or each of its items) is.
FIELD_DEFINITIONS: dict[str, str] = {
    "affinity": "Affinity",
    "extraVolumes": "Volume",
    "extraVolumeMounts": "VolumeMount",
    "sidecars": "Container",
}


@functools.cache
def _validator(kubernetes_version: str, definition: str) -> jsonschema.Draft202012Validator:
    """A validator for one core definition; a PodTemplateSpec without required containers."""
    defs = dict(core_definitions(kubernetes_version)["$defs"])
    pod_spec = copy.deepcopy(defs[_CORE + "PodSpec"])
    pod_spec.pop("required", None)
    defs[_CORE + "PodSpec"] = pod_spec
    import jsonschema  # noqa: PLC0415 (see jobspec.schemas.validator)

    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{_CORE}{definition}", "$defs": defs})


def check_core(value: Any, definition: str, versions: Sequence[str], out: Collector,
               where: Sequence[str | int]) -> None:  # fmt: skip
    """`value` against core `definition` at each Kubernetes version (each problem once)."""
    seen = len(out.problems)
    for version in sorted(set(versions)):
        scratch = Collector(out.doc)
        report_errors(_validator(version, definition).iter_errors(value), scratch, where)
        for problem in scratch.problems:
            if problem not in out.problems[seen:]:
                out.problems.append(problem)


def check_fields(d: dict[str, Any], versions: Sequence[str], out: Collector) -> None:
    """Every pod field of a job spec `d` (as written) at the targets' Kubernetes `versions`."""
    if not versions:
        return
    if "affinity" in d:
        check_core(d["affinity"], FIELD_DEFINITIONS["affinity"], versions, out, ["affinity"])
    for field in ("extraVolumes", "extraVolumeMounts", "sidecars"):
        for i, item in enumerate(d.get(field, ())):
            check_core(item, FIELD_DEFINITIONS[field], versions, out, [field, i])
    if "podTemplate" in d:
        check_core(d["podTemplate"], "PodTemplateSpec", versions, out, ["podTemplate"])
    for rtype, template in sorted(d.get("replicaPodTemplates", {}).items()):
        check_core(template, "PodTemplateSpec", versions, out, ["replicaPodTemplates", rtype])


def check_metadata(d: dict[str, Any], out: Collector) -> None:
    """Pod labels and annotations: Kubernetes syntax, then the security policy hook."""
    blocks: list[tuple[str, list[str | int], dict[str, Any]]] = [  # (kind, where, mapping)
        ("label", ["podLabels"], d.get("podLabels", {})),
        ("annotation", ["podAnnotations"], d.get("podAnnotations", {})),
    ]
    templates: list[tuple[list[str | int], dict[str, Any]]] = [
        (["podTemplate"], d.get("podTemplate") or {})
    ]
    templates += [
        (["replicaPodTemplates", r], t) for r, t in sorted(d.get("replicaPodTemplates", {}).items())
    ]
    for where, template in templates:
        meta = template.get("metadata") or {}
        for key in sorted(set(meta) - {"labels", "annotations"}):
            out.add([*where, "metadata", key], template_metadata_problem(str(key)))
        for kind, key in (("label", "labels"), ("annotation", "annotations")):
            if isinstance(meta.get(key), dict):
                blocks.append((kind, [*where, "metadata", key], meta[key]))
    for kind, where, mapping in blocks:
        for key, value in mapping.items():
            problem = metadata_problem(kind, str(key), value)
            if problem:
                out.add([*where, key], problem)


def template_metadata_problem(key: str) -> str:
    """Why a job's pod template may not set `metadata.<key>` (issue 35.9): the Training
    Operator copies it onto every pod; `finalizers` keep each pod from ever being deleted (a
    job, its quota and its GPUs that never go away), `namespace` and `ownerReferences` name
    objects the pods do not belong to."""
    return (
        f"`metadata.{key}` in a pod template is copied onto every pod: a job sets only its pods'"
        " `labels` and `annotations` (`finalizers` would keep the pods, their GPUs and quota,"
        " from ever being deleted); remove it"
    )


def metadata_problem(kind: str, key: str, value: Any) -> str | None:
    """Why a job may not put `key: value` on its pods (syntax or a control surface), or None."""
    problem = meta.key_problem(key)
    if problem:
        return f"{kind} key `{key}` is not a Kubernetes {kind} key: {problem}"
    if kind == "label":
        value_problem = meta.label_value_problem(value) if isinstance(value, str) else "a string"
        if value_problem:
            return f"label `{key}` value {value!r}: {value_problem}"
    who = meta.owner(key)
    if who:
        return f"{kind} key `{key}` is a control surface set by {who}, not by a job: remove it"
    return None
