"""False-positive check: every upstream example (read from ../shared/upstream at test time).

Every finding, of either severity, on every example is listed here, and each kept
(rule, severity) has the reason it is a true finding on a demo manifest rather than a false
positive; anything else fails the test. The examples are checked once without a cluster
profile and once with each shipped profile (`clusters/*.yaml`), whose findings are listed
the same way.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from tests.rules.helpers import manifests_from_file, run
from tests.tools import REPO, require_upstream
from trainops.core.findings import Severity
from trainops.jobspec.load import load_repository
from trainops.jobspec.model import ClusterProfile
from trainops.rules import RULES_BY_SLUG

E, W = Severity.ERROR, Severity.WARNING
Kept = tuple[str, Severity]

UNBOUNDED: Kept = ("resources-unbounded", E)
BEST_EFFORT: Kept = ("resources-unbounded", W)
UNPINNED: Kept = ("image-unpinned", E)
TTL: Kept = ("ttl-missing", W)
SHM: Kept = ("shm-missing", W)
RESTART: Kept = ("restart-policy-unsafe", W)
CHECKPOINT: Kept = ("checkpoint-ephemeral", E)
NAMESPACE: Kept = ("namespace-not-allowed", E)
GANG: Kept = ("gang-scheduling-inconsistent", E)
RERUN: Kept = ("gitops-rerun-risk", E)
POD_SECURITY: Kept = ("pod-security", E)
POD_FENCE: Kept = ("pod-fence", E)
SUSPEND: Kept = ("trainjob-foreign-fields", W)
STORE: Kept = ("elastic-store-shared", W)
PARTIAL: Kept = ("gang-partial", W)

# (rule, severity) -> why it is right on the upstream demos, not a false positive.
REASONS: dict[Kept, str] = {
    POD_SECURITY: "cloud-h100 enforces Pod Security restricted and no demo sets"
    " runAsNonRoot, seccomp RuntimeDefault, drop ALL and allowPrivilegeEscalation: false",
    POD_FENCE: "no demo sets automountServiceAccountToken: false, and no shipped profile grants"
    " jobs the default account's token (issue 29.1)",
    UNBOUNDED: "containers that hold GPUs without a memory limit or a CPU request; a shared"
    " cluster should not run them as they are",
    BEST_EFFORT: "containers (demo workers, MPI launchers, TrainJob demos) with no resources at"
    " all: BestEffort pods are evicted first and the job fails with them",
    UNPINNED: "the demos use `:latest` or untagged images",
    TTL: "a TFJob with parameter servers and cleanPodPolicy unset (the Training Operator's"
    " default is None): the PS pods keep serving after the job finished",
    SHM: "the PyTorch CPU demo runs nprocPerNode 2 processes per pod with the container's"
    " 64Mi /dev/shm, which DataLoader workers and NCCL's shm transport outgrow (as does the"
    " Flux LAMMPS TrainJob, 4 processes per node)",
    RESTART: "the TFJob and XGBoostJob demos set restartPolicy Never on the workers of a"
    " non-elastic job: one preempted worker fails the whole job",
    CHECKPOINT: "the DeepSpeed demo checkpoints to /root/deepspeed_data on the container"
    " filesystem under restartPolicy OnFailure: a restarted container starts from scratch",
    SUSPEND: "the Kueue TrainJob demo keeps `suspend: true` in the manifest: applied by a"
    " GitOps sync after Kueue admitted it, that suspends the running job",
    STORE: "the elastic demos run c10d rendezvous without TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1:"
    " on torch 2.5 and later a pod that replaces a lost one never rejoins (their `:latest`"
    " images may predate 2.5; the manifest cannot say which torch it runs)",
    PARTIAL: "the task-start-dependency MPI demo admits a gang of 3 of its 11 pods: mpirun in"
    " the master names all ten workers, so three started pods wait for the other eight",
    # With a cluster profile:
    NAMESPACE: "these demos name the `kubeflow` namespace, which neither shipped profile lists"
    " among its training namespaces",
    GANG: "Volcano Jobs and Volcano-scheduled jobs on cloud-h100, which queues with Kueue and"
    " runs no Volcano scheduler: the pods would wait for a scheduler that is not there",
    RERUN: "pi.yaml sets ttlSecondsAfterFinished: the job is deleted when done and Flux/Argo CD"
    " re-creates it from Git, running it again",
}

# file (relative to upstream/examples) -> every (rule, severity) found on it, no cluster.
# Files not listed (the v2 runtimes, the TrainJob examples that set resourcesPerNode, the pi
# examples, the MPI Operator's v1 examples with cleanPodPolicy Running, some Volcano samples)
# have no finding. A TrainJob is read with its runtime where the file holds both (the Flux
# examples), else as its own part (01-multi-node: no resources at all).
KEPT: dict[str, set[Kept]] = {
    "mpi-operator/examples__v2beta1__horovod__tensorflow-mnist.yaml": {UNPINNED},
    "mpi-operator/examples__v2beta1__tensorflow-benchmarks__tensorflow-benchmarks.yaml": {
        BEST_EFFORT,
        UNBOUNDED,
        UNPINNED,
    },
    "training-operator/examples__paddlepaddle__simple-cpu.yaml": {BEST_EFFORT},
    "training-operator/examples__paddlepaddle__simple-gpu.yaml": {UNBOUNDED},
    "training-operator/examples__pytorch__cpu-demo__demo.yaml": {BEST_EFFORT, SHM},
    "training-operator/examples__pytorch__deepspeed-demo__pytorch_deepspeed_demo.yaml": {
        CHECKPOINT,
        UNBOUNDED,
        UNPINNED,
    },
    "training-operator/examples__pytorch__elastic__imagenet__imagenet.yaml": {UNPINNED, STORE},
    "training-operator/examples__pytorch__simple.yaml": {BEST_EFFORT},
    "training-operator/examples__tensorflow__dist-mnist__tf_job_mnist.yaml": {
        BEST_EFFORT,
        RESTART,
        TTL,
        UNPINNED,
    },
    "training-operator/examples__tensorflow__distribution_strategy__multi_worker_tfjob.yaml": {
        RESTART,
        UNBOUNDED,
        UNPINNED,
    },
    "volcano/example__job.yaml": {UNPINNED},
    "trainer/examples__flux__flux-interactive.yaml": {BEST_EFFORT, UNPINNED},
    "trainer/examples__flux__lammps-train-gpus.yaml": {UNBOUNDED},
    "trainer/examples__flux__lammps-train-job.yaml": {BEST_EFFORT, SHM, UNPINNED},
    "trainer/examples__yaml__01-multi-node.yaml": {BEST_EFFORT},
    "trainer/examples__yaml__03-kueue-integration.yaml": {SUSPEND},
}
for _name in (
    "examples__jax__cpu-demo__demo.yaml",
    "examples__jax__jax-dist-spmd-mnist__jaxjob_dist_spmd_mnist_gloo.yaml",
    "examples__pytorch__elastic__echo__echo.yaml",
    "examples__pytorch__smoke-dist__pytorch_job_sendrecv.yaml",
    "examples__tensorflow__simple.yaml",
    "examples__xgboost__lightgbm-dist__xgboostjob_v1_lightgbm_dist_training.yaml",
    "examples__xgboost__xgboost-dist__xgboostjob_v1_iris_predict.yaml",
    "examples__xgboost__xgboost-dist__xgboostjob_v1_iris_predict_local.yaml",
    "examples__xgboost__xgboost-dist__xgboostjob_v1_iris_train.yaml",
    "examples__xgboost__xgboost-dist__xgboostjob_v1_iris_train_local.yaml",
    "examples__xgboost__xgboostjob.yaml",
):
    KEPT[f"training-operator/{_name}"] = {BEST_EFFORT, UNPINNED}
KEPT["training-operator/examples__pytorch__elastic__echo__echo.yaml"].add(STORE)
for _name in (
    "examples__pytorch__mnist__v1__pytorch_job_mnist_gloo.yaml",
    "examples__pytorch__mnist__v1__pytorch_job_mnist_mpi.yaml",
    "examples__pytorch__mnist__v1__pytorch_job_mnist_nccl.yaml",
):
    KEPT[f"training-operator/{_name}"] = {UNBOUNDED, UNPINNED}
for _name in (
    "examples__tensorflow__mnist_with_summaries__tf_job_mnist.yaml",
    "examples__xgboost__smoke-dist__xgboostjob_v1_rabit_test.yaml",
    "examples__xgboost__smoke-dist__xgboostjob_v1alpha1_rabit_test.yaml",
):
    KEPT[f"training-operator/{_name}"] = {BEST_EFFORT, RESTART, UNPINNED}
for _name in (
    "docs__user-guide__how_to_use_pytorch_plugin.md.example.yaml",
    "example__integrations__mpi__mpi-example.yaml",
    "example__integrations__tensorflow__benchmark__tf-example.yaml",
    "example__integrations__tensorflow__dist-mnist__tf-dist-mnist-example.yaml",
    "example__task-start-dependency__mpi.yaml",
):
    KEPT[f"volcano/{_name}"] = {BEST_EFFORT}
KEPT["volcano/example__task-start-dependency__mpi.yaml"].add(PARTIAL)

# What each shipped cluster profile adds to the findings above (it removes none).
IN_KUBEFLOW_NAMESPACE = {
    f"training-operator/{name}"
    for name in (
        "examples__jax__cpu-demo__demo.yaml",
        "examples__jax__jax-dist-spmd-mnist__jaxjob_dist_spmd_mnist_gloo.yaml",
        "examples__paddlepaddle__simple-cpu.yaml",
        "examples__paddlepaddle__simple-gpu.yaml",
        "examples__pytorch__simple.yaml",
        "examples__tensorflow__mnist_with_summaries__tf_job_mnist.yaml",
        "examples__tensorflow__simple.yaml",
    )
}
ON_VOLCANO = {
    f"volcano/{name}"
    for name in (
        "docs__user-guide__how_to_use_pytorch_plugin.md.example.yaml",
        "example__integrations__mpi__mpi-example.yaml",
        "example__integrations__tensorflow__benchmark__tf-example.yaml",
        "example__integrations__tensorflow__dist-mnist__tf-dist-mnist-example.yaml",
        "example__job.yaml",
        "example__kubecon-2019-china__gang__mpi-example.yaml",
        "example__kubecon-2019-china__horovod-sample__lm-horovod-tf-mnist-v0.5.yaml",
        "example__kubecon-2019-china__mpi-sample__mpi-example.yaml",
        "example__kubecon-2019-china__tf-sample__tf-example.yaml",
        "example__task-start-dependency__mpi.yaml",
    )
}
WITH_TTL = "mpi-operator/examples__v2beta1__pi__pi.yaml"
# Kinds whose pod templates the level rules do not read (Kubeflow Trainer v2 runtimes: a
# TrainJob completes them with its patches, and its merged pods are judged). Runtimes and
# JobSets alone: templates no level rule reads (a TrainJob reads its runtime's).
UNREAD_KINDS = ("TrainingRuntime", "kind: JobSet")


def _with_containers(unread: tuple[str, ...] = UNREAD_KINDS) -> set[str]:
    """Every example with a pod template the rules read (a TrainJob's node pod is one, with
    or without its runtime in the file): none meets Pod Security restricted. The fence reads
    a runtime's own pods too (issue 35.5: `unread=()`)."""
    root = require_upstream() / "examples"
    return {
        str(p.relative_to(root))
        for p in root.rglob("*.yaml")
        if "kind: TrainJob" in (text := p.read_text())
        or ("containers:" in text and not any(k in text for k in unread))
    }


ADDED_BY_CLUSTER: dict[str, set[tuple[str, Kept]]] = {
    "cloud-h100": {(f, NAMESPACE) for f in IN_KUBEFLOW_NAMESPACE}
    | {(f, GANG) for f in ON_VOLCANO}
    | {(WITH_TTL, RERUN)},
    "onprem-a100": {(f, NAMESPACE) for f in IN_KUBEFLOW_NAMESPACE} | {(WITH_TTL, RERUN)},
    "onprem-h200": {(f, NAMESPACE) for f in IN_KUBEFLOW_NAMESPACE} | {(WITH_TTL, RERUN)},
}


def _examples() -> list[tuple[str, Path]]:
    root = require_upstream() / "examples"
    files = sorted(root.rglob("*.yaml"))
    assert len(files) > 40
    return [(str(path.relative_to(root)), path) for path in files]


@cache
def _clusters() -> dict[str, ClusterProfile]:
    return load_repository(REPO).clusters


@cache
def _findings(cluster: str | None) -> frozenset[tuple[str, Kept]]:
    """(file, (rule, severity)) of every finding, with the named shipped profile or none."""
    profile = _clusters()[cluster] if cluster is not None else None
    return frozenset(
        (name, (f.rule, f.severity))
        for name, path in _examples()
        for f in run(manifests_from_file(path, name), profile)
    )


def test_every_kept_finding_has_a_reason() -> None:
    listed = {k for kept in KEPT.values() for k in kept}
    listed |= {k for added in ADDED_BY_CLUSTER.values() for _, k in added} | {
        POD_SECURITY,
        POD_FENCE,
    }
    assert listed == set(REASONS)
    assert all(rule in RULES_BY_SLUG for rule, _ in REASONS)


def test_upstream_examples_have_only_the_kept_findings() -> None:
    found: dict[str, set[Kept]] = {}
    for name, kept in _findings(None):
        found.setdefault(name, set()).add(kept)
    assert found == KEPT


def test_shipped_cluster_profiles_are_listed() -> None:
    assert sorted(_clusters()) == sorted(ADDED_BY_CLUSTER)


@pytest.mark.parametrize("name", sorted(ADDED_BY_CLUSTER))
def test_upstream_examples_with_each_cluster_profile(name: str) -> None:
    if name not in _clusters():
        pytest.fail(f"clusters/{name}.yaml is not a shipped cluster profile any more")
    without, with_cluster = _findings(None), _findings(name)
    assert without - with_cluster == set(), "a cluster profile hid findings"
    # The RDMA clusters label their namespaces privileged for IPC_LOCK (admission has no
    # per-capability exception), where pods are held to baseline, which every demo meets.
    level = _clusters()[name].pod_security.level
    restricted = {(f, POD_SECURITY) for f in _with_containers()} if level == "restricted" else set()
    fenced = {(f, POD_FENCE) for f in _with_containers(unread=())}
    assert with_cluster - without == ADDED_BY_CLUSTER[name] | restricted | fenced
