"""Checkpoints of jobs that restart: a job allowed to replace its pods must keep its
checkpoints where a new pod finds them."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_int, as_list
from trainops.kube.launch import LEGACY_LAUNCH, TORCHRUN, launches
from trainops.kube.objects import Object
from trainops.kube.pods import Container, PodTemplate
from trainops.rules.context import Context
from trainops.rules.model import Path, Rule, Violation

# Program options and env naming a checkpoint location (`--checkpoint_dir`, `--ckpt-path`,
# `--resume_from_checkpoint`, `--resume`, `CHECKPOINT_DIR`).
_CHECKPOINT_KEY = re.compile(r"(checkpoint|ckpt)|^resume$")
# Volcano Job policy actions that replace pods.
_VOLCANO_RESTARTS = frozenset({"RestartJob", "RestartTask", "RestartPod", "RestartPartition"})
# Kubeflow restart policies under which the operator (or kubelet) runs a failed replica again.
_RESTARTING = frozenset({"OnFailure", "ExitCode", "Always"})


def _restarts(obj: Object) -> str | None:
    """Why pods of this job may be replaced, or None."""
    if obj.elastic_policy is not None:
        return "elasticPolicy replaces lost workers"
    if obj.is_kubeflow_job:
        restarting = sorted({str(p.restart_policy) for p in obj.pods} & _RESTARTING)
        if restarting:
            return f"restartPolicy {'/'.join(restarting)}"
    if obj.is_volcano_job:
        policies = [as_dict(p).get("action") for p in as_list(obj.spec.get("policies"))]
        for task in as_list(obj.spec.get("tasks")):
            policies += [as_dict(p).get("action") for p in as_list(as_dict(task).get("policies"))]
        if _VOLCANO_RESTARTS & {str(a) for a in policies}:
            return "its Volcano policies restart pods"
    if obj.is_jobset:
        restarts = as_int(as_dict(obj.spec.get("failurePolicy")).get("maxRestarts"))
        if restarts:
            return f"failurePolicy.maxRestarts {restarts}"
    if obj.group == "batch" and obj.kind == "Job":
        backoff = as_int(obj.spec.get("backoffLimit"))
        if backoff is None or backoff > 0:
            return f"backoffLimit {6 if backoff is None else backoff} replaces failed pods"
    return None


def _torchrun_restarts(pod: PodTemplate) -> bool:
    for c in pod.containers():
        for launch in launches(c):
            if launch.tool in {TORCHRUN, LEGACY_LAUNCH}:
                value = launch.option("max_restarts")
                if value is not None and (as_int(value[0]) or 0) > 0:
                    return True
    return False


def _locations(c: Container) -> Iterator[tuple[str, Path]]:
    """Checkpoint locations the container's programs are given, as written."""
    for name, var in c.env.items():
        if var.value and _CHECKPOINT_KEY.search(name.lower()):
            yield var.value, var.path
    for launch in launches(c):
        for key, (value, path) in {**launch.options, **launch.program_options}.items():
            if _CHECKPOINT_KEY.search(key):
                yield value, path


def _where(pod: PodTemplate, c: Container, value: str) -> str | None:
    """What holds `value` when it is ephemeral (the container filesystem, an emptyDir), or
    None when it is durable, remote or not a path at all."""
    if "://" in value or "$" in value or not ("/" in value or value.startswith(".")):
        return None
    cwd = str(c.data.get("workingDir", ""))
    if not value.startswith("/"):
        if not cwd.startswith("/"):
            return "the container filesystem (relative to the image's working directory)"
        value = posixpath.join(cwd, value)
    file = posixpath.normpath(value)
    best: dict[str, object] | None = None
    for mount in c.volume_mounts:
        mount_path = str(mount.get("mountPath", "")).rstrip("/") or "/"
        inside = file == mount_path or file.startswith(mount_path.rstrip("/") + "/")
        if inside and (best is None or len(mount_path) > len(str(best.get("mountPath")))):
            best = mount
    if best is None:
        return "the container filesystem"
    volume, _ = pod.volumes.get(str(best.get("name")), ({}, ()))
    if "emptyDir" in volume:
        return f"the emptyDir volume `{best.get('name')}`"
    return None


def _checkpoint_ephemeral(obj: Object, ctx: Context) -> Iterator[Violation]:
    why = _restarts(obj)
    for pod in obj.training_pods:
        reason = why or ("torchrun --max_restarts" if _torchrun_restarts(pod) else None)
        if reason is None:
            continue
        for c in pod.containers():
            found = [(value, path, _where(pod, c, value)) for value, path in _locations(c)]
            paths = [f for f in found if "/" in f[0] or f[0].startswith(".")]
            if not paths or any(where is None for _, _, where in paths):
                continue  # no checkpoint path, or one of them is durable
            value, path, where = paths[0]
            yield Violation(
                f"container `{c.name}` checkpoints to {value}, on {where}, but the job"
                f" restarts ({reason}): a replaced pod starts without it and the training"
                " starts over; put checkpoints on a persistent volume (a ReadWriteMany claim)"
                " or object storage",
                path,
            )


RULES = (
    Rule(
        slug="checkpoint-ephemeral",
        code="TO206",
        severity=Severity.ERROR,
        summary="A job that restarts or replaces pods (elasticPolicy, a restarting"
        " restartPolicy, torchrun --max_restarts, Volcano restart policies, JobSet"
        " maxRestarts, a Job's backoffLimit) whose only checkpoint location"
        " (`--checkpoint_dir`, `--resume`, `CHECKPOINT_DIR`, ...) is on the container"
        " filesystem or an emptyDir.",
        why="A restarted container gets a fresh filesystem and a replaced pod a fresh emptyDir:"
        " the checkpoint that was to make the restart cheap is gone, and the job silently"
        " trains from step 0 again (or fails resuming from a file that is not there).",
        fix="Write checkpoints to a persistent volume every pod mounts (a ReadWriteMany claim),"
        " or to object storage (`s3://`, `gs://`).",
        example="elasticPolicy: {minReplicas: 1, maxReplicas: 4}\n"
        "command: [torchrun, train.py, --checkpoint_dir=./checkpoints]",
        check=_checkpoint_ephemeral,
        pods_only=True,
    ),
)
