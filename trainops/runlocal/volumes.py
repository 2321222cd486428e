"""Run-local's volumes: each volume a pod mounts, as a directory on this machine.

Claims and ConfigMap/Secret volumes are shared by every replica (the objects' files written
out as the kubelet would project them, `kube.volume_files`); emptyDirs get one directory per
replica; /dev/shm is the host's. Each volume is reported once per run in the plan's changes
or warnings, so the user knows what a local run does not prove. A claim mounted read-only on
the cluster is a directory without write permission here (HF_HOME or a cache pointed into it
fails here as it fails there).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainops.runlocal import kube
from trainops.runlocal.adapt import path_rewriter
from trainops.runlocal.operator_env import container
from trainops.runlocal.options import Options
from trainops.runlocal.source import BuiltJob

SHM_PATH = "/dev/shm"
"""A Memory emptyDir at /dev/shm only enlarges shared memory: locally the host's is used."""


def _read_only(mount: dict[str, Any], volume: dict[str, Any]) -> bool:
    """Whether the kubelet mounts this claim read-only for this container."""
    claim = volume.get("persistentVolumeClaim") or {}
    return mount.get("readOnly") is True or claim.get("readOnly") is True


@dataclass
class _Local:
    """Pod mount paths -> local directories, shared (claims, ConfigMaps) or per replica."""

    shared: list[tuple[str, Path]] = field(default_factory=list)
    per_replica: list[tuple[str, str]] = field(default_factory=list)
    """(mountPath, volume name): emptyDirs, one local directory per replica."""


@dataclass
class Volumes:
    """The plan's volume state: where each goes, and what has been reported already."""

    built: BuiltJob
    options: Options
    workdir: Path
    changes: list[str]
    warnings: list[str]
    seen: set[str]
    """Volumes already reported (shared with the plan, which reports other things once)."""
    writable: set[Path] = field(default_factory=set)
    """Claim directories some container mounts writable (never made read-only)."""

    def _volumes(self, template: dict[str, Any]) -> _Local:
        """Each mounted volume's local directory; ConfigMaps/Secrets written out, claims shared."""
        out = _Local()
        volumes = {v["name"]: v for v in template["spec"].get("volumes", [])}
        for mount in container(template).get("volumeMounts", []):
            path = str(mount["mountPath"])
            name = str(mount["name"])
            volume = volumes.get(name, {})
            sub = str(mount.get("subPath", ""))
            first = f"volume:{name}" not in self.seen
            self.seen.add(f"volume:{name}")
            if path == SHM_PATH:
                self._report(first, f"volume {name} at {SHM_PATH}: the host's shared memory")
            elif name not in self.options.volumes and "emptyDir" in volume:
                out.per_replica.append((path, name))
                self._report(first, f"volume {name} at {path}: an empty directory per replica")
            else:
                local = self._shared_dir(name, path, volume, first)
                out.shared.append((path, local / sub if sub else local))
                if name not in self.options.volumes and "persistentVolumeClaim" in volume:
                    self._protect(local, path, _read_only(mount, volume))
        return out

    def _protect(self, local: Path, path: str, read_only: bool) -> None:
        """A claim every container mounts read-only on the cluster is read-only here too (its
        directory without write permission), so a write there fails here as it does there;
        one mounted writable anywhere stays writable. Root ignores permissions: said once."""
        if not read_only:
            self.writable.add(local)
            local.chmod(0o755)
            return
        if local in self.writable:
            return
        local.chmod(0o555)
        if os.geteuid() == 0 and "read-only:root" not in self.seen:
            self.seen.add("read-only:root")
            self.warnings.append(
                f"running as root: the read-only mount at {path} (as on the cluster) cannot be"
                " enforced here, root writes anyway; run as another user to see those writes fail"
            )

    def _report(self, first: bool, change: str, warning: bool = False) -> None:
        """Say what a volume becomes here, once per run."""
        if first:
            (self.warnings if warning else self.changes).append(change)

    def _shared_dir(self, name: str, path: str, volume: dict[str, Any], first: bool) -> Path:
        """The one local directory every replica mounts for this volume."""
        if name in self.options.volumes:
            local = Path(self.options.volumes[name]).resolve()
            self._report(first, f"volume {name} at {path}: {local} (--volume)")
            return local
        if "configMap" in volume or "secret" in volume:
            local = self._materialise(name, volume, first)
            self._report(first, f"volume {name} at {path}: materialised in {local}")
            return local
        if "persistentVolumeClaim" in volume:
            claim = str(volume["persistentVolumeClaim"]["claimName"])
            local = self.workdir / "claims" / claim
            local.mkdir(parents=True, exist_ok=True)
            self._report(
                first,
                f"volume {name} at {path}: claim {claim} -> empty {local}, shared by all"
                " replicas (mount a real directory with --volume)",
            )
            return local
        local = self.workdir / "volumes" / name
        local.mkdir(parents=True, exist_ok=True)
        kind = ", ".join(sorted(k for k in volume if k != "name")) or "undefined"
        self._report(
            first, f"volume {name} at {path} ({kind}) is an empty directory here", warning=True
        )
        return local

    def _materialise(self, name: str, volume: dict[str, Any], first: bool) -> Path:
        """Write a ConfigMap/Secret volume's files as the pod would see them."""
        built, workdir, warnings = self.built, self.workdir, self.warnings
        kind = "configMap" if "configMap" in volume else "secret"
        source = volume[kind]
        obj_name = str(source.get("name") or source.get("secretName"))
        store = built.config_maps if kind == "configMap" else built.secrets
        local = workdir / "volumes" / name
        local.mkdir(parents=True, exist_ok=True)
        obj = store.get(obj_name)
        if obj is None:
            if first:
                warnings.append(
                    f"volume {name}: {kind} {obj_name!r} is not in the built objects: empty here"
                )
            return local
        for rel, content in kube.volume_files(obj, source.get("items")).items():
            target = local / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content, encoding="utf-8")
        return local

    def mounts(self, template: dict[str, Any], pod_dir: Path) -> Callable[[str], str]:
        """A rewriter of the pod's paths to this machine's, for one replica's directory."""
        vols = self._volumes(template)
        mounts = list(vols.shared)
        for path, vol_name in vols.per_replica:
            local_dir = pod_dir / "volumes" / vol_name
            local_dir.mkdir(parents=True, exist_ok=True)
            mounts.append((path, local_dir))
        return path_rewriter(mounts)
