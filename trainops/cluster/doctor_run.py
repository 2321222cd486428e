"""All of the doctor's checks, in the order they are printed: the API server, the CRDs, the
operators and Kueue (doctor.py), the nodes (doctor_nodes.py), the delivery (doctor_access.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainops.cluster import doctor
from trainops.cluster.client import Client
from trainops.cluster.doctor import Check
from trainops.cluster.doctor_access import delivery_checks
from trainops.cluster.doctor_nodes import node_checks
from trainops.core.manifest import Manifest
from trainops.jobspec.model import ClusterProfile, Repository


@dataclass(frozen=True)
class Report:
    cluster: str
    context: str
    checks: list[Check]

    @property
    def failed(self) -> int:
        return sum(1 for c in self.checks if c.status == "fail")

    def to_dict(self) -> dict[str, Any]:
        count = {s: sum(1 for c in self.checks if c.status == s) for s in ("ok", "fail", "skip")}
        return {
            "cluster": self.cluster,
            "context": self.context,
            "checks": [c.to_dict() for c in self.checks],
            "summary": {"ok": count["ok"], "failed": count["fail"], "skipped": count["skip"]},
        }

    def text(self) -> str:
        lines = [c.line() for c in self.checks]
        verdict = "FAILED" if self.failed else "OK"
        lines.append(
            f"{verdict}: {len(self.checks)} checks on cluster {self.cluster} (context"
            f" {self.context}), {self.failed} failed"
        )
        return "\n".join(lines) + "\n"


def examine(
    client: Client, repo: Repository, profile: ClusterProfile, built: list[Manifest]
) -> Report:
    """Every check against the live cluster. Only an unreachable API server (or rejected
    credentials) stops it: a ClusterError from the first request."""
    checks = list(doctor.server_version(client, profile))
    checks += doctor.guarded("crds", lambda: doctor.crds(client, profile, built))
    checks += doctor.operators(client, profile, built)
    checks += doctor.kueue_config(client, profile)
    checks += node_checks(client, profile)
    checks += delivery_checks(client, repo, profile, built)
    return Report(profile.name, client.target.context, checks)
