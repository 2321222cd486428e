"""Issue 33 item 8: a cluster that stops using a network keeps its platform manifests; the
rendered overlay, the AppProject and the delivery account keep delivering them, and
`trainops validate` says so (rule `platform-unused`) instead of staying silent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.tools import REPO, copy_inputs, require_kustomize
from trainops.cli import main
from trainops.jobspec.load import load_repository
from trainops.render import render_repository


def _tcp(root: Path) -> None:
    """onprem-a100 switched from RDMA (Multus `rdma-net`) to TCP; its manifests kept."""
    path = root / "clusters" / "onprem-a100.yaml"
    text = path.read_text()
    text = text.replace("transport: rdma", "transport: tcp").replace("net1", "eth0")
    path.write_text(re.sub(r"  rdma:\n(    .*\n)+", "", text))


def test_a_network_the_profile_no_longer_uses_is_a_finding(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    require_kustomize()
    root = copy_inputs(REPO, tmp_path / "repo")
    _tcp(root)
    files = render_repository(load_repository(root))
    rbac = yaml.safe_load_all(files["gitops/argocd/rbac/onprem-a100.yaml"])
    granted = {
        r for o in rbac if o["kind"] == "Role" for rule in o["rules"] for r in rule["resources"]
    }
    assert "network-attachment-definitions" in granted  # still delivered, still granted
    capsys.readouterr()
    main(["--root", str(root), "validate", "--cluster", "onprem-a100", "--format", "json"])
    findings = json.loads(capsys.readouterr().out)["findings"]
    unused = [f for f in findings if f["rule"] == "platform-unused"]
    assert {(f["kind"], f["name"]) for f in unused} == {("NetworkAttachmentDefinition", "rdma-net")}
    assert "attaches no Multus network" in unused[0]["message"]
    # The shipped repository, as it is, uses everything it delivers.
    capsys.readouterr()
    main(["--root", str(REPO), "validate", "--format", "json"])
    shipped = json.loads(capsys.readouterr().out)["findings"]
    assert not [f for f in shipped if f["rule"] == "platform-unused"]
