"""Pod Security's baseline is a floor without a cluster profile too (issues 26 and 29):
`validate --manifests` in CI reports a pod sharing the node's PID namespace or mounting its
`/`, and with a profile each such breach is reported once, by the floor rule.

The controls are the Pod Security Standards' baseline
(https://kubernetes.io/docs/concepts/security/pod-security-standards/#baseline), which
Kubernetes' admission (k8s.io/pod-security-admission, policy/check_*.go) enforces."""

from __future__ import annotations

from tests.rules.helpers import FIXTURES, manifests_from_file, manifests_from_text, run
from trainops.facts import pod_security as pss
from trainops.facts.pod_security import sensitive_host_path
from trainops.jobspec.model import ClusterProfile
from trainops.kube.objects import Object

FLOOR = FIXTURES / "pod-security-baseline"

JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {{name: demo, namespace: ml-train}}
spec:
  template:
    spec:
      restartPolicy: Never
      {field}
      containers:
        - name: main
          image: registry.example/train:1.0
          resources: {{limits: {{cpu: "1", memory: 1Gi}}}}
"""


def _floor(field: str, cluster: ClusterProfile | None = None) -> list[str]:
    found = run(manifests_from_text(JOB.format(field=field)), cluster)
    return [f.message for f in found if f.rule == "pod-security-baseline"]


def test_the_issues_pytorchjob_is_reported_without_a_profile() -> None:
    found = run(manifests_from_file(FLOOR / "fail-pytorchjob-host-root.yaml"), None)
    floor = sorted(f.message for f in found if f.rule == "pod-security-baseline")
    assert len(floor) == 2
    assert "`hostPID: true`" in floor[0]
    assert "hostPath volume `/` " in floor[1]
    assert all(f.line for f in found if f.rule == "pod-security-baseline")


def test_each_floor_control_is_reported_without_a_profile() -> None:
    for field in (
        "hostPID: true",
        "hostIPC: true",
        "volumes: [{name: etc, hostPath: {path: /etc/kubernetes}}]",
        "volumes: [{name: var, hostPath: {path: /var}}]",
        "securityContext: {seccompProfile: {type: Unconfined}}",
        "securityContext: {sysctls: [{name: kernel.msgmax, value: '1'}]}",
    ):
        assert _floor(field), field


def test_recipes_hostpaths_and_host_network_are_not_on_the_floor() -> None:
    """RDMA and shared-memory recipes mount `/dev/infiniband` and `/dev/shm` and use the
    host network: a profile's call (`pod-security`), not a way onto the node."""
    for field in (
        "volumes: [{name: shm, hostPath: {path: /dev/shm}}]",
        "volumes: [{name: ib, hostPath: {path: /dev/infiniband}}]",
        "hostNetwork: true",
    ):
        assert not _floor(field), field


def test_with_a_profile_each_breach_is_reported_once(cluster: ClusterProfile) -> None:
    found = run(manifests_from_text(JOB.format(field="hostPID: true")), cluster)
    rules = [f.rule for f in found if "hostPID" in f.message]
    assert rules == ["pod-security-baseline"]


def test_sensitive_host_paths() -> None:
    for path in (
        "/",
        "/var",
        "/var/run",
        "/etc",
        "/etc/",
        "/proc/1",
        "/run/containerd",
        "/var/run/docker.sock",
        "/var/lib/kubelet/pki",
        "/dev",
        "/usr",
        "/root",
    ):
        assert sensitive_host_path(path), path
    for path in (
        "/dev/shm",
        "/dev/infiniband",
        "/mnt/data",
        "/scratch",
        "/usr/local/nvidia",
        "/var/log/train",
        "/home/alice/data",
    ):
        assert not sensitive_host_path(path), path


def test_the_baseline_controls_alone_give_every_baseline_breach() -> None:
    """The floor reads the baseline controls only (issue 39): over every pod of the rules'
    fixtures, the restricted controls add no baseline breach and the baseline ones no
    restricted breach, so the floor misses nothing `breaches` would have given it."""
    pods = [
        pod
        for path in sorted(FIXTURES.rglob("*.yaml"))
        for manifest in manifests_from_file(path)
        for pod in Object(manifest).all_pods
    ]
    levels = set()
    for pod in pods:
        every = list(pss.breaches(pod.metadata, pod.spec))
        baseline = list(pss.breaches(pod.metadata, pod.spec, restricted=False))
        assert baseline == [b for b in every if b.level == "baseline"]
        levels |= {b.level for b in every}
    assert len(pods) > 100
    assert levels == {"baseline", "restricted"}
