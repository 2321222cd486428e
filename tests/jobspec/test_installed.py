"""What a job needs the cluster to run, against the profile's `installed:` (issue 23, item 5).

Kueue v0.19's default Configuration leaves `kubeflow.org/pytorchjob` and `kubeflow.org/tfjob`
commented out (kubernetes-sigs/kueue v0.19.2,
config/components/manager/controller_manager_config.yaml; v0.18.0's enables both), and Kueue
ignores the queue label of a kind whose integration is off: the job runs outside the quota.
The MPI Operator and the Training Operator both install `mpijobs.kubeflow.org`; a cluster
serves one of v2beta1 and v1. Each is a load error (exit 2, file:line, nothing written).
"""

from __future__ import annotations

from pathlib import Path

from tests.tools import line_of, trainops, tree

KUEUE_BLOCK = """installed:
  kueue:
    version: "0.19"
"""


def _output(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in tree(root).items() if k.startswith(("base/", "overlays/", "gitops/"))}


def _refused(root: Path) -> str:
    result = trainops(root, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr


def test_a_profile_switched_to_kueue_0_19_defaults_is_refused_once_at_the_profile(
    scratch: Path,
) -> None:
    """One mistake in the profile, told once at its line and naming every job it strands
    (issue 34: it was one problem per job file)."""
    trainops(scratch, "render")
    before = _output(scratch)
    profile = scratch / "clusters" / "cloud-h100.yaml"
    text = profile.read_text()
    start = text.index("installed:")
    end = text.index("  mpiJobs:")
    profile.write_text(text[:start] + KUEUE_BLOCK + text[end:])
    err = _refused(scratch)
    line = line_of(profile, "name: kueue")
    assert (
        f"clusters/cloud-h100.yaml:{line}:3: cluster `cloud-h100` queues with Kueue, and Kueue"
        " 0.19 there does not enable `kubeflow.org/pytorchjob` by default: job(s)"
        " `llm-finetune`, `resnet50-ddp` render a PyTorchJob here" in err
    )
    assert err.count("does not enable `kubeflow.org/pytorchjob`") == 1, err
    assert "`installed.kueue.integrations`" in err
    # TFJobs too; the MPIJob (v2beta1) is in v0.19's defaults.
    assert "render a TFJob here" in err
    assert "horovod-training" not in err
    assert "jobs/" not in err
    assert _output(scratch) == before


def test_kueue_0_18_defaults_still_manage_pytorchjob(scratch: Path) -> None:
    profile = scratch / "clusters" / "cloud-h100.yaml"
    text = profile.read_text()
    start = text.index("installed:")
    end = text.index("  mpiJobs:")
    profile.write_text(text[:start] + KUEUE_BLOCK.replace("0.19", "0.18") + text[end:])
    result = trainops(scratch, "render")
    assert result.returncode == 0, result.stderr


def test_an_mpijob_of_the_version_the_cluster_does_not_serve_is_refused(scratch: Path) -> None:
    profile = scratch / "clusters" / "onprem-a100.yaml"
    profile.write_text(profile.read_text() + "installed: {mpiJobs: training-operator}\n")
    err = _refused(scratch)
    job = scratch / "jobs" / "horovod-training.yaml"
    line = line_of(job, "cluster: onprem-a100")
    assert (
        f"jobs/horovod-training.yaml:{line}:5: job `horovod-training` is an MPIJob"
        " `kubeflow.org/v2beta1`, and cluster `onprem-a100` serves `mpijobs.kubeflow.org` as"
        " `kubeflow.org/v1`" in err
    )
    assert "set `mpi.apiVersion: kubeflow.org/v1`" in err
