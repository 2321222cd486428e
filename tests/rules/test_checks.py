"""Rule behaviour beyond one pass and one fail fixture: the cases a fixture pair cannot show."""

from __future__ import annotations

from generators.findings import Finding, Severity
from generators.spec.model import Network
from tests.rules.conftest import make_cluster
from tests.rules.helpers import FIXTURES, manifests_from_file, manifests_from_text, run


def _of(findings: list[Finding], rule: str) -> list[Finding]:
    return [f for f in findings if f.rule == rule]


# --- rdma-incomplete / network-mismatch: where NCCL settings take effect ----------------------

MPIJOB_PASS = (FIXTURES / "rdma-incomplete" / "pass-mpijob.yaml").read_text()


def test_mpirun_exports_apply_to_the_launcher_when_it_runs_ranks() -> None:
    text = MPIJOB_PASS.replace(
        "  slotsPerWorker: 8\n", "  slotsPerWorker: 8\n  runLauncherAsWorker: true\n"
    )
    found = _of(run(manifests_from_text(text)), "rdma-incomplete")
    assert [(f.severity, f.message.split(" ")[0]) for f in found] == [("warning", "Launcher")]
    assert "exported by mpirun in Launcher" in found[0].message


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
