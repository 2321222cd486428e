"""The escape hatch and the first-class pod fields: merged into what trainops renders with the
documented precedence, checked at load against the core PodTemplateSpec of each target
cluster's Kubernetes version (file:line:column, exit 2), and delivered by the real kustomize."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.render.repos import build_overlay, render
from tests.tools import line_of, require_kustomize, trainops, tree
from trainops.render.overrides import merge

HATCH = """\
imagePullSecrets: [regcred]
serviceAccountName: trainer
priorityClassName: training-high
affinity:
  podAntiAffinity:
    preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        podAffinityTerm:
          topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {trainops.dev/job: resnet50-ddp}}
podLabels: {team: vision}
podAnnotations: {example.com/owner: vision-team}
extraVolumes:
  - name: certs
    secret: {secretName: bucket-ca}
extraVolumeMounts:
  - {name: certs, mountPath: /etc/ssl/bucket, readOnly: true}
sidecars:
  - name: log-shipper
    image: fluent/fluent-bit:3.1.9
podTemplate:
  spec:
    containers:
      - name: pytorch
        env:
          - {name: NCCL_DEBUG, value: WARN}
          - {name: EXTRA, value: "1"}
    tolerations:
      - {key: example.com/spot, operator: Exists, effect: NoSchedule}
replicaPodTemplates:
  Master:
    metadata:
      annotations: {example.com/role: leader}
    spec:
      containers:
        - name: pytorch
          resources: {requests: {cpu: "8"}}
"""


def _job(root: Path, extra: str) -> Path:
    path = root / "jobs" / "resnet50-ddp.yaml"
    text = path.read_text()
    path.write_text(text.replace("targets:\n", extra + "targets:\n", 1))
    return path


def _allow_hatch(root: Path) -> None:
    """The profiles let jobs use what HATCH asks for (`jobAccess`, the pod fence: an account,
    a priority class, a Secret volume, registry credentials and a toleration are the platform
    team's to grant)."""
    for path in sorted((root / "clusters").glob("*.yaml")):
        profile = yaml.safe_load(path.read_text())
        access = profile.setdefault("jobAccess", {})
        access["serviceAccounts"] = [{"name": "trainer"}]
        access["priorityClasses"] = ["training-high"]
        access["secretVolumes"] = ["bucket-ca"]
        access["imagePullSecrets"] = ["regcred"]
        access["tolerations"] = [
            {"key": "example.com/spot", "operator": "Exists", "effect": "NoSchedule"}
        ]
        path.write_text(yaml.safe_dump(profile))


def _pytorchjob(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == "PyTorchJob" and o["metadata"]["name"] == name)


def _without_trainer_v2(path: Path) -> None:
    """The job on its Training Operator clusters only: HATCH asks what a Trainer v2 TrainJob
    cannot carry (a priority class, a sidecar, a Master of its own), refused there at load
    (tests/jobspec/test_trainer_v2_hatch.py)."""
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(x for x in lines if not x.startswith("  - cluster: onprem-h200")))


def test_first_class_fields_and_overrides_reach_the_built_overlay(scratch: Path) -> None:
    require_kustomize()
    _without_trainer_v2(_job(scratch, HATCH))
    _allow_hatch(scratch)
    render(scratch)
    for cluster in ("cloud-h100", "onprem-a100"):
        job = _pytorchjob(build_overlay(scratch, cluster), "resnet50-ddp")
        specs = job["spec"]["pytorchReplicaSpecs"]
        for rtype in ("Master", "Worker"):
            template = specs[rtype]["template"]
            pod = template["spec"]
            assert pod["imagePullSecrets"] == [{"name": "regcred"}]
            assert pod["serviceAccountName"] == "trainer"
            assert pod["priorityClassName"] == "training-high"
            assert "podAntiAffinity" in pod["affinity"]
            assert template["metadata"]["labels"]["team"] == "vision"
            assert template["metadata"]["annotations"]["example.com/owner"] == "vision-team"
            # Our own annotation stays: the hatch adds, it does not take away.
            assert template["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
            assert {"name": "certs", "secret": {"secretName": "bucket-ca"}} in pod["volumes"]
            (training,) = [c for c in pod["containers"] if c["name"] == "pytorch"]
            assert len(pod["containers"]) == 1, "a sidecar is not a regular container"
            assert {
                "name": "certs", "mountPath": "/etc/ssl/bucket", "readOnly": True
            } in training["volumeMounts"]  # fmt: skip
            names = [e["name"] for e in training["env"]]
            assert len(names) == len(set(names)), "env merges by name: one entry per variable"
            env = {e["name"]: e.get("value") for e in training["env"]}
            assert env["NCCL_DEBUG"] == "WARN"  # the hatch wins over the job's env
            assert env["EXTRA"] == "1"
            assert env["NCCL_SOCKET_IFNAME"]  # the cluster's NCCL env is still there
            sidecar = next(c for c in pod["initContainers"] if c["name"] == "log-shipper")
            assert sidecar["restartPolicy"] == "Always"
            # The data-sync init container runs before the sidecar starts.
            assert [c["name"] for c in pod["initContainers"]] == ["data-sync", "log-shipper"]
            # Lists without a merge key are appended to: the GPU product's tolerations stay.
            keys = [t["key"] for t in pod["tolerations"]]
            assert keys == ["nvidia.com/gpu", "example.com/spot"]
        master = specs["Master"]["template"]
        worker = specs["Worker"]["template"]
        assert master["metadata"]["annotations"]["example.com/role"] == "leader"
        assert "example.com/role" not in worker["metadata"]["annotations"]
        master_cpu = master["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        worker_cpu = worker["spec"]["containers"][0]["resources"]["requests"]["cpu"]
        assert (master_cpu, worker_cpu) == ("8", "6")


def test_merge_keys_come_from_the_core_schema() -> None:
    ours = {
        "spec": {
            "containers": [{"name": "a", "command": ["x", "y"], "ports": [{"containerPort": 1}]}],
            "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}],
        }
    }
    theirs = {
        "spec": {
            "containers": [
                {"name": "a", "command": ["z"], "ports": [{"containerPort": 1, "name": "p"}]},
                {"name": "b", "image": "i"},
            ],
            "volumes": [{"name": "v", "emptyDir": {}}],
        }
    }
    merged = merge(ours, theirs)
    a, b = merged["spec"]["containers"]
    assert a["command"] == ["z"], "an argv is replaced, not appended to"
    assert a["ports"] == [{"containerPort": 1, "name": "p"}], "ports merge by containerPort"
    assert b == {"name": "b", "image": "i"}
    # A volume of the same name replaces its source (retainKeys): no PVC and emptyDir at once.
    assert merged["spec"]["volumes"] == [{"name": "v", "emptyDir": {}}]
    assert ours["spec"]["containers"][0]["command"] == ["x", "y"], "inputs are not changed"


def _fails(root: Path) -> str:
    before = tree(root)
    result = trainops(root, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert tree(root) == before
    return result.stderr


def test_pod_template_is_checked_against_the_core_schema_with_file_and_line(
    scratch: Path,
) -> None:
    path = _job(
        scratch,
        "podTemplate:\n  spec:\n    containers:\n      - name: pytorch\n"
        "        imagePullPolcy: Always\n    hostPID: maybe\n",
    )
    err = _fails(scratch)
    assert (
        f"jobs/resnet50-ddp.yaml:{line_of(path, 'imagePullPolcy')}:9: unknown key `imagePullPolcy`"
        in err
    )
    assert "did you mean `imagePullPolicy`?" in err
    assert f"jobs/resnet50-ddp.yaml:{line_of(path, 'hostPID')}:" in err
    assert "podTemplate.spec.hostPID` must be of type" in err


def test_first_class_fields_are_checked_too(scratch: Path) -> None:
    path = _job(
        scratch,
        "extraVolumeMounts:\n  - {name: nowhere, mountPath: /x}\n"
        "podLabels: {'bad key!': x}\n"
        "replicaPodTemplates:\n  Chief: {spec: {}}\n",
    )
    err = _fails(scratch)
    assert f":{line_of(path, 'nowhere')}:" in err
    assert "no volume `nowhere` in `extraVolumes` or `volumes`" in err
    assert "label key `bad key!` is not a Kubernetes label key" in err
    assert "this job renders no `Chief` replicas (it has: Master, Worker)" in err


def test_affinity_is_a_core_affinity(scratch: Path) -> None:
    path = _job(
        scratch,
        "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {}}}\n",
    )
    err = _fails(scratch)
    assert f"jobs/resnet50-ddp.yaml:{line_of(path, 'affinity:')}:" in err
    assert "missing required key `nodeSelectorTerms`" in err


def test_sidecars_need_native_sidecar_support_on_every_target(scratch: Path) -> None:
    cluster = scratch / "clusters" / "cloud-h100.yaml"
    cluster.write_text(
        cluster.read_text().replace('kubernetesVersion: "1.31"', 'kubernetesVersion: "1.28"')
    )
    _job(scratch, "sidecars:\n  - {name: helper, image: busybox:1.36}\n")
    err = _fails(scratch)
    assert "cluster `cloud-h100` runs Kubernetes 1.28: native sidecars need 1.29" in err


def test_an_override_of_the_mpi_launcher_argv_wins(scratch: Path) -> None:
    """The generated mpirun argv is what trainops renders; the hatch is merged after it, so a
    Launcher that must run another launcher (`horovodrun`) can say so."""
    require_kustomize()
    path = scratch / "jobs" / "horovod-training.yaml"
    argv = "[-np, '32', --host-discovery-script, /etc/mpi/discover_hosts.sh, python, t.py]"
    path.write_text(
        path.read_text().replace(
            "targets:\n",
            "replicaPodTemplates:\n  Launcher:\n    spec:\n      containers:\n"
            f"        - {{name: mpi-launcher, command: [horovodrun], args: {argv}}}\n"
            "targets:\n",
            1,
        )
    )
    render(scratch)
    for cluster in ("cloud-h100", "onprem-a100"):
        job = next(o for o in build_overlay(scratch, cluster) if o["kind"] == "MPIJob")
        specs = job["spec"]["mpiReplicaSpecs"]
        (launcher,) = specs["Launcher"]["template"]["spec"]["containers"]
        assert launcher["command"] == ["horovodrun"]
        assert launcher["args"][:2] == ["-np", "32"] and launcher["args"][-1] == "t.py"
        assert "-x" not in launcher["args"], "the generated argv is replaced, not merged"
