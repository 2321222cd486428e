"""hostNetwork as Kubernetes runs it (issue 37 item 6; seed 000 recommends it on fast clusters).

Under `hostNetwork: true` the API server sets each containerPort's hostPort to it (core/v1
defaults.go `SetDefaults_Pod`) and kube-scheduler's NodePorts filter puts no two pods binding
the same host port on one node: six 4-GPU Workers serving metrics on 9090 need six nodes,
whatever their GPUs pack to. On main the gang rule counted GPUs only, and a written hostPort
was a floor error even on a cluster whose profile allows host networking.
"""

from __future__ import annotations

from dataclasses import replace

import yaml

from tests.rules.conftest import make_cluster
from tests.rules.helpers import manifests_from_text, run
from trainops.core.findings import Finding
from trainops.core.manifest import Manifest
from trainops.jobspec.model import ClusterProfile

JOB = """
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: demo, namespace: ml-train}
spec:
  runPolicy: {cleanPodPolicy: All, schedulingPolicy: {minAvailable: WORKERS}}
  pytorchReplicaSpecs:
    Worker:
      replicas: WORKERS
      restartPolicy: OnFailure
      template:
        spec:
          schedulerName: volcano
          hostNetwork: true
          dnsPolicy: ClusterFirstWithHostNet
          nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
          containers:
            - name: pytorch
              image: registry.example/train:1.0
              command: [torchrun, --nproc-per-node=4, train.py]
              ports: [{name: metrics, containerPort: 9090}]
              resources:
                limits: {nvidia.com/gpu: 4, memory: 64Gi, cpu: "8"}
                requests: {nvidia.com/gpu: 4}
"""


def _cluster(allow: bool = True) -> ClusterProfile:
    cluster = make_cluster()
    return replace(cluster, network=replace(cluster.network, allow_host_network=allow))


def _job(workers: int, change: str = "") -> list[Manifest]:
    text = JOB.replace("WORKERS", str(workers))
    doc = yaml.safe_load(text)
    if change == "no-host-network":
        spec = doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
        del spec["hostNetwork"], spec["dnsPolicy"]
    return manifests_from_text(yaml.safe_dump(doc), "demo.yaml")


def _rule(findings: list[Finding], slug: str) -> list[str]:
    return [f.message for f in findings if f.rule == slug]


def test_a_containerport_under_host_network_is_one_pod_per_node() -> None:
    """4 nodes of 8 A100s: six 4-GPU Workers fit by GPUs (3 nodes), not by host port 9090."""
    found = _rule(run(_job(6), _cluster()), "gang-unschedulable")
    assert found == [
        "can never be scheduled on `gpu-east`: 6 Worker x 4 GPUs of `a100-80gb` must run at once"
        " and 6 pods bind host port 9090/TCP (under hostNetwork every containerPort is a host"
        " port) and 4 nodes hold one each"
    ]
    assert _rule(run(_job(4), _cluster()), "gang-unschedulable") == []
    # Without hostNetwork the same six pods pack two to a node.
    assert _rule(run(_job(6, "no-host-network"), _cluster()), "gang-unschedulable") == []


def _with_host_port(network: bool, host_port: int) -> list[Manifest]:
    doc = yaml.safe_load(JOB.replace("WORKERS", "2"))
    spec = doc["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    if not network:
        del spec["hostNetwork"], spec["dnsPolicy"]
    spec["containers"][0]["ports"][0]["hostPort"] = host_port
    return manifests_from_text(yaml.safe_dump(doc), "demo.yaml")


def test_a_written_host_port_is_admitted_where_the_profile_allows_host_networking() -> None:
    job = _with_host_port(network=False, host_port=9090)
    assert _rule(run(job, _cluster(allow=True)), "pod-security-baseline") == []
    assert _rule(run(job, _cluster(allow=True)), "pod-security") == []
    # Elsewhere, and without a profile, it is still the floor's.
    for cluster in (_cluster(allow=False), None):
        floor = _rule(run(job, cluster), "pod-security-baseline")
        assert floor == [
            "container `pytorch` binds host port 9090: Pod Security `baseline` forbids it (Host"
            " Ports), on every cluster"
        ]


def test_a_host_port_under_host_network_is_the_host_networks_once() -> None:
    """hostPort = containerPort under hostNetwork is what the API server sets anyway: no floor
    error of its own; a hostPort that differs is refused by the API server."""
    same = run(_with_host_port(network=True, host_port=9090), None)
    assert _rule(same, "pod-security-baseline") == []
    other = run(_with_host_port(network=True, host_port=19090), _cluster())
    assert _rule(other, "host-network-dns") == [
        "container `pytorch` maps host port 19090 to containerPort 9090 under hostNetwork: the"
        " API server refuses the pod (hostPort must match containerPort when hostNetwork is"
        " true); drop hostPort"
    ]
