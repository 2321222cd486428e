"""NCCL rules: renamed/removed and unknown variables, incomplete RDMA, and settings that
contradict the cluster's network."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass

from generators.findings import Severity
from generators.rules.context import Container, Context, Object, PodTemplate
from generators.rules.data.nccl import DEPRECATED, KNOWN, NCCL_VERSION, UNKNOWN_HINTS
from generators.rules.launch import OTHER, launches
from generators.rules.model import Path, Rule, Violation

# Pod annotation Multus reads to attach extra networks (the RDMA interface).
# https://github.com/k8snetworkplumbingwg/multus-cni/blob/master/docs/how-to-use.md
MULTUS_ANNOTATION = "k8s.v1.cni.cncf.io/networks"
# RDMA needs to pin (lock) memory for its registered buffers.
RDMA_CAPABILITY = "IPC_LOCK"


@dataclass(frozen=True)
class NcclSetting:
    name: str
    value: str | None
    """None when it comes from a secret/configmap reference."""
    path: Path
    container: Container


def nccl_settings(pod: PodTemplate) -> list[NcclSetting]:
    """NCCL_* from container env, `mpirun -x` exports and `export` lines of shell scripts."""
    found: list[NcclSetting] = []
    for c in pod.containers():
        for var in c.env.values():
            if var.name.startswith("NCCL_"):
                found.append(NcclSetting(var.name, var.value, var.path, c))
        for launch in launches(c):
            for name, (value, path) in launch.mpi_exports.items():
                if name.startswith("NCCL_"):
                    found.append(NcclSetting(name, value, path, c))
            if launch.tool == OTHER and launch.words and launch.words[0][0] == "export":
                for word, path in launch.words[1:]:
                    name, _, value = word.partition("=")
                    if name.startswith("NCCL_"):
                        found.append(NcclSetting(name, value, path, c))
    return found


def _deprecated(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        for s in nccl_settings(pod):
            if s.name in DEPRECATED:
                yield Violation(f"{s.name}: {DEPRECATED[s.name]}", s.path)


def _unknown(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        for s in nccl_settings(pod):
            if s.name in KNOWN or s.name in DEPRECATED:
                continue
            hint = UNKNOWN_HINTS.get(s.name)
            if hint is None:
                close = difflib.get_close_matches(s.name, sorted(KNOWN), n=1)
                hint = f"did you mean {close[0]}?" if close else "NCCL ignores it"
            yield Violation(
                f"{s.name} is not an NCCL variable (NCCL {NCCL_VERSION} documentation): {hint}",
                s.path,
            )


def ib_enabled(settings: list[NcclSetting]) -> NcclSetting | None:
    """The setting that turns InfiniBand/RoCE on, if any."""
    values = {s.name: s for s in settings}
    disable = values.get("NCCL_IB_DISABLE")
    if disable is not None and disable.value not in {None, "0"}:
        return None
    if disable is not None:
        return disable
    net = values.get("NCCL_NET")
    if net is not None and (net.value or "").upper() == "IB":
        return net
    return values.get("NCCL_IB_HCA")


def _has_rdma_device(pod: PodTemplate, ctx: Context) -> bool:
    wanted = (
        ctx.cluster.network.rdma.device_resource
        if (ctx.cluster and ctx.cluster.network.rdma)
        else None
    )
    for c in pod.containers():
        for key in c.effective_requests():
            name = str(key)
            if name == wanted or "rdma" in name.lower() or name.startswith("mellanox.com/"):
                return True
    # hostNetwork pods reach the HCA through a /dev/infiniband hostPath instead.
    for volume, _ in pod.volumes.values():
        host_path = volume.get("hostPath")
        if isinstance(host_path, dict) and str(host_path.get("path", "")).startswith(
            "/dev/infiniband"
        ):
            return True
    return False


def _rdma_incomplete(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        enabling = ib_enabled(nccl_settings(pod))
        if enabling is None:
            continue
        what = f"{pod.replica_type or 'pod'} enables InfiniBand/RoCE ({enabling.name}="
        what += f"{enabling.value})"
        if not _has_rdma_device(pod, ctx):
            yield Violation(
                f"{what} but requests no RDMA device resource: NCCL finds no HCA and falls"
                " back to TCP sockets (or fails if NCCL_IB_DISABLE=0 is meant to force IB)",
                enabling.path,
            )
            continue
        for c in pod.containers():
            if not any(s.container.path == c.path for s in nccl_settings(pod)):
                continue
            sc = c.security_context
            caps = sc.get("capabilities") if isinstance(sc.get("capabilities"), dict) else {}
            added = {str(x) for x in (caps or {}).get("add", []) or []}
            if sc.get("privileged") is not True and RDMA_CAPABILITY not in added:
                yield Violation(
                    f"{what} but container `{c.name}` lacks the IPC_LOCK capability RDMA"
                    " needs to pin memory",
                    c.path,
                    Severity.WARNING,
                )
        if pod.spec.get("hostNetwork") is not True and MULTUS_ANNOTATION not in pod.annotations:
            yield Violation(
                f"{what} but the pod has no Multus network annotation ({MULTUS_ANNOTATION}):"
                " it has no RDMA-capable interface",
                pod.path,
                Severity.WARNING,
            )


def _iface_matches(spec: str, iface: str) -> bool:
    """NCCL_SOCKET_IFNAME semantics: comma list of prefixes, `=` exact, `^` excludes."""
    exclude = spec.startswith("^")
    body = spec[1:] if exclude else spec
    exact = body.startswith("=")
    body = body[1:] if exact else body
    hit = any((iface == p) if exact else iface.startswith(p) for p in body.split(",") if p)
    return not hit if exclude else hit


def _network_mismatch(obj: Object, ctx: Context) -> Iterator[Violation]:
    cluster = ctx.cluster
    if cluster is None:
        return
    net = cluster.network
    for pod in obj.pods:
        settings = nccl_settings(pod)
        values = {s.name: s for s in settings}
        enabling = ib_enabled(settings)
        if net.transport == "tcp" and enabling is not None:
            yield Violation(
                f"{enabling.name}={enabling.value} enables InfiniBand/RoCE but cluster"
                f" `{cluster.name}` has TCP networking only",
                enabling.path,
            )
        if net.transport == "rdma":
            disable = values.get("NCCL_IB_DISABLE")
            if disable is not None and disable.value not in {None, "0"}:
                yield Violation(
                    f"NCCL_IB_DISABLE={disable.value} forces TCP sockets on cluster"
                    f" `{cluster.name}`, whose transport is RDMA",
                    disable.path,
                )
            hca = values.get("NCCL_IB_HCA")
            if (
                hca is not None and hca.value and net.rdma is not None
                and not _iface_matches(hca.value, net.rdma.hca)
            ):  # fmt: skip
                yield Violation(
                    f"NCCL_IB_HCA={hca.value} does not select the cluster's HCA `{net.rdma.hca}`",
                    hca.path,
                )
            gid = values.get("NCCL_IB_GID_INDEX")
            if (
                gid is not None and gid.value and net.rdma is not None
                and gid.value != str(net.rdma.gid_index)
            ):  # fmt: skip
                yield Violation(
                    f"NCCL_IB_GID_INDEX={gid.value} but cluster `{cluster.name}` uses GID"
                    f" index {net.rdma.gid_index}",
                    gid.path,
                )
        ifname = values.get("NCCL_SOCKET_IFNAME")
        if (
            ifname is not None
            and ifname.value
            and not _iface_matches(ifname.value, net.socket_interface)
        ):
            yield Violation(
                f"NCCL_SOCKET_IFNAME={ifname.value} does not select interface"
                f" `{net.socket_interface}` of cluster `{cluster.name}`: NCCL's bootstrap"
                " finds no interface and hangs",
                ifname.path,
            )


RULES = (
    Rule(
        slug="nccl-env-deprecated",
        severity=Severity.WARNING,
        summary="NCCL variables NCCL has renamed or removed (legacy NRINGS names, the"
        " thresholds removed in 2.5.6, PyTorch's pre-2.2 names).",
        why="A removed variable does nothing: the tuning it promises never happens and the"
        " manifest misleads whoever debugs performance next.",
        fix="Use the current name (NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, TORCH_NCCL_*) or"
        " drop the variable.",
        example='env:\n- {name: NCCL_MIN_NRINGS, value: "4"}\n'
        '- {name: NCCL_TREE_THRESHOLD, value: "0"}',
        check=_deprecated,
        references=("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",),
    ),
    Rule(
        slug="nccl-env-unknown",
        severity=Severity.WARNING,
        summary="An `NCCL_*` name that NCCL does not define (e.g. `NCCL_TIMEOUT`).",
        why="NCCL silently ignores names it does not know, so the setting has no effect.",
        fix="Use the real mechanism the message names (for timeouts: the process-group timeout"
        " in torch), or fix the spelling.",
        example='env:\n- {name: NCCL_TIMEOUT, value: "3600"}',
        check=_unknown,
        references=("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",),
    ),
    Rule(
        slug="rdma-incomplete",
        severity=Severity.ERROR,
        summary="InfiniBand/RoCE enabled in NCCL env but the pod requests no RDMA device"
        " resource (warning: no IPC_LOCK capability, or no Multus network annotation).",
        why="Without the RDMA device the pod has no HCA: NCCL falls back to TCP at a fraction"
        " of the bandwidth, or fails. Without IPC_LOCK it cannot pin memory; without the Multus"
        " network it has no RDMA interface.",
        fix="Request the RDMA device plugin's resource (e.g. `rdma/rdma_shared_device_a: 1`),"
        " add capability IPC_LOCK, and the Multus network annotation.",
        example='env: [{name: NCCL_IB_DISABLE, value: "0"}]\n'
        "resources: {limits: {nvidia.com/gpu: 8}}",
        check=_rdma_incomplete,
    ),
    Rule(
        slug="network-mismatch",
        severity=Severity.ERROR,
        summary="NCCL settings that contradict the cluster's transport or socket interface.",
        why="IB settings on a TCP cluster, IB disabled on an RDMA cluster, or a socket"
        " interface the nodes do not have: NCCL hangs at bootstrap or runs far slower.",
        fix="Drop hand-written NCCL network settings and let the cluster overlay set them.",
        example="env: [{name: NCCL_SOCKET_IFNAME, value: eth0}]  # cluster uses net1",
        check=_network_mismatch,
        needs_cluster=True,
    ),
)
