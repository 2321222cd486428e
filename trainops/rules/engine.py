"""Run every rule over a manifest set; turn bare violations into located findings.

The engine, not the rules, decides where (file, line, object, cluster) and how loud
(the rule's severity, the violation's milder variant, then the cluster profile's
`policy` override, Polaris-style) — and marks what a valid waiver covers: a waived
finding is still reported, with its reason, and counted apart (rules/waivers.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from trainops.core.findings import Finding, Severity
from trainops.core.manifest import Manifest
from trainops.jobspec.model import ClusterProfile
from trainops.kube.objects import Object
from trainops.rules.checks.waiver import SLUG as WAIVER_SLUG
from trainops.rules.context import Context
from trainops.rules.model import Rule
from trainops.rules.registry import RULES, RULES_BY_SLUG
from trainops.rules.waivers import SECURITY, UNWAIVABLE, waivers

OFF = "off"
# The kind the finding of a switched-off security rule names: the profile that does it.
POLICY_KIND = "ClusterProfile"


def _severity(rule: Rule, default: Severity, cluster: ClusterProfile | None) -> Severity | None:
    """Severity after the cluster's override; None when the cluster turns the rule off."""
    override = cluster.policy.get(rule.slug) if cluster is not None else None
    if override == OFF:
        return None
    return Severity(override) if override else default


def _waived(obj: Object) -> dict[str, str]:
    """Slug -> reason for the rules this object validly waives (known, waivable, a reason)."""
    return {
        w.slug: f"{w.annotation}: {w.reason}"
        for w in waivers(obj)
        if w.reason and w.slug in RULES_BY_SLUG and w.slug not in UNWAIVABLE | {WAIVER_SLUG}
    }


def switched_off(cluster: ClusterProfile | None) -> dict[str, str]:
    """Slug -> reason for the security rules the cluster's `policy` switches off: their
    findings are listed, waived, never dropped without a word."""
    if cluster is None:
        return {}
    return {
        slug: f"policy of cluster {cluster.name}: {slug}: off"
        for slug in sorted(SECURITY)
        if cluster.policy.get(slug) == OFF
    }


def _switched_off(cluster: ClusterProfile, slug: str, why: str) -> Finding:
    """The word a security rule switched off gets in every run, even one where nothing
    breaks it (issue 29.7): a waived finding on the profile, listed in every summary."""
    return Finding(
        rule=slug,
        severity=RULES_BY_SLUG[slug].severity,
        message=f"security rule `{slug}` is switched off by this cluster profile's `policy`:"
        " its findings are listed as waived and fail no run",
        file=cluster.file,
        kind=POLICY_KIND,
        name=cluster.name,
        cluster=cluster.name,
        waived=why,
        switched_off=True,
    )


def check(
    manifests: Sequence[Manifest],
    cluster: ClusterProfile | None,
    rules: Sequence[Rule] = RULES,
) -> list[Finding]:
    """Policy findings for `manifests`, sorted by file, line, object and rule.

    `cluster` is context for the rules that need one (skipped without it) and the source of
    per-rule severity overrides.
    """
    ctx = Context([Object(m) for m in manifests], cluster, frozenset(RULES_BY_SLUG))
    with_pods = [rule for rule in rules if cluster is not None or not rule.needs_cluster]
    without_pods = [rule for rule in with_pods if not rule.pods_only]
    findings: list[Finding] = []
    off = switched_off(cluster)
    for obj in ctx.objects:
        waived = {**off, **_waived(obj)}
        for rule in with_pods if obj.all_pods else without_pods:
            for violation in rule.check(obj, ctx):
                path = obj.source_path(violation.path)
                default = violation.severity or rule.severity
                severity = _severity(rule, default, cluster)
                if severity is None and rule.slug not in off:
                    break
                findings.append(
                    Finding(
                        rule=rule.slug,
                        severity=severity or default,
                        message=violation.message,
                        file=obj.manifest.file,
                        line=obj.manifest.line_of(path),
                        kind=obj.kind or None,
                        name=obj.manifest.name,
                        namespace=obj.namespace,
                        cluster=obj.manifest.cluster
                        or (cluster.name if cluster is not None else None),
                        waived=waived.get(rule.slug),
                        path=path,
                    )
                )
    if cluster is not None:
        findings += [_switched_off(cluster, slug, why) for slug, why in off.items()]
    unique = {(f.sort_key(), f.message): f for f in findings}
    return [unique[k] for k in sorted(unique)]
