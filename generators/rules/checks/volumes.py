"""Volume rules: ReadWriteOnce claims shared by many pods, writable dataset mounts."""

from __future__ import annotations

import re
from collections.abc import Iterator

from generators.findings import Severity
from generators.rules.context import Context, Object, as_dict, as_list
from generators.rules.model import Rule, Violation

# Access modes that bind a volume to one node (RWO) or one pod (RWOP).
# https://kubernetes.io/docs/concepts/storage/persistent-volumes/#access-modes
SINGLE_NODE_MODES = frozenset({"ReadWriteOnce", "ReadWriteOncePod"})
_DATASET = re.compile(r"(^|[-_/])(data|dataset|datasets)([-_/]|$)")


def _access(obj: Object, ctx: Context) -> Iterator[Violation]:
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
        severity=Severity.ERROR,
        summary="A ReadWriteOnce claim mounted by a job with more than one pod; (warning) a"
        " dataset mount that is not read-only.",
        why="A ReadWriteOnce volume attaches to one node: pods on other nodes never start. A"
        " writable dataset mount lets a bug in one rank corrupt the data for every run.",
        fix="Use a ReadWriteMany (or ReadOnlyMany) claim for shared data; mount datasets with"
        " `readOnly: true`.",
        example="accessModes: [ReadWriteOnce]  # claim mounted by 4 workers",
        check=_access,
    ),
)
