"""Pod-level rules for any workload: hostNetwork DNS, unpinned images, privilege."""

from __future__ import annotations

import re
from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.core.values import as_dict, as_list, is_placeholder
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation

# Tags that name a moving target rather than a build.
_MOVING_TAG = re.compile(r"^(latest|nightly|main|master|edge|dev)([-_.].*)?$|.*[-_.]latest$")
# Capabilities RDMA needs; anything more is a privilege to justify.
ALLOWED_CAPABILITIES = frozenset({"IPC_LOCK"})


def _host_network(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        if pod.spec.get("hostNetwork") is not True:
            continue
        path = (*pod.spec_path, "hostNetwork")
        if pod.spec.get("dnsPolicy") != "ClusterFirstWithHostNet":
            yield Violation(
                "hostNetwork: true without dnsPolicy: ClusterFirstWithHostNet: the pod uses the"
                " node's resolver and cannot resolve the job's service names (rendezvous fails)",
                path,
            )
        if ctx.cluster is not None and not ctx.cluster.network.allow_host_network:
            yield Violation(f"cluster `{ctx.cluster.name}` does not allow hostNetwork", path)
        for c in pod.containers():
            for i, port in enumerate(c.ports()):
                host, inside = port.get("hostPort"), port.get("containerPort")
                if host not in (None, 0) and host != inside:
                    # apis/core/validation: "must match `containerPort` when `hostNetwork` is true"
                    yield Violation(
                        f"container `{c.name}` maps host port {host} to containerPort {inside}"
                        " under hostNetwork: the API server refuses the pod (hostPort must match"
                        " containerPort when hostNetwork is true); drop hostPort",
                        (*c.path, "ports", i, "hostPort"),
                    )


def split_image(image: str) -> tuple[str, str | None, str | None]:
    """(repository, tag, digest) of an image reference."""
    digest = None
    if "@" in image:
        image, _, digest = image.partition("@")
    name, tag = image, None
    last = image.rsplit("/", 1)[-1]
    if ":" in last:
        name, _, tag = image.rpartition(":")
    return name, tag, digest


def _unpinned(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.pods:
        for c in pod.containers(init=True):
            if c.image is None or is_placeholder(c.image):
                continue  # `${IMAGE_URI}`: whatever the template fills in is judged there
            _, tag, digest = split_image(c.image)
            if digest:
                continue
            path = (*c.path, "image")
            if tag is None:
                yield Violation(
                    f"image `{c.image}` has no tag, which means `latest`: each pull may run"
                    " different code",
                    path,
                )
            elif _MOVING_TAG.match(tag):
                yield Violation(
                    f"image `{c.image}` uses the moving tag `{tag}`: ranks pulled at different"
                    " times can run different code, and re-runs are not reproducible",
                    path,
                )


def _privileged(obj: Object, ctx: Context) -> Iterator[Violation]:
    for pod in obj.all_pods:
        for c in pod.containers(init=True):
            sc = c.security_context
            base = (*c.path, "securityContext")
            if sc.get("privileged") is True:
                yield Violation(
                    f"container `{c.name}` is privileged: it has every device and capability"
                    " of the node",
                    (*base, "privileged"),
                )
            if sc.get("allowPrivilegeEscalation") is True:
                yield Violation(
                    f"container `{c.name}` allows privilege escalation",
                    (*base, "allowPrivilegeEscalation"),
                )
            added = [str(x) for x in as_list(as_dict(sc.get("capabilities")).get("add"))]
            extra = sorted({x.removeprefix("CAP_") for x in added} - ALLOWED_CAPABILITIES)
            if extra:
                yield Violation(
                    f"container `{c.name}` adds capabilities {', '.join(extra)}; RDMA needs"
                    " only IPC_LOCK",
                    (*base, "capabilities", "add"),
                )


RULES = (
    Rule(
        slug="host-network-dns",
        code="TO505",
        severity=Severity.ERROR,
        summary="`hostNetwork: true` without `dnsPolicy: ClusterFirstWithHostNet`; error too"
        " where the cluster forbids hostNetwork, and for a hostPort other than its containerPort"
        " (the API server refuses it under hostNetwork).",
        why="With hostNetwork the default DNS policy falls back to the node's resolver, so the"
        " pod cannot resolve `<job>-master-0` and rendezvous fails.",
        fix="Add `dnsPolicy: ClusterFirstWithHostNet`, or drop hostNetwork where the cluster"
        " gives RDMA through Multus instead.",
        example="spec:\n  hostNetwork: true",
        check=_host_network,
        pods_only=True,
        references=(
            "https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#pod-s-dns-policy",
        ),
    ),
    Rule(
        slug="image-unpinned",
        code="TO601",
        severity=Severity.ERROR,
        summary="An image with no tag, or a moving tag (`latest`, `latest-*`, `nightly`,"
        " `main`, `master`); digests are best. A whole-value template placeholder"
        " (`${IMAGE_URI}`, `<YOUR_IMAGE>`) is not judged.",
        why="A moving tag lets ranks of one job run different code after a push, and a re-run"
        " cannot reproduce a result.",
        fix="Pin a version tag, better a digest (`image@sha256:...`).",
        example="image: horovod/horovod:latest-gpu",
        check=_unpinned,
        pods_only=True,
    ),
    Rule(
        slug="privileged",
        code="TO602",
        severity=Severity.ERROR,
        summary="`privileged: true`, `allowPrivilegeEscalation: true`, or added capabilities"
        " beyond what RDMA needs (IPC_LOCK).",
        why="A privileged training pod can take over the node; RDMA needs only IPC_LOCK and"
        " the device plugin's resource.",
        fix="Remove privileged; request the RDMA device resource and add only IPC_LOCK.",
        example="securityContext: {privileged: true}",
        check=_privileged,
        pods_only=True,
    ),
)
