"""The escape hatch of one imported job: per replica type, the original pod template against
the one trainops renders for the cluster (`hatch.template_override`), what every type says
the same in `podTemplate`, the rest in `replicaPodTemplates`, and what trainops adds beyond
the original named in one note."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from trainops.facts.kubeflow import REPLICA_TYPES
from trainops.importer.hatch import template_override
from trainops.importer.launch import same_launch
from trainops.importer.notes import Notes
from trainops.importer.pod import normalised_template
from trainops.importer.reload import load_spec
from trainops.jobspec.model import ClusterProfile
from trainops.render.objects import training_job
from trainops.render.overrides import merge
from trainops.render.pod import pod_template


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


def with_hatch(
    job: dict[str, Any],
    obj: dict[str, Any],
    key: str,
    cluster: ClusterProfile,
    notes: Notes,
    *,
    source: str,
) -> dict[str, Any]:
    """`job` with the overrides that make each replica type's pod the original's."""
    model = load_spec(job, cluster, source)
    rendered_for = _templates(model, cluster, key)
    originals = _carried(obj, key, model)
    overrides: dict[str, dict[str, Any]] = {}
    added: list[str] = []
    for rtype, original in sorted(originals.items()):
        rendered = rendered_for(rtype)
        _same_container(original, rendered)
        _same_program(original, rendered)
        _covered_tolerations(
            original, rendered, cluster, notes, ["spec", key, rtype, "template", "spec"]
        )
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


def tolerates_all_of(wider: dict[str, Any], narrower: dict[str, Any]) -> bool:
    """Whether toleration `wider` tolerates every taint `narrower` does (Kubernetes'
    `Toleration.ToleratesTaint`, k8s.io/api core/v1 toleration.go: an empty effect matches
    every effect, an empty key with `Exists` every key, `Exists` every value, `Equal`
    (the default operator) only its value)."""
    if wider.get("tolerationSeconds") != narrower.get("tolerationSeconds"):
        return False
    if wider.get("effect") and wider.get("effect") != narrower.get("effect"):
        return False
    exists = (wider.get("operator") or "Equal") == "Exists"
    if not wider.get("key"):
        return exists
    if wider.get("key") != narrower.get("key"):
        return False
    narrow_exists = (narrower.get("operator") or "Equal") == "Exists"
    return exists or (not narrow_exists and wider.get("value", "") == narrower.get("value", ""))


def _covered_tolerations(
    original: dict[str, Any], rendered: dict[str, Any], cluster: ClusterProfile, notes: Notes,
    at: list[str | int],
) -> None:  # fmt: skip
    """Replace in `original` each toleration that one the cluster allows covers (its GPU
    products' tolerations, `jobAccess.tolerations`: the only ones the pod fence lets a job
    add) by that one, with a note: the pod still lands wherever the original could (a
    Launcher that tolerates the GPU taint keeps tolerating it). Already rendered: dropped."""
    ours = (rendered.get("spec") or {}).get("tolerations") or []
    allowed = [dict(t) for t in cluster.job_access.tolerations]
    pod = original.get("spec") or {}
    kept: list[Any] = []
    for i, tol in enumerate(pod.get("tolerations") or []):
        cover = next((t for t in [*ours, *allowed] if tolerates_all_of(t, tol)), None)
        if cover is None or tol == cover:
            kept.append(tol)
            continue
        if cover not in ours and cover not in kept:
            kept.append(cover)
        notes.add(
            [*at, "tolerations", i],
            f"toleration {tol} is the cluster profile's {cover}, which tolerates every taint"
            " it does (the pod fence lets jobs add only the profile's tolerations)",
        )
    if "tolerations" in pod:
        pod["tolerations"] = kept


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
