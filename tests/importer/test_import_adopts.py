"""`trainops import` adopts what real teams have (issue 26, import part 2): manifests in
`default` or `kubeflow` moved with `--namespace`, MPI ranks that are not python (the NCCL
tests' all_reduce_perf) and `horovodrun` launchers, scheduler labels dropped with a note.

What reads the result: the MPI Operator (kubeflow/mpi-operator v0.6, pkg/controller/
mpi_job_controller.go) runs the Launcher's command as written, after writing the hostfile of
the Workers; mpirun (Open MPI 4.1/5.0 mpirun(1)) starts the program after its options on
`-np` slots; horovodrun -np N -H hosts prog runs `mpirun ... -np N -H hosts -bind-to none
-map-by slot ... prog` (horovod/horovod, horovod/runner/mpi_run.py)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.tools import REPO, copy_inputs, trainops, tree
from trainops.cli.load import load
from trainops.render.objects import training_job

NCCL_TESTS = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata: {name: nccl-allreduce, namespace: default}
spec:
  slotsPerWorker: 8
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
            - name: launcher
              image: ghcr.io/example/nccl-tests:2.13.11
              command: [mpirun, --allow-run-as-root, -np, "16", -bind-to, none,
                        -x, NCCL_DEBUG=INFO, /opt/nccl_tests/build/all_reduce_perf,
                        -b, "8", -e, 8G, -f, "2", -g, "1"]
              resources: {limits: {cpu: "1", memory: 1Gi}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: ghcr.io/example/nccl-tests:2.13.11
              resources: {limits: {nvidia.com/gpu: 8, cpu: "32", memory: 256Gi}}
"""
HOROVOD = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: hvd-mnist
  namespace: ml-vision
  labels: {kueue.x-k8s.io/queue-name: user-queue}
spec:
  slotsPerWorker: 1
  runPolicy: {cleanPodPolicy: Running}
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        metadata:
          annotations: {scheduling.volcano.sh/queue-name: default}
        spec:
          containers:
            - name: launcher
              image: horovod/horovod:0.28.1
              command: [bash, -c]
              args:
                - >-
                  horovodrun -np 2 -H hvd-mnist-worker-0:1,hvd-mnist-worker-1:1
                  python /examples/mnist.py --epochs 1
              resources: {limits: {cpu: "1", memory: 1Gi}}
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: horovod/horovod:0.28.1
              resources: {limits: {nvidia.com/gpu: 1, cpu: "4", memory: 16Gi}}
"""


def _import(tmp_path: Path, text: str, *args: str) -> tuple[Path, object]:
    root = copy_inputs(REPO, tmp_path / "repo")
    source = tmp_path / "in.yaml"
    source.write_text(text)
    return root, trainops(root, "import", str(source), "--cluster", "cloud-h100", *args)


def _launcher_argv(root: Path, name: str) -> tuple[list[str], list[str]]:
    repo = load(root)
    job = next(j for j in repo.jobs if j.name == name)
    obj = training_job(job, repo.clusters["cloud-h100"], job.targets[0])
    launcher = obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    env = [e["name"] for e in launcher.get("env") or []]
    return [*launcher.get("command", []), *launcher.get("args", [])], env


def test_default_namespace_is_refused_with_advice_that_works(tmp_path: Path) -> None:
    root, result = _import(tmp_path, NCCL_TESTS)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "import with `--namespace ml-vision`" in result.stderr
    assert "a system namespace: no profile may list it" in result.stderr
    assert "add `default` to the profile" not in result.stderr
    before = tree(root)
    wrong = trainops(
        root,
        "import",
        str(tmp_path / "in.yaml"),
        "--cluster",
        "cloud-h100",
        "--namespace",
        "kube-system",
    )
    assert wrong.returncode == 2 and "ml-vision, ai-training" in wrong.stderr
    assert tree(root) == before


def test_nccl_tests_mpijob_imports_and_mpirun_starts_its_program(tmp_path: Path) -> None:
    root, result = _import(tmp_path, NCCL_TESTS, "--namespace", "ml-vision")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "namespace `default` -> `ml-vision` (--namespace)" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "nccl-allreduce.yaml").read_text())
    assert spec["namespace"] == "ml-vision"
    assert spec["mpi"]["rankProgram"] == "executable"
    assert spec["command"] == ["/opt/nccl_tests/build/all_reduce_perf"]
    argv, env = _launcher_argv(root, "nccl-allreduce")
    # mpirun's options, then the program and its arguments as written
    program = argv.index("/opt/nccl_tests/build/all_reduce_perf")
    assert argv[0] == "mpirun" and argv[program + 1 :] == [
        "-b",
        "8",
        "-e",
        "8G",
        "-f",
        "2",
        "-g",
        "1",
    ]
    options = argv[1:program]
    assert options[options.index("-np") + 1] == "16"  # 2 Workers x 8 slots
    at = options.index("btl_tcp_if_include")
    assert options[at - 1 : at + 2] == ["-mca", "btl_tcp_if_include", "eth0"]
    exports = [options[i + 1] for i, o in enumerate(options) if o == "-x"]
    assert "NCCL_DEBUG=INFO" in exports and "NCCL_SOCKET_IFNAME" in exports
    assert "MASTER_ADDR" not in env  # no torch.distributed in all_reduce_perf
    assert trainops(root, "render").returncode == 0


def test_horovodrun_in_a_shell_is_read_as_its_mpirun(tmp_path: Path) -> None:
    root, result = _import(tmp_path, HOROVOD)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "horovodrun read as the mpirun it runs" in result.stdout
    assert "-H hvd-mnist-worker-0:1,hvd-mnist-worker-1:1 removed" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "hvd-mnist.yaml").read_text())
    assert spec["command"] == ["python", "/examples/mnist.py"]
    launcher = spec["replicaPodTemplates"]["Launcher"]["spec"]["containers"][0]
    assert not {"command", "args"} & set(launcher)  # the Launcher is the generated mpirun
    argv, _ = _launcher_argv(root, "hvd-mnist")
    assert argv[-4:] == ["python", "/examples/mnist.py", "--epochs", "1"]
    for pair in (["-bind-to", "none"], ["-map-by", "slot"], ["-np", "2"]):
        assert any(argv[i : i + 2] == pair for i in range(len(argv))), pair


def test_scheduler_labels_are_dropped_naming_the_profiles_queue(tmp_path: Path) -> None:
    root, result = _import(tmp_path, HOROVOD)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "`kueue.x-k8s.io/queue-name: user-queue` dropped: queue `user-queue` differs from"
        " cluster `cloud-h100`'s queue `team-training`"
    ) in result.stdout
    assert "`scheduling.volcano.sh/queue-name: default` dropped" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "hvd-mnist.yaml").read_text())
    assert "queue-name" not in yaml.safe_dump(spec)  # only the header's notes name it


SMALL = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: small, namespace: ml-vision}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: REPLICAS
      template:
        spec:
          terminationGracePeriodSeconds: 0
          containers:
            - name: pytorch
              image: example/train:1.0
              command: [python, train.py]
              resources: {limits: {nvidia.com/gpu: 1, memory: 8Gi}, requests: {cpu: "2"}}
              volumeMounts: [{name: shmem, mountPath: /dev/shm}]
          volumes: [{name: shmem, hostPath: {path: /dev/shm}}]
"""


def test_a_placeholder_count_is_refused_with_its_line_not_a_traceback(tmp_path: Path) -> None:
    """Issue 26: `replicas: $NUM_NODES` (an envsubst template, aws-samples'
    awsome-distributed-training FSDP recipe) ended in a ValueError traceback."""
    root, result = _import(tmp_path, SMALL.replace("REPLICAS", "$NUM_NODES"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    line = next(i for i, t in enumerate(SMALL.splitlines(), 1) if "replicas:" in t)
    assert f"in.yaml:{line}:" in result.stderr and "`replicas: $NUM_NODES` is not a number" in (
        result.stderr
    )
    assert not (root / "jobs" / "small.yaml").exists()


def test_host_shm_and_a_zero_grace_period_are_replaced_with_a_note(tmp_path: Path) -> None:
    """The node's /dev/shm as a hostPath (AWS' NCCL-test MPIJobs) and a grace period below the
    spec's least made the imported spec refuse to load; now each is replaced and named."""
    root, result = _import(tmp_path, SMALL.replace("REPLICAS", "1"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "the node's /dev/shm (hostPath) is not carried" in result.stdout
    assert "terminationGracePeriodSeconds 0 is below trainops' least (30" in result.stdout
    text = (root / "jobs" / "small.yaml").read_text()
    assert "hostPath" not in yaml.safe_dump(yaml.safe_load(text))
    assert trainops(root, "render").returncode == 0


def test_a_nameless_object_is_named_and_a_v1_mpijob_is_written_as_the_cluster_serves(
    tmp_path: Path,
) -> None:
    """An object without a name takes its file's (importer/precheck.py `named`). An MPIJob
    is imported in the version the cluster's operator serves
    (`installed.mpiJobs`): one CRD, `mpijobs.kubeflow.org`, per cluster; the Kueue cluster's
    MPI Operator (v2beta1) is also the one Kueue manages."""
    root, result = _import(tmp_path, SMALL.replace("REPLICAS", "1").replace("name: small, ", ""))
    assert result.returncode == 0, result.stderr
    assert "named `in` after the file name `in`" in result.stdout
    v1 = NCCL_TESTS.replace("kubeflow.org/v2beta1", "kubeflow.org/v1")
    root, result = _import(tmp_path / "v1", v1, "--namespace", "ml-vision")
    assert result.returncode == 0, result.stderr
    assert "MPIJob `kubeflow.org/v1` is written for `kubeflow.org/v2beta1`" in result.stdout
    spec = yaml.safe_load((root / "jobs" / "nccl-allreduce.yaml").read_text())
    assert "apiVersion" not in spec["mpi"]  # v2beta1, the default
