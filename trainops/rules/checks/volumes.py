"""Volume rules: ReadWriteOnce claims shared by many pods (`claim-single-node`), writes into
read-only mounts (`write-to-read-only`), writable dataset mounts (`dataset-writable`)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from typing import Any

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_list
from trainops.facts.scratch import CACHE_ENV, OFFLINE_ENV, READ_ONLY_WHEN_OFFLINE
from trainops.kube.launch import Launch, launches
from trainops.kube.objects import Object
from trainops.kube.pods import Container, PodTemplate
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation
from trainops.rules.writes import write_targets

# Access modes that bind a volume to one node (RWO) or one pod (RWOP).
# https://kubernetes.io/docs/concepts/storage/persistent-volumes/#access-modes
SINGLE_NODE_MODES = frozenset({"ReadWriteOnce", "ReadWriteOncePod"})
# Option and env names that say where a program reads its data, and where it writes.
_DATA_KEY = re.compile(r"(^|_)(data|dataset|datasets|train_file|train_data)(_|$)")
_WRITE_KEY = re.compile(
    r"(output|out_dir|save|checkpoint|ckpt|model_dir|model_prefix|log|logging|cache|home|"
    r"results|tensorboard|export|dest|target)"
)
# Megatron-LM caches the sample/shuffle indices it builds for `--data-path` next to the data
# (`<prefix>/cache/GPTDataset_indices`; before core datasets, `<prefix>_*_indexmap_*.npy`)
# unless `--data-cache-path` names a place: its data directory is written. A Megatron run is
# known by its `pretrain_*.py` entry point or its model-parallel options.
# https://github.com/NVIDIA/Megatron-LM/blob/core_r0.12.0/megatron/core/datasets/gpt_dataset.py
_MEGATRON_OPTIONS = frozenset({"tensor_model_parallel_size", "pipeline_model_parallel_size"})
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


def _write_read_only(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        yield from _writes(obj, ctx, pod)


_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


def _expanded(value: str, earlier: dict[str, str]) -> str:
    """`$(VAR)` references to earlier literal variables expanded, as the kubelet does."""
    return _REFERENCE.sub(lambda m: earlier.get(m.group(1), m.group(0)), value)


def _cache_dirs(c: Container) -> Iterator[tuple[str, str, Any]]:
    """(variable, absolute directory, path of its env entry) for the cache variables set."""
    earlier: dict[str, str] = {}
    offline = any((c.env[n].value or "").strip() == "1" for n in OFFLINE_ENV if n in c.env)
    for name, var in c.env.items():
        if var.value is None:
            continue
        value = _expanded(var.value, earlier)
        earlier[name] = value
        if name not in CACHE_ENV or not value.startswith("/") or "$(" in value:
            continue
        if offline and name in READ_ONLY_WHEN_OFFLINE:
            continue  # a pre-filled, read-only model cache: the libraries only read it
        yield name, posixpath.normpath(value), var.path


def _cache_on_read_only(obj: Object, ctx: Context) -> Iterator[Violation]:
    """A cache or home directory the libraries write to (HF_HOME, TRITON_CACHE_DIR, ...) on
    a read-only mount, or on the read-only root filesystem outside every mount."""
    for pod in obj.pods:
        for c in pod.containers(init=True):
            read_only_root = c.security_context.get("readOnlyRootFilesystem") is True
            for name, directory, path in _cache_dirs(c):
                found = _mount_for(c, directory)
                if found is None:
                    if not read_only_root:
                        continue
                    why = "the root filesystem is read-only and no volume is mounted there"
                    certain = True
                else:
                    reason = _read_only(obj, ctx, pod, found[1])
                    if reason is None:
                        continue
                    why, certain = reason
                what = "init container" if c.init else "container"
                fails = (
                    "the first write fails (Read-only file system)"
                    if certain
                    else ("wherever the driver honours ReadOnlyMany the first write fails")
                )
                yield Violation(
                    f"{what} `{c.name}` sets {name}={directory} ({CACHE_ENV[name]}) but {why}:"
                    f" {fails}. Point {name} at a writable volume (an emptyDir, or the"
                    " checkpoint claim)",
                    path,
                )


def _claims(obj: Object, ctx: Context) -> Iterator[tuple[PodTemplate, str, str, Any, set[str]]]:
    """(pod, volume name, claim name, path of the claim name, the claim's access modes)."""
    for pod in obj.pods:
        for name, (volume, vpath) in pod.volumes.items():
            claim = as_dict(volume.get("persistentVolumeClaim")).get("claimName")
            if claim is None:
                continue
            pvc = ctx.find("PersistentVolumeClaim", str(claim), obj.namespace)
            modes = set(map(str, as_list(as_dict(pvc.spec).get("accessModes")))) if pvc else set()
            yield pod, name, str(claim), (*vpath, "persistentVolumeClaim", "claimName"), modes


def _single_node(obj: Object, ctx: Context) -> Iterator[Violation]:
    if not obj.training_pods:
        return
    pods = sum(p.replicas or 0 for p in obj.training_pods)
    for _, _, claim, path, modes in _claims(obj, ctx):
        if pods > 1 and modes and modes <= SINGLE_NODE_MODES:
            yield Violation(
                f"claim `{claim}` is {'/'.join(sorted(modes))} but the job runs {pods}"
                " pods across nodes: all but one node's pods stay ContainerCreating",
                path,
            )


def _inside(path: str, mount_path: str) -> bool:
    mount = mount_path.rstrip("/") or "/"
    return path == mount or path.startswith(mount.rstrip("/") + "/")


def _program_paths(c: Container) -> tuple[list[str], list[str]]:
    """(what the programs read as data, what they write) as absolute paths: the values of
    data options (`--data_dir`, `--dataset`, `--train_file`), and of output, checkpoint, log
    and cache options and env (`--output_dir`, `--checkpoint_dir`, `HF_HOME`), and what the
    commands write (`cp`, `mkdir`, `>`)."""
    reads: list[str] = []
    writes: list[str] = []
    for name, var in c.env.items():
        if var.value and var.value.startswith("/") and _WRITE_KEY.search(name.lower()):
            writes.append(var.value)
    for launch in launches(c):
        writes += [t for t, _ in write_targets(launch) if t.startswith("/")]
        writes += _megatron_index_cache(launch)
        for key, (value, _) in {**launch.options, **launch.program_options}.items():
            if not value.startswith("/"):
                continue
            if _WRITE_KEY.search(key):
                writes.append(value)
            elif _DATA_KEY.search(key):
                reads.append(value)
    return reads, writes


def _megatron_index_cache(launch: Launch) -> list[str]:
    """The data directory a Megatron-LM run writes its index cache into, when it does."""
    options = launch.program_options
    script = posixpath.basename(launch.program[0][0]) if launch.program else ""
    megatron = script.startswith("pretrain_") or bool(_MEGATRON_OPTIONS & options.keys())
    data = options.get("data_path")
    if not megatron or data is None or "data_cache_path" in options:
        return []
    return [posixpath.dirname(data[0])] if data[0].startswith("/") else []


def _dataset_writable(obj: Object, ctx: Context) -> Iterator[Violation]:
    """A mount the program reads its dataset from (by the options it is given, not by the
    mount's name) and writes nothing into, mounted read-write; or a ReadOnlyMany claim
    mounted read-write. A mount the job also writes (outputs, checkpoints, caches) is not a
    dataset mount, whatever its name."""
    training = obj.training_pods
    for pod, name, claim, _, modes in _claims(obj, ctx):
        if pod not in training:
            continue
        for c in pod.containers():
            reads, writes = _program_paths(c)
            for i, mount in enumerate(c.volume_mounts):
                if mount.get("name") != name or mount.get("readOnly") is True:
                    continue
                mount_path = str(mount.get("mountPath", ""))
                if any(_inside(w, mount_path) for w in writes):
                    continue
                data = [r for r in reads if _inside(r, mount_path)]
                if modes == {"ReadOnlyMany"}:
                    why = "a ReadOnlyMany claim"
                elif data:
                    why = f"the dataset it reads ({data[0]})"
                else:
                    continue
                yield Violation(
                    f"container `{c.name}` mounts {why} (`{claim}` at {mount_path}) read-write"
                    " and writes nothing there: one bad rank can corrupt it for every run",
                    (*c.path, "volumeMounts", i),
                )


RULES = (
    Rule(
        slug="claim-single-node",
        code="TO903",
        severity=Severity.ERROR,
        summary="A ReadWriteOnce (or ReadWriteOncePod) claim mounted by a job with more than"
        " one pod.",
        why="A ReadWriteOnce volume attaches to one node: pods scheduled on other nodes never"
        " start (ContainerCreating, Multi-Attach error), and a gang-scheduled job never runs.",
        fix="Use a ReadWriteMany claim for what every pod writes (checkpoints), ReadOnlyMany for"
        " what they only read.",
        example="accessModes: [ReadWriteOnce]  # claim mounted by 4 workers",
        check=_single_node,
        pods_only=True,
        references=(
            "https://kubernetes.io/docs/concepts/storage/persistent-volumes/#access-modes",
        ),
    ),
    Rule(
        slug="write-to-read-only",
        code="TO906",
        severity=Severity.ERROR,
        summary="A command (init containers too) that writes into a read-only mount: readOnly,"
        " a ReadOnlyMany claim, a ConfigMap/Secret volume.",
        why="The write fails, so an init container that downloads there never finishes and the"
        " pod never starts; a ReadOnlyMany claim is read-only wherever the driver honours the"
        " access mode, and where it does not, every pod writes the shared data at once.",
        fix="Fill datasets once (a separate Job, or an init container on a writable claim) and"
        " mount them read-only for training.",
        example="initContainers: [{command: [aws, s3, sync, s3://b/ds, /data]}]  # /data readOnly",
        check=_write_read_only,
        pods_only=True,
    ),
    Rule(
        slug="cache-on-read-only",
        code="TO908",
        severity=Severity.ERROR,
        summary="An environment variable the libraries write under (HF_HOME, TRANSFORMERS_CACHE,"
        " HF_DATASETS_CACHE, TORCH_HOME, TRITON_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR,"
        " XDG_CACHE_HOME, TMPDIR, HOME, ...) pointing into a read-only mount, or onto a"
        " read-only root filesystem outside every volume.",
        why="Hugging Face, torch, Triton and Inductor create their cache directories and lock"
        " files at start-up or at the first download or compile: on a read-only mount that is"
        " `OSError: [Errno 30] Read-only file system` and every rank dies before it trains."
        " Seed 001 puts HF_HOME under its read-only dataset mount. With HF_HUB_OFFLINE=1 (or"
        " TRANSFORMERS_OFFLINE=1) a read-only, pre-filled hub cache is only read and not"
        " reported.",
        fix="Point the variable at a writable volume: an emptyDir, or a writable claim (the"
        " checkpoint volume); keep datasets read-only.",
        example="env: [{name: HF_HOME, value: /data/hf-cache}]\n"
        "volumeMounts: [{name: datasets, mountPath: /data, readOnly: true}]",
        check=_cache_on_read_only,
        pods_only=True,
        references=(
            "https://huggingface.co/docs/huggingface_hub/package_reference/environment_variables",
        ),
    ),
    Rule(
        slug="dataset-writable",
        code="TO907",
        severity=Severity.WARNING,
        summary="A training container that mounts, read-write, the claim its program reads its"
        " dataset from (`--data_dir`, `--dataset`, `--train_file` pointing into it) and writes"
        " nothing into (no output, checkpoint, log or cache option, env or command there), or"
        " a ReadOnlyMany claim.",
        why="A writable dataset mount lets a bug in one rank corrupt the data for every run."
        " The dataset is read from how the program is called, never guessed from a mount's"
        " name: a `/data` volume the job also writes its outputs or caches to is not flagged,"
        " nor the data of a Megatron-LM run without `--data-cache-path` (it caches its sample"
        " indices next to the data).",
        fix="Mount datasets with `readOnly: true`; write outputs and caches elsewhere"
        " (Megatron-LM: `--data-cache-path`).",
        example="volumeMounts: [{name: ds, mountPath: /data}]  # no readOnly\n"
        "command: [torchrun, train.py, --data_dir=/data/imagenet, --output_dir=/ckpt]",
        check=_dataset_writable,
        pods_only=True,
    ),
)
