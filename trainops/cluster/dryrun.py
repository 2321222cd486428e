"""`trainops validate --server-side`: the real cluster's answer to applying each built object.

A server-side apply with `dryRun=All` (field manager `trainops`) runs everything the API
server would run on a real apply (defaulting, CRD schemas and CEL rules, validating and
mutating admission webhooks, ResourceQuota and LimitRange admission) and stores nothing.
Each refusal becomes a finding with rule `server`, at the repository file (and, where the
server names the field, the line) the object was built from. A kind the cluster does not
serve (CRD not installed) and a namespace that does not exist are findings too: that is
what a dry run is for. A 401 or an RBAC 403 stops the run instead (ClusterError): they are
about who asks, not about the objects.
"""

from __future__ import annotations

import re
from typing import Any

from trainops.cluster import kinds
from trainops.cluster.client import Client
from trainops.core.findings import Finding, Severity
from trainops.core.manifest import Manifest

RULE_SERVER = "server"
_INDEX = re.compile(r"\[(\d+)\]")


def field_path(text: str) -> list[str | int]:
    """`spec.template.spec.containers[0].image` -> ['spec', ..., 'containers', 0, 'image']."""
    path: list[str | int] = []
    for part in _INDEX.sub(r".\1", text or "").split("."):
        if part:
            path.append(int(part) if part.isdigit() else part)
    return path


def _finding(m: Manifest, message: str, line: int | None) -> Finding:
    return Finding(
        RULE_SERVER,
        Severity.ERROR,
        message,
        file=m.file,
        line=line,
        kind=m.kind,
        name=m.name,
        namespace=m.namespace,
        cluster=m.cluster,
    )


def _refusal(m: Manifest, code: int, status: dict[str, Any]) -> list[Finding]:
    message = str(status.get("message") or f"HTTP {code}")
    reason = status.get("reason") or code
    details = status.get("details") or {}
    if code == 404 and details.get("kind") == "namespaces":
        return [
            _finding(
                m,
                f"namespace {details.get('name', m.namespace)!r} does not exist on the cluster:"
                " create it before this object can be applied",
                m.line_of(["metadata", "namespace"]),
            )
        ]
    causes = [c for c in details.get("causes") or [] if isinstance(c, dict)]
    if not causes:
        return [_finding(m, f"{reason}: {message}", m.line_of())]
    return [
        _finding(
            m,
            f"{reason}: {c.get('field', '')}: {c.get('message', message)}".replace(": : ", ": "),
            m.line_of(field_path(str(c.get("field", "")))),
        )
        for c in causes
    ]


def dry_run(client: Client, manifests: list[Manifest]) -> list[Finding]:
    """Findings for every built object the cluster would refuse."""
    findings: list[Finding] = []
    for m in manifests:
        resource = client.resource(m.api_version, m.kind)
        if resource is None:
            findings.append(
                _finding(
                    m,
                    f"the cluster does not serve {m.kind} ({m.api_version}): its CRD is not"
                    f" installed; install {kinds.provider(m.api_version)} first",
                    m.line_of(["kind"]),
                )
            )
            continue
        result = client.apply_dry_run(resource, m.data)
        if not result.ok:
            findings += _refusal(m, result.code, result.body)
    findings.sort(key=Finding.sort_key)
    return findings
