"""What one pod template of an imported job says, in job-spec terms: the training container,
its claims (and the claims beside the job), /dev/shm, other volumes and env; and the two
normalisations applied to an original template before it is compared with what trainops
renders (the /dev/shm volume under trainops's name, Kubernetes' pull-policy default)."""

from __future__ import annotations

import copy
import re
from typing import Any

from trainops.facts.names import SHM_VOLUME
from trainops.importer.notes import Notes
from trainops.jobspec.job_checks import RESERVED_ENV
from trainops.jobspec.metadata import owner
from trainops.jobspec.model import ClusterProfile
from trainops.jobspec.schemas import JOB, schema
from trainops.kube.pods import training_container_index

SHM_PATH = "/dev/shm"


def default_pull_policy(image: str) -> str:
    """Kubernetes' imagePullPolicy for a container that names none: Always for `:latest` or
    no tag, else IfNotPresent (https://kubernetes.io/docs/concepts/containers/images/)."""
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    return "Always" if ":" not in last or last.endswith(":latest") else "IfNotPresent"


# Over the complexity limits: the import branch reworks this file; split after merging.
def normalised_template(template: dict[str, Any]) -> dict[str, Any]:
    """A copy of a pod template with its /dev/shm memory volume named like trainops's,
    Kubernetes' default imagePullPolicy made explicit (trainops always writes one), and
    without the scheduler name, labels and annotations the cluster profile sets
    (`common.scheduler_keys` noted each: the escape hatch must not carry them back)."""
    out = copy.deepcopy(template)
    pod_spec = out.get("spec")
    if isinstance(pod_spec, dict):
        _drop_replaced(pod_spec)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for key in ("labels", "annotations"):
            if isinstance(meta.get(key), dict):
                meta[key] = {k: v for k, v in meta[key].items() if owner(str(k)) is None}
    pod = out.get("spec") or {}
    for container in [*(pod.get("containers") or []), *(pod.get("initContainers") or [])]:
        if "imagePullPolicy" not in container and isinstance(container.get("image"), str):
            container["imagePullPolicy"] = default_pull_policy(container["image"])
    _name_shm_volume(pod)
    return out


def _drop_replaced(pod_spec: dict[str, Any]) -> None:
    """What trainops sets itself (each noted by `precheck.note_replaced`): a grace period below
    the spec's minimum, the scheduler name, the node's /dev/shm (a memory emptyDir instead)."""
    grace = pod_spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and grace < min_grace_period():
        del pod_spec["terminationGracePeriodSeconds"]
    pod_spec.pop("schedulerName", None)
    for vol in pod_spec.get("volumes") or []:
        if host_shm(vol):
            vol.pop("hostPath")
            vol["emptyDir"] = {"medium": "Memory"}


def _name_shm_volume(pod: dict[str, Any]) -> None:
    """The memory emptyDir a container mounts at /dev/shm renamed to trainops's name, in the
    volumes and in every container's mounts."""
    containers = pod.get("containers") or []
    for container in containers:
        for mount in container.get("volumeMounts") or []:
            if mount.get("mountPath") != SHM_PATH:
                continue
            for vol in pod.get("volumes") or []:
                empty = vol.get("emptyDir") or {}
                if vol.get("name") == mount.get("name") and empty.get("medium") == "Memory":
                    old = vol["name"]
                    vol["name"] = SHM_VOLUME
                    for other in containers:
                        for m in other.get("volumeMounts") or []:
                            if m.get("name") == old:
                                m["name"] = SHM_VOLUME


def host_shm(volume: Any) -> bool:
    """A hostPath volume of the node's /dev/shm: trainops mounts its own memory-backed one
    instead (`sharedMemory`); the node's is shared with every pod on it, and Pod Security
    baseline refuses the hostPath."""
    host = (volume or {}).get("hostPath") if isinstance(volume, dict) else None
    return isinstance(host, dict) and str(host.get("path", "")).rstrip("/") == SHM_PATH


def min_grace_period() -> int:
    """The least `terminationGracePeriodSeconds` a job spec takes (its schema's minimum)."""
    return int(schema(JOB)["properties"]["terminationGracePeriodSeconds"]["minimum"])


def training_container(pod: dict[str, Any], notes: Notes, where: list[str | int], name: str) -> int:
    """The index of the container named `name` (the one the operator finds), else the first,
    which import renames to it (`importer.build` renames it in the original too)."""
    containers = pod.get("containers") or [{}]
    names = [c.get("name") for c in containers]
    if name in names:
        return training_container_index(containers, name)
    notes.add(
        where,
        f"no container named `{name}` (the one trainops renders): `{names[0]}` becomes it",
    )
    return 0


def map_volumes(
    job: dict[str, Any],
    pod: dict[str, Any],
    *,
    main: dict[str, Any],
    beside: dict[str, dict[str, Any]],
    cluster: ClusterProfile,
    notes: Notes,
    where: list[str | int],
) -> None:
    """Claims, /dev/shm (`sharedMemory`) and other volumes (`extraVolumes`)."""
    mounts = {m.get("name"): m for m in main.get("volumeMounts") or []}
    volumes: dict[str, Any] = {}
    extra: list[dict[str, Any]] = []
    extra_mounts: list[dict[str, Any]] = []
    for i, vol in enumerate(pod.get("volumes") or []):
        name, mount = vol.get("name"), mounts.get(vol.get("name"))
        _granted(vol, mount, set(beside), cluster, notes, path=[*where, "volumes", i])
        empty = vol.get("emptyDir") or {}
        if mount and mount.get("mountPath") == SHM_PATH and empty.get("medium") == "Memory":
            if "sizeLimit" in empty:
                job["sharedMemory"] = str(empty["sizeLimit"])
            else:
                notes.add(
                    [*where, "volumes"],
                    "the /dev/shm emptyDir has no sizeLimit: trainops"
                    " sets one (`sharedMemory`, default 16Gi)",
                )
            continue
        claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
        if claim and mount and set(vol) == {"name", "persistentVolumeClaim"}:
            spec: dict[str, Any] = {"mountPath": mount["mountPath"], "claimName": claim}
            read_only = bool(mount.get("readOnly"))
            if read_only != (name == "dataset"):
                spec["readOnly"] = read_only
            pvc = beside.pop(claim, None)
            if pvc is not None:
                _claim(spec, pvc, cluster, notes)
            elif not read_only and dict(cluster.job_access.shared_claims).get(claim) is False:
                spec["readOnly"] = True
                notes.add(
                    [*where, "volumes"],
                    f"claim `{claim}` is mounted read-only: cluster `{cluster.name}` shares it"
                    " read-only with jobs (`jobAccess.sharedClaims`; `writable: true` there if"
                    " the job must write to it)",
                )
            volumes[name] = spec
            continue
        extra.append(copy.deepcopy(vol))
        if mount:
            extra_mounts.append(copy.deepcopy(mount))
    if volumes:
        job["volumes"] = volumes
    if extra:
        job["extraVolumes"] = extra
    if extra_mounts:
        job["extraVolumeMounts"] = extra_mounts


def _granted(
    vol: dict[str, Any],
    mount: dict[str, Any] | None,
    beside: set[str],
    cluster: ClusterProfile,
    notes: Notes,
    *,
    path: list[str | int],
) -> None:
    """Refuse a volume the cluster's pod fence would refuse at load, where the volume is
    written, with the two ways out: an existing claim neither beside the job (which trainops
    would create) nor shared by the profile, a Secret volume the profile does not list
    (`facts/pod_fence.py`: another team's data, whatever the namespace holds)."""
    access = cluster.job_access
    claim = (vol.get("persistentVolumeClaim") or {}).get("claimName")
    secret = (vol.get("secret") or {}).get("secretName")
    profile = f"clusters/{cluster.name}.yaml"
    if isinstance(claim, str) and claim not in beside and claim not in dict(access.shared_claims):
        entry = f"{{name: {claim}}}" if (mount or {}).get("readOnly") else (
            f"{{name: {claim}, writable: true}}")  # fmt: skip
        notes.refuse(
            path,
            f"claim `{claim}` exists outside these files and cluster `{cluster.name}` does not"
            " share it with jobs: import its PersistentVolumeClaim manifest with the job"
            " (trainops then creates the claim for it), or have the platform team add"
            f" `{entry}` to `jobAccess.sharedClaims` in {profile}",
        )
    if isinstance(secret, str) and secret not in access.secret_volumes:
        notes.refuse(
            path,
            f"Secret volume `{secret}` is not one cluster `{cluster.name}` lets jobs mount: read"
            " its keys through `secretEnv`, or have the platform team add it to"
            f" `jobAccess.secretVolumes` in {profile}",
        )


def _claim(
    spec: dict[str, Any], pvc: dict[str, Any], cluster: ClusterProfile, notes: Notes
) -> None:
    """A claim beside the job becomes one trainops creates, under its own name."""
    pvc_spec = pvc.get("spec") or {}
    size = ((pvc_spec.get("resources") or {}).get("requests") or {}).get("storage")
    if size is None:
        notes.add_object(
            pvc,
            "PersistentVolumeClaim without a requested size: kept as an"
            " existing claim (claimName); create it outside this repository",
        )
        return
    spec["size"] = str(size)
    modes = pvc_spec.get("accessModes") or []
    if modes:
        spec["accessMode"] = modes[0]
    if len(modes) > 1:
        notes.add_object(pvc, f"access modes {modes}: trainops requests one, {modes[0]}")
    storage_class = pvc_spec.get("storageClassName")
    offered = {cluster.storage.default_class, *cluster.storage.classes}
    if storage_class in offered:
        spec["storageClass"] = storage_class
    elif storage_class:
        notes.add_object(
            pvc,
            f"storage class `{storage_class}` is not offered by cluster"
            f" `{cluster.name}`: the claim uses its default,"
            f" `{cluster.storage.default_class}`",
        )
    for key in sorted(set(pvc_spec) - {"resources", "accessModes", "storageClassName"}):
        notes.add_object(
            pvc,
            f"spec.{key} of the claim is not carried (trainops renders size,"
            " access mode and storage class)",
        )


# What the kubelet exports from an envFrom source: keys that are valid variable names.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _secret_keys(secret: dict[str, Any], prefix: str, notes: Notes) -> dict[str, Any]:
    """`secretEnv` entries for every key of a Secret (`data` and `stringData`), with the
    envFrom `prefix`; a key that is no variable name is skipped (and named)."""
    name = (secret.get("metadata") or {}).get("name")
    keys = sorted({*(secret.get("data") or {}), *(secret.get("stringData") or {})})
    out: dict[str, Any] = {}
    for key in keys:
        if _ENV_NAME.match(prefix + str(key)):
            out[prefix + str(key)] = {"secret": name, "key": str(key)}
        else:
            notes.add_object(secret, f"key `{key}` is no variable name: the pod gets no variable")
    return out


def map_env(
    job: dict[str, Any],
    main: dict[str, Any],
    *,
    secrets: dict[str, dict[str, Any]],
    cluster: ClusterProfile,
    nccl: dict[str, str],
    notes: Notes,
    where: list[str | int],
) -> None:
    """The container's env as `env` and `secretEnv` (`where`: the container's path). An
    `envFrom` Secret delivered in the same file (`secrets`) becomes one `secretEnv` entry per
    key it holds (the pod fence admits a job's secrets one reviewed variable at a time); one
    import cannot read is refused where it is written, naming what to write instead."""
    from_secrets: dict[str, Any] = {}
    for j, source in enumerate(main.get("envFrom") or []):
        ref = (source or {}).get("secretRef") or {}
        if not ref:
            continue
        found = secrets.get(str(ref.get("name")))
        if found is None:
            notes.refuse(
                [*where, "envFrom", j],
                f"`envFrom` Secret `{ref.get('name')}` exports every key it holds, and the"
                " Secret is not in the file, so import cannot list them (cluster"
                f" `{cluster.name}`'s pod fence admits a job's secrets one variable at a time):"
                f" name each variable the program reads in the job spec's `secretEnv` (`VAR:"
                f" {{secret: {ref.get('name')}, key: KEY}}`), or import the file with the"
                " Secret beside the job",
            )
            continue
        keys = _secret_keys(found, str(source.get("prefix") or ""), notes)
        from_secrets.update(keys)
        notes.add(
            [*where, "envFrom", j],
            f"`envFrom` Secret `{ref.get('name')}` (in the file): its keys"
            f" {', '.join(sorted(keys))} listed as `secretEnv`; the Secret itself is"
            " not delivered (its values would be in Git): create it in the cluster",
        )
    plain: dict[str, str] = {}
    secret: dict[str, Any] = {}
    for var in main.get("env") or []:
        name = var.get("name")
        ref = (var.get("valueFrom") or {}).get("secretKeyRef")
        if name in RESERVED_ENV or name in plain or name in secret:
            if nccl.get(name) != var.get("value"):
                notes.add(
                    [*where, "env"],
                    f"{name} is set by trainops, the operator or cluster"
                    f" `{cluster.name}`'s profile: the original value is kept in"
                    " `podTemplate`",
                )
            continue
        if "value" in var and set(var) == {"name", "value"}:
            plain[name] = str(var["value"])
        elif ref and set(var) == {"name", "valueFrom"} and {"name", "key"} <= set(ref):
            secret[name] = {"secret": ref["name"], "key": ref["key"]}
    # `env` wins over `envFrom` for a name both set (the kubelet applies envFrom first).
    secret = {**{k: v for k, v in from_secrets.items() if k not in plain}, **secret}
    if plain:
        job["env"] = plain
    if secret:
        job["secretEnv"] = secret


def drop_listed_env_from(obj: dict[str, Any], key: str, listed: set[str]) -> None:
    """Remove from every container of `obj`'s replica specs the `envFrom` Secrets whose keys
    import listed as `secretEnv` (so the escape hatch does not carry them as well)."""
    for rspec in ((obj.get("spec") or {}).get(key) or {}).values():
        pod = (((rspec or {}).get("template") or {}).get("spec")) or {}
        for container in pod.get("containers") or []:
            sources = container.get("envFrom")
            if not sources:
                continue
            kept = [
                s
                for s in sources
                if str(((s or {}).get("secretRef") or {}).get("name")) not in listed
                or not (s or {}).get("secretRef")
            ]
            if kept:
                container["envFrom"] = kept
            else:
                container.pop("envFrom")
