"""Rule behaviour beyond one pass and one fail fixture: the cases a fixture pair cannot show."""

from __future__ import annotations

import pytest

from tests.rules.conftest import make_cluster
from tests.rules.helpers import FIXTURES, manifests_from_file, manifests_from_text, run
from trainops.core.findings import Finding, Severity
from trainops.facts.kubeflow import default_restart_policy
from trainops.jobspec.model import Network
from trainops.rules.checks.env import says_secret


def _of(findings: list[Finding], rule: str) -> list[Finding]:
    return [f for f in findings if f.rule == rule]


# --- rdma-incomplete / network-mismatch: where NCCL settings take effect ----------------------

MPIJOB_PASS = (FIXTURES / "rdma-incomplete" / "pass-mpijob.yaml").read_text()
# RDMA through a privileged container on the host network (a bare-metal RoCE recipe, as in a
# public RCCL-test MPIJob): the runtime gives a privileged container every device node of the
# host, /dev/infiniband included, and hostNetwork the RDMA interfaces; no device plugin
# resource. Not a pass fixture: `privileged` is an error of its own, which no manifest waives.
PRIVILEGED_ROCE = """apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: collectives
  namespace: ml-train
spec:
  slotsPerWorker: 8
  runPolicy: {cleanPodPolicy: All}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
            - name: launcher
              image: registry.example/collectives:2.1
              command: [mpirun, --allow-run-as-root, -np, "16", -x, "NCCL_IB_HCA==mlx5_0,mlx5_1",
                        /opt/tests/all_reduce_perf, -b, 1G, -e, 4G]
              resources: {limits: {cpu: "1", memory: 2Gi}}
    Worker:
      replicas: 2
      template:
        spec:
          hostNetwork: true
          dnsPolicy: ClusterFirstWithHostNet
          containers:
            - name: worker
              image: registry.example/collectives:2.1
              securityContext: {privileged: true}
              resources:
                limits: {amd.com/gpu: 8, cpu: "64", memory: 512Gi}
              volumeMounts: [{name: dshm, mountPath: /dev/shm}]
          volumes: [{name: dshm, emptyDir: {medium: Memory, sizeLimit: 64Gi}}]
"""


def test_mpirun_exports_apply_to_the_launcher_when_it_runs_ranks() -> None:
    text = MPIJOB_PASS.replace(
        "  slotsPerWorker: 8\n", "  slotsPerWorker: 8\n  runLauncherAsWorker: true\n"
    )
    found = _of(run(manifests_from_text(text)), "rdma-incomplete")
    assert [(f.severity, f.message.split(" ")[0]) for f in found] == [("warning", "Launcher")]
    assert "exported by mpirun in Launcher" in found[0].message


def test_a_privileged_rank_container_has_the_rdma_devices() -> None:
    assert not _of(run(manifests_from_text(PRIVILEGED_ROCE)), "rdma-incomplete")
    unprivileged = PRIVILEGED_ROCE.replace("securityContext: {privileged: true}", "")
    [found] = _of(run(manifests_from_text(unprivileged)), "rdma-incomplete")
    assert "requests no RDMA device" in found.message


def test_launcher_env_reaches_the_ranks_with_intel_mpi_only() -> None:
    text = MPIJOB_PASS.replace(
        "-x, NCCL_IB_DISABLE=0,\n                        -x, NCCL_IB_HCA=mlx5, ", ""
    ).replace(
        '              resources: {limits: {cpu: "1", memory: 2Gi}}',
        "              env: [{name: NCCL_NET, value: IB}]\n"
        '              resources: {limits: {cpu: "1", memory: 2Gi}}',
    )
    text = text.replace("rdma/rdma_shared_device_a: 1", "ephemeral-storage: 1Gi")
    # Open MPI: the Launcher's env stays in the Launcher, which runs no NCCL.
    assert not _of(run(manifests_from_text(text)), "rdma-incomplete")
    # Intel MPI's Hydra passes the launcher's environment to every rank.
    intel = text.replace(
        "  slotsPerWorker: 8\n", "  slotsPerWorker: 8\n  mpiImplementation: Intel\n"
    )
    found = _of(run(manifests_from_text(intel)), "rdma-incomplete")
    assert [(f.severity, f.message.split(" ")[0]) for f in found] == [("error", "Worker")]
    assert "passed on from Launcher's env" in found[0].message


def test_ib_on_a_tcp_cluster_is_an_error_only_when_forced() -> None:
    tcp = make_cluster(network=Network(transport="tcp", socket_interface="eth0"))
    allowed = run(manifests_from_file(FIXTURES / "rdma-incomplete" / "fail-ib-default.yaml"), tcp)
    forced = run(manifests_from_file(FIXTURES / "rdma-incomplete" / "fail.yaml"), tcp)
    assert [f.severity for f in _of(allowed, "network-mismatch")] == [Severity.WARNING]
    assert [f.severity for f in _of(forced, "network-mismatch")] == [Severity.ERROR]


# --- restart-policy-unsafe: the policy the operator defaults to ------------------------------


@pytest.mark.parametrize(
    ("api_version", "kind", "rtype", "expected"),
    [
        ("kubeflow.org/v1", "PyTorchJob", "Worker", "OnFailure"),
        ("kubeflow.org/v1", "PaddleJob", "Worker", "OnFailure"),
        ("kubeflow.org/v1", "TFJob", "Worker", "Never"),
        ("kubeflow.org/v1", "XGBoostJob", "Worker", "Never"),
        ("kubeflow.org/v1", "JAXJob", "Worker", "Never"),
        ("kubeflow.org/v1", "MPIJob", "Launcher", "Never"),
        ("kubeflow.org/v2beta1", "MPIJob", "Launcher", "OnFailure"),
        ("kubeflow.org/v2beta1", "MPIJob", "Worker", "Never"),
    ],
)
def test_operator_default_restart_policy(
    api_version: str, kind: str, rtype: str, expected: str
) -> None:
    assert default_restart_policy(api_version, kind, rtype) == expected


def test_defaulted_policy_is_reported_as_the_default() -> None:
    path = FIXTURES / "restart-policy-unsafe" / "fail-tfjob-default.yaml"
    found = _of(run(manifests_from_file(path)), "restart-policy-unsafe")
    assert [f.message.split(" on the")[0] for f in found] == [
        "Worker: restartPolicy Never (the TFJob default when unset)"
    ]
    assert found[0].line == 12  # the replica spec that leaves it unset
    explicit = path.read_text().replace(
        "      replicas: 2\n", "      replicas: 2\n      restartPolicy: OnFailure\n"
    )
    assert not _of(run(manifests_from_text(explicit)), "restart-policy-unsafe")


# --- write-to-read-only: writes into read-only mounts ---------------------------------------

WRITER_JOB = """\
apiVersion: batch/v1
kind: Job
metadata: {name: prep, namespace: ml-train}
spec:
  template:
    spec:
      restartPolicy: OnFailure
      containers:
        - name: prep
          image: registry.example/prep:1.0
          workingDir: /work
          command: [sh, -c, "SCRIPT"]
          volumeMounts:
            - {name: config, mountPath: /etc/train}
            - {name: work, mountPath: /work}
            - {name: work, mountPath: /work/out, subPath: out}
      volumes:
        - {name: config, configMap: {name: train-config}}
        - {name: work, emptyDir: {}}
"""


@pytest.mark.parametrize(
    ("script", "written"),
    [
        ("cp defaults.json /etc/train/config.json", "/etc/train/config.json"),
        ("cd /tmp && wget -O etc/train/x.json https://example.com/x", None),  # under /tmp
        ("cd / && wget -O etc/train/x.json https://example.com/x", "/etc/train/x.json"),
        ("tar -xzf /tmp/cfg.tgz -C /etc/train", "/etc/train"),
        ("echo '{}' > /etc/train/override.json", "/etc/train/override.json"),
        ("curl -o out/model.bin https://example.com/m", None),  # /work/out: writable
        ("cat /etc/train/config.json", None),  # reads only
    ],
)
def test_writes_into_a_configmap_mount(script: str, written: str | None) -> None:
    found = _of(
        run(manifests_from_text(WRITER_JOB.replace("SCRIPT", script))), "write-to-read-only"
    )
    if written is None:
        assert not found
    else:
        assert [f.severity for f in found] == [Severity.ERROR]
        assert f"writes to {written} " in found[0].message
        assert "configMap volume" in found[0].message


def test_relative_writes_resolve_against_the_working_directory() -> None:
    text = WRITER_JOB.replace("SCRIPT", "wget -P sub https://example.com/x").replace(
        "workingDir: /work", "workingDir: /etc/train"
    )
    found = _of(run(manifests_from_text(text)), "write-to-read-only")
    assert [f.message.split(" (")[0] for f in found] == [
        "container `prep` writes to /etc/train/sub"
    ]
    unknown = text.replace("          workingDir: /etc/train\n", "")
    assert not _of(run(manifests_from_text(unknown)), "write-to-read-only")


# --- metrics-port-mismatch: PodMonitor -------------------------------------------------------

PODMONITOR_FAIL = (FIXTURES / "metrics-port-mismatch" / "fail-podmonitor.yaml").read_text()


def _podmonitor(text: str) -> list[Finding]:
    return _of(run(manifests_from_text(text)), "metrics-port-mismatch")


def test_podmonitor_outside_the_pods_namespace_needs_a_namespace_selector() -> None:
    assert len(_podmonitor(PODMONITOR_FAIL)) == 1
    elsewhere = PODMONITOR_FAIL.replace(
        "{name: demo, namespace: ml-train}\nspec:\n  selector:",
        "{name: demo, namespace: monitoring}\nspec:\n  selector:",
    )
    assert elsewhere != PODMONITOR_FAIL
    assert not _podmonitor(elsewhere)  # looks in `monitoring`: selects none of our pods
    for namespaces in ("{matchNames: [ml-train]}", "{any: true}"):
        selected = elsewhere.replace(
            "  selector:\n    matchLabels:",
            f"  namespaceSelector: {namespaces}\n  selector:\n    matchLabels:",
        )
        assert selected.count("namespaceSelector") == 1
        assert len(_podmonitor(selected)) == 1, namespaces


def test_podmonitor_selects_by_operator_labels_only_where_they_match() -> None:
    chief = PODMONITOR_FAIL.replace("replica-type: worker", "replica-type: master")
    assert not _podmonitor(chief)  # the job has no Master: nothing selected, nothing to judge


@pytest.mark.parametrize(
    ("endpoint", "bad"),
    [
        ("{portNumber: 9090}", None),
        ("{portNumber: 8080}", "portNumber `8080`"),
        ("{targetPort: metrics}", None),
        ("{targetPort: 9091}", "targetPort `9091`"),
        ("{port: metrics, portNumber: 8080}", None),  # port takes precedence
    ],
)
def test_podmonitor_port_numbers(endpoint: str, bad: str | None) -> None:
    text = PODMONITOR_FAIL.replace("{port: metrics-typo, interval: 30s}", endpoint)
    found = _podmonitor(text)
    if bad is None:
        assert not found
    else:
        assert len(found) == 1 and bad in found[0].message


# --- secret-in-plain-env: a path to a secret is not a secret ----------------------------------


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("HF_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("WANDB_API_KEY", True),
        ("DB_PASSWORD", True),
        ("TOKEN_FILE_CONTENT", True),  # the last word decides: content, not a location
        ("PASSWORD_FILE", False),
        ("HF_TOKEN_PATH", False),
        ("SECRETS_DIR", False),
        ("AWS_SHARED_CREDENTIALS_FILE", False),
        ("GOOGLE_APPLICATION_CREDENTIALS", False),
        ("TOKENIZERS_PARALLELISM", False),
    ],
)
def test_says_secret(name: str, secret: bool) -> None:
    assert says_secret(name) is secret


# --- deepspeed-batch-mismatch: where the config file comes from -------------------------------

DS_FAIL = (FIXTURES / "deepspeed-batch-mismatch" / "fail.yaml").read_text()
DS_MOUNT = "                - {name: ds, mountPath: /config}\n"
DS_VOLUME = "              configMap: {name: ds-config}\n"
DS_CONFIGMAP = "  ds.json: '"


@pytest.mark.parametrize(
    ("mount", "volume", "key", "expected"),
    [
        (
            DS_MOUNT,
            DS_VOLUME,
            "ds.json",
            "ConfigMap `ds-config` key `ds.json`: at world size 4 DeepSpeed asserts",
        ),
        (
            "                - {name: ds, mountPath: /config/ds.json, subPath: ds.json}\n",
            DS_VOLUME,
            "ds.json",
            "ConfigMap `ds-config` key `ds.json`: at world size 4 DeepSpeed asserts",
        ),
        (
            DS_MOUNT,
            "              configMap: {name: ds-config, items: [{key: zero3, path: ds.json}]}\n",
            "zero3",
            "ConfigMap `ds-config` key `zero3`: at world size 4 DeepSpeed asserts",
        ),
        (
            DS_MOUNT,
            "              projected:\n"
            "                sources:\n"
            "                  - configMap: {name: other-config}\n"
            "                  - configMap: {name: ds-config}\n",
            "ds.json",
            "ConfigMap `ds-config` key `ds.json`: at world size 4 DeepSpeed asserts",
        ),
        (
            DS_MOUNT,
            "              projected:\n"
            "                sources:\n"
            "                  - configMap:\n"
            "                      name: ds-config\n"
            "                      items: [{key: zero3, path: ds.json}]\n",
            "zero3",
            "ConfigMap `ds-config` key `zero3`: at world size 4 DeepSpeed asserts",
        ),
        (
            DS_MOUNT,
            "              projected:\n"
            "                sources:\n"
            "                  - configMap: {name: ds-config}\n",
            "other.json",
            "ConfigMap `ds-config` key `ds.json` does not exist",
        ),
        (  # a Secret we cannot see may provide the file: nothing to say
            DS_MOUNT,
            "              projected:\n"
            "                sources:\n"
            "                  - configMap: {name: ds-config}\n"
            "                  - secret: {name: ds-secret}\n",
            "other.json",
            None,
        ),
    ],
)
def test_deepspeed_config_sources(mount: str, volume: str, key: str, expected: str | None) -> None:
    other = (
        "---\napiVersion: v1\nkind: ConfigMap\n"
        "metadata: {name: other-config, namespace: ml-train}\ndata: {a.json: '{}'}\n"
    )
    text = (
        DS_FAIL.replace(DS_MOUNT, mount)
        .replace(DS_VOLUME, volume)
        .replace(DS_CONFIGMAP, f"  {key}: '")
        + other
    )
    assert mount in text and volume in text and f"  {key}: '" in text
    found = _of(run(manifests_from_text(text)), "deepspeed-batch-mismatch")
    if expected is None:
        assert not found
    else:
        assert len(found) == 1 and expected in found[0].message, [f.message for f in found]


# --- resources-unbounded: the message says what is missing, and only that ---------------------


@pytest.mark.parametrize(
    ("resources", "said", "unsaid"),
    [
        ("{limits: {nvidia.com/gpu: 4, memory: 32Gi}, requests: {nvidia.com/gpu: 4}}",
         "CPU request", "memory limit"),
        ("{limits: {nvidia.com/gpu: 4}, requests: {nvidia.com/gpu: 4, cpu: '8'}}",
         "memory limit", "CPU request"),
    ],
    ids=["memory-limited", "cpu-requested"],
)  # fmt: skip
def test_unbounded_gpu_container_names_only_what_is_missing(
    resources: str, said: str, unsaid: str
) -> None:
    """A public NCCL-test MPIJob had a memory limit and no CPU request, and was told what
    a missing memory limit costs."""
    text = f"""apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  containers:
    - name: trainer
      image: registry.example/train:1.0
      command: [torchrun, --nproc-per-node=4, train.py]
      resources: {resources}
"""
    [found] = _of(run(manifests_from_text(text)), "resources-unbounded")
    assert said in found.message and unsaid not in found.message, found.message


def test_gpu_product_affinity_values_are_quoted_as_yaml() -> None:
    """The values a node affinity asks for are shown as written (were a Python list repr)."""
    text = """apiVersion: v1
kind: Pod
metadata: {name: p, namespace: ml-train}
spec:
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-L4, NVIDIA-T4]}
  containers:
    - {name: c, image: registry.example/c:1.0}
"""
    [found] = _of(run(manifests_from_text(text), make_cluster()), "gpu-product-unknown")
    assert "nvidia.com/gpu.product in [NVIDIA-L4, NVIDIA-T4] matches" in found.message
