"""The doctor's node checks: each GPU product's nodes (the profile's node labels) with the
device plugin's resource allocatable, as many as `capacity.nodes` declares; the RDMA device
plugin's resource on them where the profile says `transport: rdma`; and NVIDIA's DCGM exporter
(what the GPU utilisation alert and dashboard read) running on every GPU node."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainops.cluster.client import Client
from trainops.cluster.doctor import Check, fail, guarded, ok
from trainops.facts.quantity import parse_quantity
from trainops.jobspec.model import ClusterProfile, GpuProduct

NODE = ("v1", "Node")
DAEMONSET = ("apps/v1", "DaemonSet")
# The DCGM exporter's DaemonSet: `nvidia-dcgm-exporter` (NVIDIA GPU Operator) or
# `dcgm-exporter` (its Helm chart, github.com/NVIDIA/dcgm-exporter deployment/).
DCGM_EXPORTER = "dcgm-exporter"
_SHOWN = 3  # node names listed in a line, then "and N more"


def _names(nodes: list[dict[str, Any]]) -> str:
    names = sorted(str((n.get("metadata") or {}).get("name")) for n in nodes)
    more = f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def _allocatable(node: dict[str, Any], resource: str) -> float:
    value = ((node.get("status") or {}).get("allocatable") or {}).get(resource)
    return parse_quantity(value) or 0.0 if value is not None else 0.0


def _nodes_of(nodes: list[dict[str, Any]], product: GpuProduct) -> list[dict[str, Any]]:
    return [
        n
        for n in nodes
        if all(
            ((n.get("metadata") or {}).get("labels") or {}).get(k) == v
            for k, v in product.node_selector.items()
        )
    ]


def node_checks(client: Client, profile: ClusterProfile) -> Iterator[Check]:
    """GPU products, RDMA and the DCGM exporter, from one list of the nodes."""
    yield from guarded("nodes", lambda: _node_checks(client, profile))


def _node_checks(client: Client, profile: ClusterProfile) -> Iterator[Check]:
    nodes = client.list(client.require(*NODE), None)
    gpu_nodes: list[dict[str, Any]] = []
    for product in profile.gpus:
        mine = _nodes_of(nodes, product)
        gpu_nodes += mine
        yield _gpu(profile, product, mine)
    rdma = profile.network.rdma
    if profile.network.transport == "rdma" and rdma is not None:
        name = f"rdma {rdma.device_resource}"
        without = [n for n in gpu_nodes if _allocatable(n, rdma.device_resource) < 1]
        if not gpu_nodes:
            yield fail(name, "no GPU node to check (see the gpu lines)")
        elif without:
            yield fail(
                name,
                f"{len(without)} of {len(gpu_nodes)} GPU nodes have no allocatable"
                f" {rdma.device_resource} ({_names(without)}): the RDMA device plugin does not"
                " run there, and every rank asks for it",
            )
        else:
            yield ok(name, f"allocatable on all {len(gpu_nodes)} GPU nodes")
    yield from guarded("dcgm-exporter", lambda: _dcgm(client, gpu_nodes))


def _gpu(profile: ClusterProfile, product: GpuProduct, mine: list[dict[str, Any]]) -> Check:
    name = f"gpu {product.name}"
    labels = ",".join(f"{k}={v}" for k, v in sorted(product.node_selector.items()))
    declared = profile.capacity.nodes.get(product.name)
    if not mine:
        return fail(
            name,
            f"no node has {labels}: every job of this product stays Pending; fix the product's"
            f" nodeSelector in {profile.file} or label the nodes",
        )
    short = [n for n in mine if _allocatable(n, product.resource) < product.per_node]
    if short:
        have = sorted({int(_allocatable(n, product.resource)) for n in short})
        return fail(
            name,
            f"{len(short)} of {len(mine)} nodes with {labels} have {'/'.join(map(str, have))}"
            f" allocatable {product.resource}, not {product.per_node} ({_names(short)}): the"
            " device plugin does not run there, or fewer GPUs work than `perNode` says",
        )
    if declared is not None and len(mine) < declared:
        return fail(
            name,
            f"{len(mine)} nodes have {labels}, `capacity.nodes.{product.name}` declares"
            f" {declared}: capacity and gang checks count GPUs the cluster does not have",
        )
    return ok(name, f"{len(mine)} nodes with {labels}, {product.per_node} {product.resource} each")


def _dcgm(client: Client, gpu_nodes: list[dict[str, Any]]) -> Iterator[Check]:
    name = "dcgm-exporter"
    sets = client.list(client.require(*DAEMONSET), None)
    found = [d for d in sets if DCGM_EXPORTER in str((d.get("metadata") or {}).get("name"))]
    if not found:
        yield fail(
            name,
            "no DCGM exporter DaemonSet (nvidia-dcgm-exporter, dcgm-exporter) in any namespace:"
            " the GPU utilisation alert and the dashboard's GPU panels have no data",
        )
        return
    ds = found[0]
    meta, status = ds.get("metadata") or {}, ds.get("status") or {}
    up, want = int(status.get("numberReady") or 0), int(status.get("desiredNumberScheduled") or 0)
    where = f"DaemonSet {meta.get('namespace')}/{meta.get('name')}"
    if want == 0 or up < want:
        yield fail(name, f"{where}: {up}/{want} ready")
    elif want < len(gpu_nodes):
        yield fail(
            name, f"{where} runs on {want} nodes, the cluster has {len(gpu_nodes)} GPU nodes"
        )
    else:
        yield ok(name, f"{where}: {up}/{want} ready")
