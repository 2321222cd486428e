"""Kubeflow Trainer v2 rules: what a TrainJob kept in Git must leave to others, and the
elastic training v2 does not have."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_list
from trainops.facts.trainer import KUEUE_PATCH_MANAGER, PATCH_TIME_FIELD
from trainops.kube.objects import Object
from trainops.kube.torchrun import nnodes_range, torchrun_nnodes
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation


def _foreign_fields(obj: Object, ctx: Context) -> Iterator[Violation]:
    if not obj.is_trainjob:
        return
    for i, raw in enumerate(as_list(obj.spec.get("runtimePatches"))):
        patch = as_dict(raw)
        if PATCH_TIME_FIELD in patch:
            yield Violation(
                "runtimePatches[].time is stamped by the Trainer's admission webhook on every"
                " write: a value from Git is overwritten at once and shows as drift; remove it",
                ("spec", "runtimePatches", i, PATCH_TIME_FIELD),
            )
        if patch.get("manager") == KUEUE_PATCH_MANAGER:
            yield Violation(
                f"the runtime patch of manager `{KUEUE_PATCH_MANAGER}` is Kueue's (it writes its"
                " flavor's node selectors and tolerations there on admission): a copy in Git"
                " fights Kueue; remove it",
                ("spec", "runtimePatches", i, "manager"),
            )
    if "suspend" in obj.spec:
        yield Violation(
            "spec.suspend set in Git: Kueue sets it when the TrainJob is created and clears it"
            " on admission, so a sync that re-applies Git's value suspends (stops) a running"
            " job or never starts it; leave it out",
            ("spec", "suspend"),
            Severity.WARNING,
        )


def _elastic(obj: Object, ctx: Context) -> Iterator[Violation]:
    if not obj.is_trainjob:
        return
    for _, value, path in torchrun_nnodes(obj):
        found = nnodes_range(value)
        if found is not None and found[0] != found[1]:
            yield Violation(
                f"torchrun --nnodes={value} asks for elastic training, which Kubeflow Trainer v2"
                " does not have: the Trainer starts numNodes pods and sets PET_NNODES to that"
                " number; drop the range (numNodes sets the size) or run the job on the"
                " Training Operator v1 (PyTorchJob elasticPolicy)",
                path,
            )


RULES = (
    Rule(
        slug="trainjob-foreign-fields",
        code="TO440",
        severity=Severity.ERROR,
        summary="A TrainJob in Git that sets what others write: runtimePatches[].time (the"
        " Trainer's webhook), Kueue's runtime patch (error); spec.suspend (warning).",
        why="The webhook stamps `time` on every create and update, and Kueue owns its own"
        " runtime-patch entry and the suspend flag: a value from Git is overwritten, shows as"
        " drift forever, or (suspend) stops a running job when a sync re-applies it.",
        fix="Leave `time`, Kueue's patch and `suspend` out of Git; trainops renders none of"
        " them (its one runtime patch has manager `trainops.dev/render`).",
        example="runtimePatches: [{manager: trainops.dev/render, time: '2026-01-01T00:00:00Z'}]",
        references=(
            "https://www.kubeflow.org/docs/components/trainer/",
            "https://kueue.sigs.k8s.io/docs/tasks/run/trainjobs/",
        ),
        check=_foreign_fields,
    ),
    Rule(
        slug="trainjob-elastic-unsupported",
        code="TO441",
        severity=Severity.ERROR,
        summary="A TrainJob whose torchrun asks for an elastic `--nnodes=MIN:MAX` range:"
        " Trainer v2 has no elastic training.",
        why="Trainer v2.3 runs numNodes pods and sets PET_NNODES to that number; an explicit"
        " range overrides it, and the rendezvous waits for pods the Trainer never starts or"
        " restarts the way an elastic PyTorchJob would.",
        fix="Remove the range and set `trainer.numNodes`, or keep the job elastic on a"
        " Training Operator v1 cluster (trainops refuses elastic jobs targeting v2 clusters).",
        example="trainer: {command: [torchrun, --nnodes=2:4, train.py], numNodes: 4}",
        references=("https://www.kubeflow.org/docs/components/trainer/",),
        check=_elastic,
    ),
)
