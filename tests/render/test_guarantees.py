"""README "What the renderer guarantees", checked on what the real kustomize builds.

Each test states one documented rule and checks it on every object that
`kustomize build overlays/<cluster>` prints, for the shipped repository and for the rich
fixture (`tests/golden/rich`, every spec feature at least once), rendered by the CLI as a
user runs it. Expectations come from the job and cluster specs, read here as plain YAML, and
from the rule as the docs state it — never from trainops' model or constants. The kustomize
invariant test (`test_kustomize_invariant.py`) compares kustomize with the model that wrote
the patches, so whatever the model drops, both drop; these tests catch that.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.render.guarantees import (
    ARGOCD_SYNC_OPTIONS,
    FLUX_PRUNE,
    KIND_OF,
    KUEUE_QUEUE_LABEL,
    PAIRS,
    SYNC_WAVE,
    Build,
    annotations,
    build,
    data_pods,
    env_by_name,
    load_build,
    pod_templates,
    pods_on,
    target,
)
from tests.render.repos import RICH, read_yaml, render
from tests.tools import copy_inputs, require_kustomize

__all__ = ["build"]  # the module-scoped fixture, shared with test_guarantees_kinds.py

# ----------------------------------------------------------------------------- the fixtures


def test_the_fixtures_exercise_every_guarantee(build: Any) -> None:
    """Without these, a guarantee below would pass by having nothing to check."""
    seen: set[str] = set()
    for label, cluster in PAIRS:
        b = build(label, cluster)
        seen.add(f"scheduler:{b.scheduler['name']}")
        seen |= {f"kind:{o['kind']}" for o in b.objects}
        for _, spec in b.training_jobs():
            run_policy = spec.get("runPolicy", {})
            seen |= {
                name
                for name, present in {
                    "elastic": "elastic" in spec,
                    "fixed": "elastic" not in spec,
                    "dataSync": "dataSync" in spec,
                    "dataset-without-sync": "dataset" in spec.get("volumes", {})
                    and "dataSync" not in spec,
                    "secretEnv": bool(spec.get("secretEnv")),
                    "dataSync.secretEnv": bool(spec.get("dataSync", {}).get("secretEnv")),
                    "hostNetwork": bool(spec.get("hostNetwork")),
                    "deepspeed": "deepspeed" in spec,
                    "default-cleanPodPolicy": "cleanPodPolicy" not in run_policy,
                    "ttl": "ttlSecondsAfterFinished" in run_policy,
                    "target-replicas": "replicas" in target(spec, cluster),
                }.items()
                if present
            }
    wanted = {
        "scheduler:kueue",
        "scheduler:volcano",
        "scheduler:default",
        "kind:PersistentVolumeClaim",
        "kind:ConfigMap",
        "elastic",
        "fixed",
        "dataSync",
        "dataset-without-sync",
        "secretEnv",
        "dataSync.secretEnv",
        "hostNetwork",
        "deepspeed",
        "default-cleanPodPolicy",
        "ttl",
        "target-replicas",
    }
    assert wanted <= seen, wanted - seen


# ----------------------------------------------------------------------------- shape


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_replica_shape(build: Any, label: str, cluster: str) -> None:
    """Fixed-size: one Master and `replicas - 1` Workers. Elastic: Workers only, with an
    elasticPolicy (c10d rendezvous, the spec's min/max replicas and max restarts)."""
    b = build(label, cluster)
    for job, spec in b.training_jobs():
        pods = pods_on(spec, cluster)
        replicas = {rtype: n for rtype, n, _ in pod_templates(job)}
        assert job["kind"] == KIND_OF[spec["framework"]]
        if spec["framework"] != "pytorch":
            continue  # test_tfjob_roles, test_mpijob_launcher_and_workers
        if "elastic" in spec:
            assert replicas == {"Worker": pods}
            elastic = spec["elastic"]
            assert job["spec"]["elasticPolicy"] == {
                "rdzvBackend": "c10d",
                "minReplicas": elastic["minReplicas"],
                "maxReplicas": elastic["maxReplicas"],
                # The schema's documented default (trainingjob.schema.json).
                "maxRestarts": elastic.get("maxRestarts", 3),
            }
        else:
            assert replicas == ({"Master": 1, "Worker": pods - 1} if pods > 1 else {"Master": 1})
            assert "elasticPolicy" not in job["spec"]


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_elastic_jobs_survive_a_lost_pod(build: Any, label: str, cluster: str) -> None:
    """Every elastic job's training container has TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1 (torch
    2.13 dynamic_rendezvous.py: with the agent's store shared, a replacement pod waits for keys
    the surviving rank 0 never writes again), unless the spec sets the variable itself; a
    fixed-size job does not get it."""
    b = build(label, cluster)
    for job, spec in b.training_jobs():
        for _, _, template in pod_templates(job):
            (container, *_) = template["spec"]["containers"]
            env = env_by_name(container)
            own = {**spec.get("env", {}), **_target_env(spec, cluster)}
            if "TORCH_DISABLE_SHARE_RDZV_TCP_STORE" in own:
                expected = str(own["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"])
            elif "elastic" in spec and spec["framework"] == "pytorch":
                expected = "1"
            else:
                assert "TORCH_DISABLE_SHARE_RDZV_TCP_STORE" not in env
                continue
            assert env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"]["value"] == expected


def _target_env(spec: dict[str, Any], cluster: str) -> dict[str, Any]:
    target = next((t for t in spec.get("targets", []) if t.get("cluster") == cluster), {})
    return dict(target.get("env", {}))


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_torchrun_reads_the_operator_env_not_flags(build: Any, label: str, cluster: str) -> None:
    """`nprocPerNode` is the GPUs per replica (one process on a CPU-only pod); torchrun gets
    no launcher flags, because PET_NNODES / PET_NPROC_PER_NODE / PET_RDZV_* come from the
    operator and an explicit `--nnodes` would turn an elastic job fixed-size."""
    b = build(label, cluster)
    launcher_flags = ("--nnodes", "--nproc", "--rdzv", "--master", "--node", "--standalone")
    for job, spec in b.training_jobs():
        if spec["framework"] != "pytorch":
            continue
        assert job["spec"]["nprocPerNode"] == str(max(spec["gpusPerReplica"], 1))
        for _, _, template in pod_templates(job):
            (container,) = template["spec"]["containers"]
            if "command" not in spec:
                # No program: the image's ENTRYPOINT runs with the args, no torchrun around it.
                assert "command" not in container
                continue
            assert container["command"][0] == "torchrun"
            # `python -m pkg` becomes `torchrun -m pkg`, `python x.py` becomes `torchrun x.py`.
            assert container["command"][1:] == spec["command"][1:]
            args = container.get("args", [])
            assert not [a for a in args if a.startswith(launcher_flags)]


# ----------------------------------------------------------------------------- ordering, pruning


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_claims_and_configmaps_sync_before_jobs(build: Any, label: str, cluster: str) -> None:
    """PVCs and the DeepSpeed ConfigMap carry sync-wave "-1" (docs/gitops.md trap 4: they
    must exist before the job that mounts them); jobs stay in wave 0."""
    b = build(label, cluster)
    mounted = [  # the Grafana dashboard ConfigMap is mounted by no job: it needs no wave
        obj
        for obj in b.of_kind("ConfigMap")
        if "grafana_dashboard" not in (obj["metadata"].get("labels") or {})
    ]
    for obj in b.of_kind("PersistentVolumeClaim") + mounted:
        assert annotations(obj).get(SYNC_WAVE) == "-1", obj["metadata"]["name"]
    for job, _ in b.training_jobs():
        assert int(annotations(job).get(SYNC_WAVE, "0")) == 0


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_claims_are_never_pruned(build: Any, label: str, cluster: str) -> None:
    """Checkpoints outlive the job: Argo CD `Prune=false` and Flux `prune: disabled` on every
    PVC, so removing a job from Git (or renaming it) never deletes its data."""
    b = build(label, cluster)
    for pvc in b.of_kind("PersistentVolumeClaim"):
        meta = annotations(pvc)
        assert "Prune=false" in meta.get(ARGOCD_SYNC_OPTIONS, "").split(","), meta
        assert meta.get(FLUX_PRUNE) == "disabled", meta


# ----------------------------------------------------------------------------- schedulers


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_kueue_gets_only_the_queue_label_and_never_suspend(
    build: Any, label: str, cluster: str
) -> None:
    """Kueue: the `kueue.x-k8s.io/queue-name` label naming the profile's LocalQueue, nothing
    else of Kueue's; `runPolicy.suspend` is never set from Git on any cluster (Kueue flips it
    on admission; a GitOps sync writing it back would stop a running job)."""
    b = build(label, cluster)
    for job, _ in b.training_jobs():
        assert "suspend" not in job["spec"]["runPolicy"]
        kueue_keys = {
            k
            for k in {**job["metadata"].get("labels", {}), **annotations(job)}
            if k.startswith("kueue.x-k8s.io/")
        }
        if b.scheduler["name"] == "kueue":
            assert kueue_keys == {KUEUE_QUEUE_LABEL}
            assert job["metadata"]["labels"][KUEUE_QUEUE_LABEL] == b.scheduler["queue"]
        else:
            assert kueue_keys == set()


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_volcano_gangs_every_pod(build: Any, label: str, cluster: str) -> None:
    """Volcano: `schedulerName: volcano` on every replica template and
    `runPolicy.schedulingPolicy.minAvailable` = all pods of a fixed-size job (gang
    scheduling: none start until all fit), the elastic minimum of an elastic one (Workers
    at `elasticPolicy.minReplicas`: the Training Operator v1.9.4 makes it the PodGroup's
    minMember, and torchrun starts there), in the profile's queue and priority class."""
    b = build(label, cluster)
    for job, _ in b.training_jobs():
        templates = pod_templates(job)
        policy = job["spec"]["runPolicy"].get("schedulingPolicy")
        if b.scheduler["name"] == "volcano":
            assert [t["spec"].get("schedulerName") for _, _, t in templates] == ["volcano"] * len(
                templates
            )
            assert policy is not None
            low = (job["spec"].get("elasticPolicy") or {}).get("minReplicas")
            assert policy["minAvailable"] == sum(
                min(n, low) if low is not None and rtype == "Worker" else n
                for rtype, n, _ in templates
            )
            assert policy.get("queue") == b.scheduler.get("queue")
            assert policy.get("priorityClass") == b.scheduler.get("priorityClass")
        else:
            assert [
                t["spec"].get("schedulerName")
                for _, _, t in templates
                if t["spec"].get("schedulerName")
            ] == []
            assert policy is None


# ----------------------------------------------------------------------------- data and secrets


def _mounts(container: dict[str, Any], volume: str) -> list[dict[str, Any]]:
    return [m for m in container.get("volumeMounts", []) if m["name"] == volume]


def check_data_sync(b: Build) -> int:
    """The dataSync rule on one build; returns how many pod templates it checked.

    dataSync: an init container in every pod (every replica type), the only container that
    mounts the synced volume writable; training containers mount it read-only (unless the
    spec says `readOnly: false` for that volume). Without dataSync, a volume named `dataset`
    is read-only everywhere (the schema's documented default)."""
    checked = 0
    for job, spec in b.training_jobs():
        sync = spec.get("dataSync")
        volume = sync["volume"] if sync else "dataset"
        if volume not in spec.get("volumes", {}):
            continue
        declared = spec["volumes"][volume]
        training_read_only = declared.get("readOnly", True)
        for rtype, _, template in data_pods(job):
            checked += 1
            where = (job["metadata"]["name"], rtype)
            pod = template["spec"]
            inits = pod.get("initContainers", [])
            syncers = [
                c
                for c in inits
                if sync and c["image"] == sync["image"] and c["command"] == sync["command"]
            ]
            assert len(syncers) == (1 if sync else 0), where
            for c in syncers:
                mounts = [(m["mountPath"], m.get("readOnly", False)) for m in _mounts(c, volume)]
                assert mounts == [(declared["mountPath"], False)], where
            for c in [*pod["containers"], *[c for c in inits if c not in syncers]]:
                for m in _mounts(c, volume):
                    assert m.get("readOnly", False) is training_read_only, (*where, c["name"])
    return checked


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_data_sync_is_the_only_writable_dataset_mount(build: Any, label: str, cluster: str) -> None:
    check_data_sync(build(label, cluster))


def test_data_sync_into_a_volume_not_named_dataset(tmp_path: Path) -> None:
    """The synced volume is read-only for training whatever its name (found by this suite:
    only a volume named `dataset` was, so syncing into `corpus` left it writable)."""
    require_kustomize()
    root = copy_inputs(RICH, tmp_path / "rich")
    path = root / "jobs" / "elastic-ds.yaml"
    spec = read_yaml(path)
    spec["volumes"]["corpus"] = spec["volumes"].pop("dataset")
    spec["dataSync"]["volume"] = "corpus"
    path.write_text(yaml.safe_dump(spec))
    render(root)
    for cluster in [t["cluster"] for t in spec["targets"]]:
        assert check_data_sync(load_build(root, cluster)) > 0


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_secrets_only_by_secret_key_ref(build: Any, label: str, cluster: str) -> None:
    """A secret never reaches Git: no Secret objects, no secretGenerator, no envFrom; each
    `secretEnv` entry (the job's, and dataSync's in its init container) is a `secretKeyRef`
    to the named Secret and key, with no literal value."""
    b = build(label, cluster)
    assert b.of_kind("Secret") == []
    for path in [
        *(b.root / "base").rglob("kustomization.yaml"),
        *(b.root / "overlays").rglob("kustomization.yaml"),
    ]:
        assert "secretGenerator" not in yaml.safe_load(path.read_text())
    for job, spec in b.training_jobs():
        for _, _, template in pod_templates(job):
            pod = template["spec"]
            containers = [*pod["containers"], *pod.get("initContainers", [])]
            assert [c["name"] for c in containers if "envFrom" in c] == []
            wanted = [(pod["containers"][0], spec.get("secretEnv", {}))]
            if "dataSync" in spec and "initContainers" in pod:
                (syncer,) = [
                    c for c in pod["initContainers"] if c["image"] == spec["dataSync"]["image"]
                ]
                wanted.append((syncer, spec["dataSync"].get("secretEnv", {})))
            for container, secrets in wanted:
                env = env_by_name(container)
                for name, ref in secrets.items():
                    assert env[name] == {
                        "name": name,
                        "valueFrom": {"secretKeyRef": {"name": ref["secret"], "key": ref["key"]}},
                    }


# ----------------------------------------------------------------------------- clean-up


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_clean_pod_policy_defaults_to_all(build: Any, label: str, cluster: str) -> None:
    """`cleanPodPolicy: All` unless the spec says otherwise: the pods (and GPUs) go, the job
    object stays as the record (docs/gitops.md trap 1)."""
    b = build(label, cluster)
    for job, spec in b.training_jobs():
        wanted = spec.get("runPolicy", {}).get("cleanPodPolicy", "All")
        assert job["spec"]["runPolicy"]["cleanPodPolicy"] == wanted


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_no_ttl_unless_asked(build: Any, label: str, cluster: str) -> None:
    """No `ttlSecondsAfterFinished` unless the spec asks: a TTL-deleted job is re-created,
    and re-trained, by a GitOps controller (argo-cd#8586)."""
    b = build(label, cluster)
    for job, spec in b.training_jobs():
        wanted = spec.get("runPolicy", {}).get("ttlSecondsAfterFinished")
        assert job["spec"]["runPolicy"].get("ttlSecondsAfterFinished") == wanted


# ----------------------------------------------------------------------------- networking


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_host_network_pods_keep_cluster_dns(build: Any, label: str, cluster: str) -> None:
    """`hostNetwork: true` only where the spec asks, and always with
    `dnsPolicy: ClusterFirstWithHostNet`: with the default policy a host-network pod resolves
    through the node's DNS and cannot find the master's Service name, so rendezvous hangs
    (https://kubernetes.io/docs/concepts/services-networking/dns-pod-service/#pod-s-dns-policy)."""
    b = build(label, cluster)
    for job, spec in b.training_jobs():
        for _, _, template in pod_templates(job):
            pod = template["spec"]
            assert pod.get("hostNetwork", False) is bool(spec.get("hostNetwork", False))
            if pod.get("hostNetwork"):
                assert pod.get("dnsPolicy") == "ClusterFirstWithHostNet"


# ----------------------------------------------------------------------------- DeepSpeed


@pytest.mark.parametrize(("label", "cluster"), PAIRS)
def test_deepspeed_config_reaches_the_job(build: Any, label: str, cluster: str) -> None:
    """The DeepSpeed config is a generated ConfigMap whose hashed name reaches every pod
    template, mounted at /etc/deepspeed/ds_config.json and passed with the job's
    `configFlag`; an elastic job's config never pins `train_batch_size`."""
    b = build(label, cluster)
    configmaps = {o["metadata"]["name"]: o for o in b.of_kind("ConfigMap")}
    for job, spec in b.training_jobs():
        ds = spec.get("deepspeed")
        name = job["metadata"]["name"]
        mine = [n for n in configmaps if n.startswith(f"{name}-deepspeed-")]
        if ds is None:
            assert mine == []
            continue
        (cm_name,) = mine  # kustomize's content-hash suffix is on the name
        config = json.loads(configmaps[cm_name]["data"]["ds_config.json"])
        if "elastic" in spec:
            assert "train_batch_size" not in config
        if "microBatchPerGpu" in ds:
            assert config["train_micro_batch_size_per_gpu"] == ds["microBatchPerGpu"]
        flag = ds.get("configFlag", "--deepspeed-config")
        for _, _, template in pod_templates(job):
            pod = template["spec"]
            volumes = [
                v["name"] for v in pod["volumes"] if v.get("configMap", {}).get("name") == cm_name
            ]
            assert len(volumes) == 1
            (container,) = pod["containers"]
            mounts = [m["mountPath"] for m in container["volumeMounts"] if m["name"] == volumes[0]]
            assert mounts == ["/etc/deepspeed"]
            args = container["args"]
            assert args[args.index(flag) + 1] == "/etc/deepspeed/ds_config.json"
