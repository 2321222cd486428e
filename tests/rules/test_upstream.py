"""False-positive check: every upstream example (read from ../shared/upstream at test time).

No errors from rules that cannot apply. The errors we keep are true findings on demo
manifests, listed here with the reason; anything else fails the test.
"""

from __future__ import annotations

from generators.findings import Severity
from tests.rules.helpers import manifests_from_file, run
from tests.tools import require_upstream

# rule -> why an error from it on an upstream example is right, not a false positive.
KEPT_REASONS = {
    "resources-unbounded": "the upstream demos omit memory limits / CPU requests; a real"
    " cluster should not run them as they are",
    "image-unpinned": "the upstream demos use `:latest` or untagged images",
}
# file (relative to upstream/examples) -> the error rules kept on it (reasons above).
KEPT: dict[str, set[str]] = {
    "mpi-operator/examples__v2beta1__horovod__tensorflow-mnist.yaml": {"image-unpinned"},
    "mpi-operator/examples__v2beta1__tensorflow-benchmarks__tensorflow-benchmarks.yaml": {
        "image-unpinned",
        "resources-unbounded",
    },
    "training-operator/examples__paddlepaddle__simple-cpu.yaml": {"resources-unbounded"},
    "training-operator/examples__paddlepaddle__simple-gpu.yaml": {"resources-unbounded"},
    "training-operator/examples__pytorch__cpu-demo__demo.yaml": {"resources-unbounded"},
    "training-operator/examples__pytorch__simple.yaml": {"resources-unbounded"},
    "volcano/docs__user-guide__how_to_use_pytorch_plugin.md.example.yaml": {"resources-unbounded"},
    "volcano/example__integrations__mpi__mpi-example.yaml": {"resources-unbounded"},
    "volcano/example__integrations__tensorflow__benchmark__tf-example.yaml": {
        "resources-unbounded"
    },
    "volcano/example__integrations__tensorflow__dist-mnist__tf-dist-mnist-example.yaml": {
        "resources-unbounded"
    },
    "volcano/example__job.yaml": {"image-unpinned", "resources-unbounded"},
    "volcano/example__kubecon-2019-china__gang__mpi-example.yaml": {"resources-unbounded"},
    "volcano/example__task-start-dependency__mpi.yaml": {"resources-unbounded"},
}
BOTH = {"image-unpinned", "resources-unbounded"}
for _name in (
    "examples__jax__cpu-demo__demo.yaml",
    "examples__jax__jax-dist-spmd-mnist__jaxjob_dist_spmd_mnist_gloo.yaml",
    "examples__pytorch__deepspeed-demo__pytorch_deepspeed_demo.yaml",
    "examples__pytorch__elastic__echo__echo.yaml",
    "examples__pytorch__elastic__imagenet__imagenet.yaml",
    "examples__pytorch__mnist__v1__pytorch_job_mnist_gloo.yaml",
    "examples__pytorch__mnist__v1__pytorch_job_mnist_mpi.yaml",
    "examples__pytorch__mnist__v1__pytorch_job_mnist_nccl.yaml",
    "examples__pytorch__smoke-dist__pytorch_job_sendrecv.yaml",
    "examples__tensorflow__dist-mnist__tf_job_mnist.yaml",
    "examples__tensorflow__distribution_strategy__multi_worker_tfjob.yaml",
    "examples__tensorflow__mnist_with_summaries__tf_job_mnist.yaml",
    "examples__tensorflow__simple.yaml",
    "examples__xgboost__lightgbm-dist__xgboostjob_v1_lightgbm_dist_training.yaml",
    "examples__xgboost__smoke-dist__xgboostjob_v1_rabit_test.yaml",
    "examples__xgboost__smoke-dist__xgboostjob_v1alpha1_rabit_test.yaml",
    "examples__xgboost__xgboost-dist__xgboostjob_v1_iris_predict.yaml",
    "examples__xgboost__xgboost-dist__xgboostjob_v1_iris_predict_local.yaml",
    "examples__xgboost__xgboost-dist__xgboostjob_v1_iris_train.yaml",
    "examples__xgboost__xgboost-dist__xgboostjob_v1_iris_train_local.yaml",
    "examples__xgboost__xgboostjob.yaml",
):
    KEPT[f"training-operator/{_name}"] = BOTH


def test_upstream_examples_have_no_unexpected_errors() -> None:
    root = require_upstream() / "examples"
    files = sorted(root.rglob("*.yaml"))
    assert len(files) > 40
    errors: dict[str, set[str]] = {}
    for path in files:
        name = str(path.relative_to(root))
        for f in run(manifests_from_file(path, name)):
            if f.severity == Severity.ERROR:
                errors.setdefault(name, set()).add(f.rule)
    assert errors == KEPT
    assert {rule for rules in KEPT.values() for rule in rules} <= set(KEPT_REASONS)
