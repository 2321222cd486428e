"""Issue 35 item 9, the smaller holes: each refused at load (file:line, exit 2, nothing
written) and, where a manifest can carry it, by `pod-fence` under `--manifests --cluster`.
Another team's `imagePullSecrets` is tests/security/test_claims_and_secrets.py; the trainer's
planted paths (a symlinked `latest`, a `.tmp-export` link) tests/trainer/test_planted_paths.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.rules.conftest import make_cluster
from tests.rules.helpers import manifests_from_text, run
from tests.security.test_attacks import _refused
from trainops.facts.pod_fence import DELIVERY_NAMESPACE
from trainops.render.gitops.flux_rbac import ARGOCD_ACCOUNT_NAMESPACE

JOB = "jobs/llm-finetune.yaml"


def _line(path: Path, after: int, needle: str) -> int:
    lines = path.read_text().splitlines()
    return next(i for i, x in enumerate(lines, 1) if i > after and needle in x)


# (what the job appends, the text of the line the error names, what the error says)
CASES = {
    "finalizers": ("podTemplate:\n  metadata:\n    finalizers: [example.com/hold]\n",
                   "finalizers:", "`metadata.finalizers` in a pod template"),
    "namespace": ("replicaPodTemplates:\n  Worker:\n    metadata:\n      namespace: kube-system\n",
                  "namespace: kube-system", "`metadata.namespace` in a pod template"),
    "karpenter": ("podAnnotations:\n  karpenter.sh/do-not-disrupt: 'true'\n",
                  "karpenter.sh/do-not-disrupt", "control surface set by the platform team"),
    "linkerd": ("podTemplate:\n  metadata:\n    annotations:\n      linkerd.io/inject: disabled\n",
                "linkerd.io/inject", "control surface set by the platform team"),
    "vault": ("podAnnotations:\n  vault.hashicorp.com/agent-inject-secret-db: team-b/db\n",
              "vault.hashicorp.com", "control surface set by the platform team"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(CASES))
def test_pod_metadata_that_changes_node_or_mesh_behaviour_is_refused(
    scratch: Path, case: str
) -> None:
    job = scratch / JOB
    text = job.read_text()
    appended, where, says = CASES[case]
    job.write_text(text + appended)
    err = _refused(scratch)
    assert f"{JOB}:{_line(job, len(text.splitlines()), where)}:" in err, err
    assert says in err


def test_a_deepspeed_config_over_the_configmap_limit_is_refused(scratch: Path) -> None:
    """The API server refuses a ConfigMap over 1 MiB: every cluster's sync would fail."""
    job = scratch / JOB
    text = job.read_text()
    key = "    communication_data_type: bf16\n"
    assert key in text
    job.write_text(
        text.replace(key, key + f"    tensorboard: {{output_path: {'x' * 1_100_000}}}\n")
    )
    err = _refused(scratch)
    assert f"{JOB}:{_line(job, 0, '  config:')}:" in err, err
    assert "ConfigMap it is delivered in holds at most 1,048,576" in err


def test_a_profile_cannot_make_the_delivery_namespace_a_training_namespace(scratch: Path) -> None:
    profile = scratch / "clusters/onprem-a100.yaml"
    text = profile.read_text()
    old = "namespaces: [ml-vision, ai-training]"
    assert old in text
    profile.write_text(
        text.replace(old, f"namespaces: [ml-vision, ai-training, {DELIVERY_NAMESPACE}]")
    )
    err = _refused(scratch)
    assert "clusters/onprem-a100.yaml:" in err and "account Argo CD delivers as" in err, err


def test_the_fenced_delivery_namespace_is_the_one_the_delivery_renders() -> None:
    assert DELIVERY_NAMESPACE == ARGOCD_ACCOUNT_NAMESPACE


TEMPLATE = """\
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: held, namespace: ml-train}
spec:
  pytorchReplicaSpecs:
    Worker:
      replicas: 1
      template:
        metadata:
          namespace: kube-system
          finalizers: [example.com/hold]
        spec:
          automountServiceAccountToken: false
          containers: [{name: pytorch, image: registry.example/train:1.0}]
"""


def test_pod_template_metadata_in_manifests_is_held_to_the_fence() -> None:
    findings = [f for f in run(manifests_from_text(TEMPLATE), make_cluster())
                if f.rule == "pod-fence"]  # fmt: skip
    lines = TEMPLATE.splitlines()
    flagged = {lines[f.line - 1].strip().split(":")[0] for f in findings if f.line}
    assert flagged == {"namespace", "finalizers"}, [f.message for f in findings]
    clean = yaml.safe_load(TEMPLATE)
    del clean["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["metadata"]
    findings = run(manifests_from_text(yaml.safe_dump(clean)), make_cluster())
    assert not [f for f in findings if f.rule == "pod-fence"]
