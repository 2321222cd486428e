"""NCCL rules: renamed/removed and unknown variables, and settings that contradict the
cluster's network; what NCCL sees in each pod (`rank_nccl_settings`), which `rdma.py` uses."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass

from trainops.core.findings import Severity
from trainops.facts.nccl import DEPRECATED, KNOWN, NCCL_VERSION, UNKNOWN_HINTS
from trainops.kube.launch import MPI, OTHER, launches
from trainops.kube.objects import Object
from trainops.kube.pods import Container, PodTemplate
from trainops.rules.context import Context
from trainops.rules.model import Path, Rule, Violation

# MPI implementations whose mpiexec (Hydra) passes the launcher's whole environment to every
# rank; Open MPI passes only what `-x` exports. MPIJob v2beta1 `spec.mpiImplementation`.
# https://www.intel.com/content/www/us/en/docs/mpi-library/developer-reference-linux/2021-8/hydra-environment-variables.html
ENV_PROPAGATING_MPI = frozenset({"Intel", "MPICH"})


@dataclass(frozen=True)
class NcclSetting:
    name: str
    value: str | None
    """None when it comes from a secret/configmap reference."""
    path: Path
    """Where it is written (a Launcher's argv for an mpirun export)."""
    container: Container
    """The container whose NCCL sees it (a Worker's for an export from the Launcher)."""
    via: str = ""
    """How it reaches that container when it is written elsewhere."""
    exported: bool = False
    """An mpirun export (`-x`, `-genv`): it takes effect in the ranks mpirun starts."""


def nccl_settings(pod: PodTemplate, *, exports: bool = True) -> list[NcclSetting]:
    """NCCL_* written in this pod: container env, `export` lines of shell scripts and (with
    `exports`) what its mpirun commands export to their ranks."""
    found: list[NcclSetting] = []
    for c in pod.containers():
        for var in c.env.values():
            if var.name.startswith("NCCL_"):
                found.append(NcclSetting(var.name, var.value, var.path, c))
        for launch in launches(c):
            if exports:
                for name, (value, path) in launch.mpi_exports.items():
                    if name.startswith("NCCL_"):
                        found.append(NcclSetting(name, value, path, c, exported=True))
            if launch.tool == OTHER and launch.words and launch.words[0][0] == "export":
                for word, path in launch.words[1:]:
                    name, _, value = word.partition("=")
                    if name.startswith("NCCL_"):
                        found.append(NcclSetting(name, value, path, c))
    return found


def _runs_mpirun(pod: PodTemplate) -> bool:
    return any(launch.tool == MPI for c in pod.containers() for launch in launches(c))


def mpi_roles(obj: Object) -> tuple[list[PodTemplate], list[PodTemplate]]:
    """(launcher pods, rank pods): where mpirun runs, and where the ranks it starts run.

    An MPIJob's ranks are its Workers (and the Launcher with `runLauncherAsWorker`); in other
    objects, the pods other than the ones running mpirun (all of them when every pod does).
    """
    if obj.kind == "MPIJob" and obj.is_kubeflow_job:
        launchers = [p for p in obj.pods if p.rtype == "launcher"]
        ranks = [p for p in obj.pods if p.rtype != "launcher"]
        if obj.spec.get("runLauncherAsWorker") is True:
            ranks += launchers
        return launchers, ranks
    launchers = [p for p in obj.pods if _runs_mpirun(p)]
    others = [p for p in obj.pods if p not in launchers]
    return launchers, (others or launchers)


def rank_nccl_settings(obj: Object, pod: PodTemplate) -> list[NcclSetting]:
    """What NCCL sees in the processes this pod runs, later entries winning.

    A pod's own env, plus what mpirun in the object's launcher pods hands its ranks: `-x`
    exports always, the launcher's whole env with Intel MPI / MPICH. A launcher pod that runs
    no rank runs no NCCL: nothing.
    """
    launchers, ranks = mpi_roles(obj)
    if not launchers:
        return nccl_settings(pod)
    if pod not in ranks:
        return []
    own = nccl_settings(pod, exports=False)
    containers = pod.containers()
    if not containers:
        return own
    rank = containers[0]  # where the MPI operator's sshd starts the ranks
    propagate_env = str(obj.spec.get("mpiImplementation", "OpenMPI")) in ENV_PROPAGATING_MPI
    passed: list[NcclSetting] = []
    for launcher in launchers:
        where = launcher.replica_type or "the launcher"
        for s in nccl_settings(launcher):
            if s.exported:
                via = f"exported by mpirun in {where}"
            elif propagate_env and launcher is not pod:
                via = f"passed on from {where}'s env by mpiexec"
            else:
                continue
            passed.append(NcclSetting(s.name, s.value, s.path, rank, via, exported=True))
    return own + passed


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
    """The setting that asks for InfiniBand/RoCE, if any (None when IB is disabled, or when
    NCCL_IB_DISABLE comes from a reference whose value we cannot see)."""
    values = {s.name: s for s in settings}
    disable = values.get("NCCL_IB_DISABLE")
    if disable is not None and disable.value != "0":
        return None
    net = values.get("NCCL_NET")
    if net is not None and (net.value or "").upper() == "IB":
        return net
    if disable is not None:
        return disable
    return values.get("NCCL_IB_HCA")


def ib_forced(setting: NcclSetting) -> bool:
    """NCCL_NET=IB makes NCCL use the IB transport or fail; NCCL_IB_DISABLE=0 (NCCL's default)
    and NCCL_IB_HCA only allow it: without an HCA NCCL falls back to TCP sockets."""
    return setting.name == "NCCL_NET"


def describe(setting: NcclSetting) -> str:
    via = f", {setting.via}" if setting.via else ""
    return f"{setting.name}={setting.value}{via}"


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
        settings = rank_nccl_settings(obj, pod)
        values = {s.name: s for s in settings}
        enabling = ib_enabled(settings)
        if not net.is_rdma and enabling is not None:
            if ib_forced(enabling):
                yield Violation(
                    f"{describe(enabling)} forces InfiniBand/RoCE but cluster `{cluster.name}`"
                    " has TCP networking only: NCCL fails at initialisation",
                    enabling.path,
                )
            else:
                yield Violation(
                    f"{describe(enabling)} asks for InfiniBand/RoCE but cluster"
                    f" `{cluster.name}` has TCP networking only: it does nothing (NCCL uses"
                    " TCP sockets); drop it and let the cluster overlay set NCCL's network",
                    enabling.path,
                    Severity.WARNING,
                )
        if net.is_rdma:
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
        code="TO501",
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
        pods_only=True,
        references=("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",),
    ),
    Rule(
        slug="nccl-env-unknown",
        code="TO502",
        severity=Severity.WARNING,
        summary="An `NCCL_*` name that NCCL does not define (e.g. `NCCL_TIMEOUT`).",
        why="NCCL silently ignores names it does not know, so the setting has no effect.",
        fix="Use the real mechanism the message names (for timeouts: the process-group timeout"
        " in torch), or fix the spelling.",
        example='env:\n- {name: NCCL_TIMEOUT, value: "3600"}',
        check=_unknown,
        pods_only=True,
        references=("https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html",),
    ),
    Rule(
        slug="network-mismatch",
        code="TO504",
        severity=Severity.ERROR,
        summary="NCCL settings that contradict the cluster's transport or socket interface"
        " (warning: IB merely allowed, e.g. NCCL_IB_DISABLE=0, on a TCP cluster).",
        why="IB settings on a TCP cluster, IB disabled on an RDMA cluster, or a socket"
        " interface the nodes do not have: NCCL hangs at bootstrap or runs far slower.",
        fix="Drop hand-written NCCL network settings and let the cluster overlay set them.",
        example="env: [{name: NCCL_SOCKET_IFNAME, value: eth0}]  # cluster uses net1",
        check=_network_mismatch,
        needs_cluster=True,
    ),
)
