"""Issue 33 item 7 at load: the profile's queue against the queue objects the cluster's
platform manifests deliver (`trainops/jobspec/platform_queues.py`).

- A ClusterQueue that does not cover a resource every pod requests (the issue's example: the
  RDMA device `rdma/rdma_shared_device_a`): Kueue v0.19.2 never admits the workload
  (flavorassigner.go findFlavorForPodSets: `resource ... unavailable in ClusterQueue`; its
  test "resource not listed in clusterQueue").
- `capacity.queues` against the delivered ClusterQueue's GPU nominalQuota (Kueue) or the
  Volcano Queue's capability: the capacity report judged with a number nobody enforces.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools import line_of, replace_once
from trainops.core.errors import InputError
from trainops.jobspec.load import load_repository


def _problems(root: Path) -> list[str]:
    with pytest.raises(InputError) as err:
        load_repository(root)
    return [str(p) for p in err.value.problems]


def _make_rdma(profile: Path) -> None:
    replace_once(
        profile,
        "  transport: tcp\n",
        "  transport: rdma\n  rdma: {hca: mlx5, gidIndex: 3, gdrLevel: 5,"
        " deviceResource: rdma/rdma_shared_device_a}\n",
    )
    # Pod Security admits IPC_LOCK at `privileged` only (jobspec/admission.py).
    replace_once(
        profile, "  level: restricted ", "  allowCapabilities: [IPC_LOCK]\n  level: privileged "
    )


def test_a_clusterqueue_without_the_rdma_device_is_refused_once(scratch: Path) -> None:
    profile = scratch / "clusters" / "cloud-h100.yaml"
    _make_rdma(profile)
    (problem,) = _problems(scratch)
    assert problem.startswith(f"clusters/cloud-h100.yaml:{line_of(profile, 'deviceResource')}:")
    assert "ClusterQueue `training` (clusters/cloud-h100/manifests/kueue.yaml)" in problem
    assert "`resource rdma/rdma_shared_device_a unavailable in ClusterQueue`" in problem


def test_covering_the_device_admits_it(scratch: Path) -> None:
    _make_rdma(scratch / "clusters" / "cloud-h100.yaml")
    manifests = scratch / "clusters" / "cloud-h100" / "manifests" / "kueue.yaml"
    replace_once(
        manifests,
        "            - {name: nvidia.com/gpu, nominalQuota: 32}\n",
        "            - {name: nvidia.com/gpu, nominalQuota: 32}\n"
        "    - coveredResources: [rdma/rdma_shared_device_a]\n"
        "      flavors:\n"
        "        - name: h100-80gb\n"
        "          resources: [{name: rdma/rdma_shared_device_a, nominalQuota: 1000}]\n",
    )
    load_repository(scratch)


def test_a_kueue_quota_that_disagrees_with_the_profile(scratch: Path) -> None:
    manifests = scratch / "clusters" / "cloud-h100" / "manifests" / "kueue.yaml"
    replace_once(
        manifests,
        "{name: nvidia.com/gpu, nominalQuota: 32}",
        "{name: nvidia.com/gpu, nominalQuota: 24}",
    )
    profile = scratch / "clusters" / "cloud-h100.yaml"
    (problem,) = _problems(scratch)
    assert problem.startswith(
        f"clusters/cloud-h100.yaml:{line_of(profile, 'team-training: {gpus')}:"
    )
    assert "`capacity.queues.team-training.gpus` is 32, but ClusterQueue `training`" in problem
    assert "nominalQuota of 24" in problem


def test_a_volcano_capability_that_disagrees_with_the_profile(scratch: Path) -> None:
    profile = scratch / "clusters" / "onprem-a100.yaml"
    replace_once(profile, "research: {gpus: 64}", "research: {gpus: 48}")
    (problem,) = _problems(scratch)
    assert "`capacity.queues.research.gpus` is 48, but Queue `research`" in problem
    assert "capability of 64" in problem
