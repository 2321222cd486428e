"""Volume rules: ReadWriteOnce claims shared by many pods, writes into read-only mounts,
writable dataset mounts."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from typing import Any

from trainops.core.findings import Severity
from trainops.rules.context import Context
from trainops.rules.launch import launches
from trainops.rules.model import Rule, Violation
from trainops.rules.objects import Object
from trainops.rules.pods import Container, PodTemplate
from trainops.rules.values import as_dict, as_list
from trainops.rules.writes import write_targets

# Access modes that bind a volume to one node (RWO) or one pod (RWOP).
# https://kubernetes.io/docs/concepts/storage/persistent-volumes/#access-modes
SINGLE_NODE_MODES = frozenset({"ReadWriteOnce", "ReadWriteOncePod"})
_DATASET = re.compile(r"(^|[-_/])(data|dataset|datasets)([-_/]|$)")
# Volume sources the kubelet always mounts read-only.
# https://kubernetes.io/docs/concepts/storage/volumes/#configmap
READ_ONLY_SOURCES = ("configMap", "secret", "downwardAPI", "projected")


def _mount_for(c: Container, file: str) -> tuple[int, dict[str, Any]] | None:
    """(index, volumeMount) of the mount `file` lies in (the deepest one), if any."""
    best: tuple[int, dict[str, Any]] | None = None
    for i, mount in enumerate(c.volume_mounts):
        mount_path = str(mount.get("mountPath", "")).rstrip("/") or "/"
        inside = file == mount_path or file.startswith(mount_path.rstrip("/") + "/")
        if inside and (best is None or len(mount_path) > len(str(best[1].get("mountPath")))):
            best = (i, mount)
    return best


def _read_only(
    obj: Object, ctx: Context, pod: PodTemplate, mount: dict[str, Any]
) -> tuple[str, bool] | None:
    """Why the mount is read-only, and whether that is certain (False: a ReadOnlyMany claim,
    which only drivers that honour the access mode mount read-only); None: it is writable."""
    name = str(mount.get("name"))
    volume, _ = pod.volumes.get(name, ({}, ()))
    if mount.get("readOnly") is True:
        return f"volume `{name}` is mounted readOnly", True
    for source in READ_ONLY_SOURCES:
        if source in volume:
            return f"volume `{name}` is a {source} volume, which the kubelet mounts read-only", True
    claim = as_dict(volume.get("persistentVolumeClaim"))
    if claim.get("readOnly") is True:
        return f"claim `{claim.get('claimName')}` is mounted readOnly", True
    pvc = ctx.find("PersistentVolumeClaim", str(claim.get("claimName")), obj.namespace)
    modes = set(map(str, as_list(as_dict(pvc.spec).get("accessModes")))) if pvc else set()
    if claim and modes == {"ReadOnlyMany"}:
        return f"claim `{claim.get('claimName')}` is ReadOnlyMany", False
    return None


def _writes(obj: Object, ctx: Context, pod: PodTemplate) -> Iterator[Violation]:
    """Commands (init containers included) that write into a read-only mount."""
    for c in pod.containers(init=True):
        cwd = str(c.data.get("workingDir", ""))
        for launch in launches(c):
            if launch.words and launch.words[0][0] == "cd":
                where = launch.words[1][0] if len(launch.words) > 1 else ""
                cwd = posixpath.join(cwd, where) if where.startswith("/") or cwd else ""
                continue
            for target, path in write_targets(launch):
                if not target.startswith("/") and (not cwd.startswith("/") or "://" in target):
                    continue  # relative to a working directory we do not know, or remote
                file = posixpath.normpath(posixpath.join(cwd, target))
                found = _mount_for(c, file)
                if found is None:
                    continue
                reason = _read_only(obj, ctx, pod, found[1])
                if reason is None:
                    continue
                why, certain = reason
                what = "init container" if c.init else "container"
                outcome = (
                    "the init container fails and the pod never starts"
                    if c.init
                    else "the container fails"
                )
                if certain:
                    detail = f"the write fails (read-only file system): {outcome}"
                else:
                    detail = (
                        "drivers that honour the access mode mount it read-only and the write"
                        f" fails ({outcome}); the others let every pod that runs this write the"
                        " shared volume at once. Fill the dataset once (a separate Job on a"
                        " writable claim) and mount it readOnly"
                    )
                command = posixpath.basename(launch.words[0][0])
                yield Violation(
                    f"{what} `{c.name}` writes to {file} (`{command}`) but {why}: {detail}",
                    path,
                )


def _access(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        yield from _writes(obj, ctx, pod)
    if not obj.is_training_job:
        return
    pods = obj.pod_count()
    for pod in obj.pods:
        for name, (volume, vpath) in pod.volumes.items():
            claim = as_dict(volume.get("persistentVolumeClaim")).get("claimName")
            if claim is None:
                continue
            pvc = ctx.find("PersistentVolumeClaim", str(claim), obj.namespace)
            modes = set(map(str, as_list(as_dict(pvc.spec).get("accessModes")))) if pvc else set()
            if pods > 1 and modes and modes <= SINGLE_NODE_MODES:
                yield Violation(
                    f"claim `{claim}` is {'/'.join(sorted(modes))} but the job runs {pods}"
                    " pods across nodes: all but one node's pods stay ContainerCreating",
                    (*vpath, "persistentVolumeClaim", "claimName"),
                )
            for c in pod.containers():
                for i, mount in enumerate(c.volume_mounts):
                    if mount.get("name") != name or mount.get("readOnly") is True:
                        continue
                    mount_path = str(mount.get("mountPath", ""))
                    dataset = any(
                        _DATASET.search(x) for x in (name, str(claim), mount_path.strip("/"))
                    )
                    if dataset or modes == {"ReadOnlyMany"}:
                        why = "a ReadOnlyMany claim" if modes == {"ReadOnlyMany"} else "a dataset"
                        yield Violation(
                            f"container `{c.name}` mounts {why} (`{claim}` at {mount_path})"
                            " read-write: one bad rank can corrupt it for every run",
                            (*c.path, "volumeMounts", i),
                            Severity.WARNING,
                        )


RULES = (
    Rule(
        slug="volume-access-mode",
        code="TO903",
        severity=Severity.ERROR,
        summary="A ReadWriteOnce claim mounted by a job with more than one pod; a command"
        " (init containers too) that writes into a read-only mount (readOnly, ReadOnlyMany"
        " claim, ConfigMap/Secret volume); (warning) a dataset mount that is not read-only.",
        why="A ReadWriteOnce volume attaches to one node: pods on other nodes never start. A"
        " write into a read-only mount fails, so an init container that downloads there never"
        " finishes and the pod never starts; a ReadOnlyMany claim is read-only wherever the"
        " driver honours the access mode, and where it does not, every pod writes the shared"
        " data at once. A writable dataset mount lets a bug in one rank corrupt the data for"
        " every run.",
        fix="Use a ReadWriteMany (or ReadOnlyMany) claim for shared data; fill datasets once"
        " (a separate Job on a writable claim) and mount them with `readOnly: true`.",
        example="accessModes: [ReadWriteOnce]  # claim mounted by 4 workers\n"
        "initContainers: [{command: [aws, s3, sync, s3://b/ds, /data]}]  # /data ReadOnlyMany",
        check=_access,
    ),
)
