"""The Pod Security Standards, control by control, on one pod spec.

https://kubernetes.io/docs/concepts/security/pod-security-standards/ (the version Kubernetes
1.30-1.33 enforce through Pod Security admission). `breaches(meta, spec)` yields every control
a pod template fails, tagged with the level that forbids it; the `pod-security` rule and
`trainops build`'s per-cluster level both read it, so the level we print is the one checked."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

Level = Literal["privileged", "baseline", "restricted"]
LEVELS: tuple[Level, ...] = ("privileged", "baseline", "restricted")
# The namespace label Pod Security admission enforces.
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"

# Baseline "Capabilities": what may be added (the container runtime's default set).
BASELINE_CAPABILITIES = frozenset(
    {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD"}
    | {"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
)
# Restricted "Capabilities": drop ALL, add at most this.
RESTRICTED_CAPABILITIES = frozenset({"NET_BIND_SERVICE"})
# Baseline "Sysctls": the safe set (through 1.29: the four tcp_keepalive/fin ones).
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)
# Baseline "SELinux": the types a pod may ask for.
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
# Restricted "Volume Types": everything else (hostPath, nfs, iscsi, ...) is refused.
RESTRICTED_VOLUMES = frozenset(
    {
        "configMap",
        "csi",
        "downwardAPI",
        "emptyDir",
        "ephemeral",
        "persistentVolumeClaim",
        "projected",
        "secret",
    }
)
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"

# Host paths whose mount is a way onto the node (its configuration, its kernel's view, the
# container runtime's socket, the kubelet's credentials): the path itself, anything under it,
# and any directory above it (`/` and `/var` hold them all). The baseline floor of
# `validate --manifests` without a profile reports only these: hostPaths such as
# `/dev/infiniband` or `/dev/shm` are how RDMA and shared-memory recipes work, a call for the
# cluster's profile (`podSecurity.allowHostPaths`), not a way out. The list follows
# kube-linter's `sensitive-host-mounts` and kubeaudit's `mounts` defaults.
SENSITIVE_HOST_PATHS = frozenset(
    {
        "/etc",
        "/proc",
        "/sys",
        "/boot",
        "/root",
        "/var/lib/kubelet",
        "/var/lib/docker",
        "/var/lib/containerd",
        "/var/run/docker.sock",
        "/run/docker.sock",
        "/var/run/containerd",
        "/run/containerd",
        "/var/run/crio",
        "/run/crio",
    }
)
# Whole system trees that are sensitive only as a whole (their subtrees are what device and
# driver recipes mount: `/dev/infiniband`, `/usr/local/nvidia`).
SENSITIVE_HOST_ROOTS = frozenset({"/dev", "/usr", "/lib", "/lib64", "/bin", "/sbin"})

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Breach:
    """One control a pod fails."""

    level: Level
    """The lowest level that forbids it: `baseline` (so also restricted) or `restricted`."""
    control: str
    """The control's name in the Standards (`Host Namespaces`, `Capabilities`, ...)."""
    message: str
    path: Path
    """Inside the pod template (`spec`, `containers`, 0, ...)."""
    exception: str | None = None
    """What a cluster may declare to admit it: `capability:IPC_LOCK`, `hostPath:/dev/x`,
    `hostNetwork`, `hostPort` (a host port: admitted with host networking, else on the floor);
    None when nothing may."""

    @classmethod
    def baseline(cls, control: str, message: str, path: Path, exc: str | None = None) -> Breach:
        """A breach of a baseline control (so of restricted too)."""
        return cls("baseline", control, message, path, exc)

    @classmethod
    def restricted(cls, control: str, message: str, path: Path, exc: str | None = None) -> Breach:
        """A breach of a control only the restricted level has."""
        return cls("restricted", control, message, path, exc)


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _containers(spec: dict[str, Any]) -> Iterator[tuple[dict[str, Any], Path]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for i, c in enumerate(_l(spec.get(key))):
            yield _d(c), ("spec", key, i)


def breaches(
    meta: dict[str, Any], spec: dict[str, Any], restricted: bool = True
) -> Iterator[Breach]:
    """Every Pod Security control `spec` (a pod spec, with its template's `meta`) fails;
    `restricted=False`: the baseline ones (the only `Breach.baseline`s: all `on_floor` reads)."""
    for check in BASELINE_CHECKS:
        yield from check(meta, spec)
    for more in RESTRICTED_CHECKS if restricted else ():
        yield from more(spec)


def _security_contexts(meta: dict[str, Any], spec: dict[str, Any]) -> Iterator[Breach]:
    """HostProcess, SELinux, Seccomp and AppArmor: set on the pod or on any container."""
    psc = _d(spec.get("securityContext"))
    scopes = [(psc, ("spec", "securityContext"), "the pod")] + [
        (_d(c.get("securityContext")), (*p, "securityContext"), f"container `{c.get('name')}`")
        for c, p in _containers(spec)
    ]
    for sc, at, who in scopes:
        if _d(sc.get("windowsOptions")).get("hostProcess") is True:
            yield Breach.baseline(
                "HostProcess", f"{who} is a Windows HostProcess", (*at, "windowsOptions")
            )
        se = _d(sc.get("seLinuxOptions"))
        if se.get("type", "") not in SELINUX_TYPES or se.get("user") or se.get("role"):
            yield Breach.baseline(
                "SELinux",
                f"{who} sets a custom SELinux user, role or type",
                (*at, "seLinuxOptions"),
            )
        seccomp = _d(sc.get("seccompProfile")).get("type")
        if seccomp == "Unconfined":
            yield Breach.baseline(
                "Seccomp", f"{who} runs seccomp Unconfined", (*at, "seccompProfile")
            )
        apparmor = _d(sc.get("appArmorProfile")).get("type")
        if apparmor not in (None, "RuntimeDefault", "Localhost"):
            yield Breach.baseline(
                "AppArmor", f"{who} sets AppArmor `{apparmor}`", (*at, "appArmorProfile")
            )


def _host_namespaces(meta: dict[str, Any], spec: dict[str, Any]) -> Iterator[Breach]:
    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key) is True:
            exception = "hostNetwork" if key == "hostNetwork" else None
            yield Breach.baseline(
                "Host Namespaces",
                f"`{key}: true` shares the node's namespace",
                ("spec", key),
                exception,
            )


def _sysctls(meta: dict[str, Any], spec: dict[str, Any]) -> Iterator[Breach]:
    psc = _d(spec.get("securityContext"))
    for i, sysctl in enumerate(_l(psc.get("sysctls"))):
        name = _d(sysctl).get("name")
        if name not in SAFE_SYSCTLS:
            yield Breach.baseline(
                "Sysctls",
                f"sysctl `{name}` is not in the safe set",
                ("spec", "securityContext", "sysctls", i),
            )


def _host_paths(meta: dict[str, Any], spec: dict[str, Any]) -> Iterator[Breach]:
    for i, vol in enumerate(_l(spec.get("volumes"))):
        host = _d(_d(vol).get("hostPath"))
        if host:
            where = str(host.get("path", ""))
            yield Breach.baseline(
                "HostPath Volumes",
                f"hostPath volume `{where}` reaches the node's files",
                ("spec", "volumes", i, "hostPath"),
                f"hostPath:{where}",
            )


def _apparmor_annotations(meta: dict[str, Any], spec: dict[str, Any]) -> Iterator[Breach]:
    for key, value in _d(meta.get("annotations")).items():
        if str(key).startswith(APPARMOR_ANNOTATION) and not (
            value == "runtime/default" or str(value).startswith("localhost/")
        ):
            yield Breach.baseline(
                "AppArmor",
                f"AppArmor annotation `{key}: {value}`",
                ("metadata", "annotations", key),
            )


def _containers_baseline(meta: dict[str, Any], spec: dict[str, Any]) -> Iterator[Breach]:
    """Privileged containers, /proc mount, added capabilities, host ports."""
    for c, at in _containers(spec):
        sc = _d(c.get("securityContext"))
        name = c.get("name")
        if sc.get("privileged") is True:
            yield Breach.baseline(
                "Privileged Containers",
                f"container `{name}` is privileged",
                (*at, "securityContext", "privileged"),
            )
        if sc.get("procMount", "Default") != "Default":
            yield Breach.baseline(
                "/proc Mount Type",
                f"container `{name}` unmasks /proc (`procMount: {sc.get('procMount')}`)",
                (*at, "securityContext", "procMount"),
            )
        added = [str(x).removeprefix("CAP_") for x in _l(_d(sc.get("capabilities")).get("add"))]
        for j, cap in enumerate(added):
            if cap not in BASELINE_CAPABILITIES:
                yield Breach.baseline(
                    "Capabilities",
                    f"container `{name}` adds capability {cap}",
                    (*at, "securityContext", "capabilities", "add", j),
                    f"capability:{cap}",
                )
        # Under hostNetwork the API server sets hostPort to containerPort: the host network's.
        exc = "hostNetwork" if spec.get("hostNetwork") is True else "hostPort"
        for j, port in enumerate(_l(c.get("ports"))):
            if _d(port).get("hostPort") not in (None, 0):
                yield Breach.baseline(
                    "Host Ports",
                    f"container `{name}` binds host port {_d(port).get('hostPort')}",
                    (*at, "ports", j, "hostPort"),
                    exc,
                )


BASELINE_CHECKS: tuple[Callable[[dict[str, Any], dict[str, Any]], Iterator[Breach]], ...] = (
    _security_contexts,
    _host_namespaces,
    _sysctls,
    _host_paths,
    _apparmor_annotations,
    _containers_baseline,
)
"""The baseline controls, each `(template metadata, pod spec) -> breaches`, in report order."""


def _volume_types(spec: dict[str, Any]) -> Iterator[Breach]:
    for i, vol in enumerate(_l(spec.get("volumes"))):
        kinds = [k for k in _d(vol) if k != "name"]
        for kind in kinds:
            if kind not in RESTRICTED_VOLUMES and kind != "hostPath":  # hostPath: baseline's
                yield Breach.restricted(
                    "Volume Types",
                    f"volume `{_d(vol).get('name')}` is of type {kind}",
                    ("spec", "volumes", i, kind),
                )


def _pod_user(spec: dict[str, Any]) -> Iterator[Breach]:
    if _d(spec.get("securityContext")).get("runAsUser") == 0:
        yield Breach.restricted(
            "Running as Non-root user",
            "the pod runs as uid 0",
            ("spec", "securityContext", "runAsUser"),
        )


def _containers_restricted(spec: dict[str, Any]) -> Iterator[Breach]:
    """Privilege escalation, non-root, seccomp and capabilities of each container."""
    psc = _d(spec.get("securityContext"))
    for c, at in _containers(spec):
        sc = _d(c.get("securityContext"))
        name = c.get("name")
        scp = (*at, "securityContext")
        if sc.get("allowPrivilegeEscalation") is not False:
            yield Breach.restricted(
                "Privilege Escalation",
                f"container `{name}` must set `allowPrivilegeEscalation: false`",
                scp,
            )
        if sc.get("runAsNonRoot", psc.get("runAsNonRoot")) is not True:
            yield Breach.restricted(
                "Running as Non-root",
                f"container `{name}` needs `runAsNonRoot: true` (pod or container)",
                scp,
            )
        if sc.get("runAsUser") == 0:
            yield Breach.restricted(
                "Running as Non-root user", f"container `{name}` runs as uid 0", (*scp, "runAsUser")
            )
        seccomp = _d(sc.get("seccompProfile") or psc.get("seccompProfile")).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            yield Breach.restricted(
                "Seccomp",
                f"container `{name}` needs seccomp RuntimeDefault or Localhost (pod or container)",
                scp,
            )
        yield from _restricted_capabilities(name, _d(sc.get("capabilities")), scp)


def _restricted_capabilities(name: Any, caps: dict[str, Any], scp: Path) -> Iterator[Breach]:
    if "ALL" not in [str(x) for x in _l(caps.get("drop"))]:
        yield Breach.restricted(
            "Capabilities", f"container `{name}` must drop ALL capabilities", (*scp, "capabilities")
        )
    for j, cap in enumerate(str(x).removeprefix("CAP_") for x in _l(caps.get("add"))):
        if cap in BASELINE_CAPABILITIES - RESTRICTED_CAPABILITIES:
            yield Breach.restricted(
                "Capabilities",
                f"container `{name}` adds {cap}; restricted allows only NET_BIND_SERVICE",
                (*scp, "capabilities", "add", j),
                f"capability:{cap}",
            )


RESTRICTED_CHECKS: tuple[Callable[[dict[str, Any]], Iterator[Breach]], ...] = (
    _volume_types,
    _pod_user,
    _containers_restricted,
)
"""The restricted controls beyond baseline, each `pod spec -> breaches`, in report order."""


def admitted(
    breach: Breach, capabilities: set[str], host_paths: set[str], host_network: bool
) -> bool:
    """Whether a cluster's declared exceptions admit `breach`."""
    exc = breach.exception
    if exc is None:
        return False
    if exc in ("hostNetwork", "hostPort"):
        return host_network
    kind, _, value = exc.partition(":")
    if kind == "capability":
        return value in capabilities
    return any(value == p or value.startswith(p.rstrip("/") + "/") for p in host_paths)


def sensitive_host_path(path: str) -> bool:
    """Whether mounting host `path` reaches the node's configuration, kernel or runtime."""
    norm = "/" + "/".join(p for p in path.split("/") if p not in ("", "."))
    if norm in SENSITIVE_HOST_ROOTS:
        return True
    return any(
        norm == s or norm.startswith(s + "/") or s.startswith(norm.rstrip("/") + "/")
        for s in SENSITIVE_HOST_PATHS
    )


# Baseline controls that are not on the floor: each is either a recipe's need a cluster
# profile may declare (hostNetwork, hostPaths outside the sensitive ones), or already a
# finding everywhere by a rule of its own (`privileged`, TO602: privileged containers and
# capabilities beyond IPC_LOCK).
OFF_FLOOR_CONTROLS = frozenset({"Privileged Containers", "Capabilities"})


def on_floor(breach: Breach) -> bool:
    """Whether `breach` breaks the baseline floor that holds on every cluster, with or without
    a profile: no profile may except it (hostPID, hostIPC, host ports, the node's sensitive
    paths, unconfined seccomp, custom SELinux, unmasked /proc, unsafe sysctls, HostProcess)."""
    if breach.level != "baseline" or breach.control in OFF_FLOOR_CONTROLS:
        return False
    if breach.exception == "hostNetwork":
        return False
    if breach.control == "HostPath Volumes":
        return sensitive_host_path((breach.exception or "").removeprefix("hostPath:"))
    return True


def level_of(found: list[Breach]) -> Level:
    """The highest level a pod with these breaches meets."""
    if any(b.level == "baseline" for b in found):
        return "privileged"
    if found:
        return "baseline"
    return "restricted"
