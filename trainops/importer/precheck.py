"""What import says about an object around its kind's importer: what it refuses before
reading it (counts that are a template's placeholders), the name it gives an object without
one, and what it notes after (the node's /dev/shm and a too short grace period replaced by
trainops's). Each refusal names the field and what to do."""

from __future__ import annotations

import re
from typing import Any

from trainops.core.manifest import Manifest
from trainops.importer.notes import Notes
from trainops.importer.pod import host_shm, min_grace_period
from trainops.kube.objects import Object


def unreadable(obj: dict[str, Any], key: str, notes: Notes) -> None:
    """Refuse an object whose replica counts or slots are no number."""
    _counts(obj, key, notes)


def named(obj: dict[str, Any], notes: Notes, stem: str) -> None:
    """Give an object without `metadata.name` one: its `generateName` without the trailing
    `-` (the API server appends a random suffix to it), else its file's name, made a DNS
    label as a job name must be (at most 53 characters); refuse it where neither gives one."""
    meta = obj.setdefault("metadata", {})
    if isinstance(meta.get("name"), str):
        return
    prefix = meta.get("generateName")
    base, source = (prefix, f"`generateName: {prefix}`") if isinstance(prefix, str) else (
        stem, f"the file name `{stem}`")  # fmt: skip
    name = re.sub(r"[^a-z0-9-]+", "-", base.lower())[:53].strip("-")
    if not name:
        notes.refuse(
            ["metadata"],
            "no `metadata.name` and no file name to take one from: name it, the job spec and"
            " its file take that name",
        )
        return
    meta.pop("generateName", None)
    meta["name"] = name
    notes.add(
        ["metadata"],
        f"no `metadata.name` (the API server names a `generateName` object with a random"
        f" suffix; a GitOps job needs a fixed name): named `{name}` after {source}; rename"
        " the job spec's file and `name` to choose another",
    )


def _counts(obj: dict[str, Any], key: str, notes: Notes) -> None:
    """Refuse replica counts and slots that are no number: a template's placeholder
    (`replicas: $NUM_NODES`, filled in by envsubst or Helm) says nothing import can carry."""
    spec = obj.get("spec") or {}
    places: list[tuple[list[str | int], Any]] = [
        (["spec", key, rtype, "replicas"], rspec.get("replicas"))
        for rtype, rspec in sorted((spec.get(key) or {}).items())
        if isinstance(rspec, dict)
    ]
    places.append((["spec", "slotsPerWorker"], spec.get("slotsPerWorker")))
    for path, value in places:
        if value is None or (isinstance(value, int) and not isinstance(value, bool)):
            continue
        if isinstance(value, str) and value.strip().isdigit():
            continue
        notes.refuse(
            path,
            f"`{path[-1]}: {value}` is not a number (a template's placeholder?): fill the"
            " template in (envsubst, helm template) and import the result",
        )


def note_replaced(obj: dict[str, Any], notes: Notes) -> None:
    """Name what `pod.normalised_template` replaced in each replica (read through
    `trainops.kube`'s view): a hostPath /dev/shm, a grace period below the spec's least, the
    scheduler name."""
    for pod in Object(Manifest(obj)).pods:
        spec, at = pod.spec, list(pod.spec_path)
        grace = spec.get("terminationGracePeriodSeconds")
        if isinstance(grace, int) and grace < min_grace_period():
            notes.add(
                [*at, "terminationGracePeriodSeconds"],
                f"terminationGracePeriodSeconds {grace} is below trainops' least"
                f" ({min_grace_period()}: the trainer checkpoints on SIGTERM): the default is"
                " rendered",
            )
        if isinstance(spec.get("schedulerName"), str):
            notes.add(
                [*at, "schedulerName"],
                f"schedulerName `{spec['schedulerName']}` is not carried: the cluster profile"
                " decides the scheduler (its queue and gang come with it; a job names another"
                " only where the profile's `jobAccess.schedulerNames` allows it)",
            )
        for volume, path in pod.volumes.values():
            if host_shm(volume):
                notes.add(
                    list(path),
                    "the node's /dev/shm (hostPath) is not carried: trainops mounts a"
                    " memory-backed /dev/shm of `sharedMemory` (the node's is shared with"
                    " every pod on it, and Pod Security baseline refuses the hostPath)",
                )
