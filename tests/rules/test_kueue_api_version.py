"""`kueue-api-version` follows the profile's `installed.kueue.version`.

Kueue's CRDs (kubernetes-sigs/kueue config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml)
serve only v1beta1 up to v0.14.0, add v1beta2 in v0.15.0, and mark v1beta1 `deprecated: true`
from v0.16.0 (still served in v0.19.2).
"""

from __future__ import annotations

import pytest

from tests.rules.conftest import make_cluster
from tests.rules.helpers import manifests_from_text, run
from trainops.core.findings import Severity
from trainops.jobspec.model import Installed

QUEUE = """apiVersion: kueue.x-k8s.io/{version}
kind: LocalQueue
metadata: {{name: team, namespace: ml-train}}
spec: {{clusterQueue: training}}
"""


@pytest.mark.parametrize(
    ("kueue", "version", "expected"),
    [
        ("0.14", "v1beta1", None),
        ("0.14", "v1beta2", Severity.ERROR),
        ("0.15", "v1beta1", None),
        ("0.15", "v1beta2", None),
        ("0.16", "v1beta1", Severity.WARNING),
        ("0.19.2", "v1beta1", Severity.WARNING),
        ("0.19.2", "v1beta2", None),
    ],
)
def test_the_served_version_per_kueue_release(
    kueue: str, version: str, expected: Severity | None
) -> None:
    cluster = make_cluster(installed=Installed(kueue_version=kueue))
    findings = [
        f
        for f in run(manifests_from_text(QUEUE.format(version=version)), cluster)
        if f.rule == "kueue-api-version"
    ]
    assert [f.severity for f in findings] == ([expected] if expected else [])
