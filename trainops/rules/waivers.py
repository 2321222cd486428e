"""Waivers: an object opts out of one rule with an annotation that names the rule and says why.

    metadata:
      annotations:
        trainops.dev/waive.image-unpinned: "vendor publishes :latest only; mirror pins it"

Modelled on kube-linter's `ignore-check.kube-linter.io/<check>`. The reason is required: a
waiver without one, or naming a rule that does not exist, is itself a finding
(`waiver-invalid`), which cannot be waived.

A waiver silences, it does not hide: the findings it covers are still reported, marked
waived with the reason, in every output format, and counted apart (issue 29.6). The
annotation sits in the manifest under review, so the author of a manifest that CI validates
can write it: the rules that guard the node and the delivery path (`UNWAIVABLE`) are relaxed
only by the cluster profile (`podSecurity.exceptions`, `policy:`), which the platform team
owns; a manifest's waiver of one is `waiver-invalid`. A cluster profile that switches a
`SECURITY` rule off still gets its findings listed, marked waived by the profile's policy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from trainops.kube.objects import Object

WAIVER_PREFIX = "trainops.dev/waive."

# Rules a manifest cannot waive: a pod reaching the node (pod-security, its profile-less floor
# pod-security-baseline, privileged), a
# delivery object escaping its fence (delivery-fence) or a pod leaving the profile's
# `jobAccess` (pod-fence: the delivery account, system priority, other teams' secrets) is
# the attack itself, not a reviewed exception.
UNWAIVABLE = frozenset(
    {"pod-security", "pod-security-baseline", "privileged", "delivery-fence", "pod-fence"}
)

# Security rules: switched off by a profile's `policy`, their findings are still listed,
# waived. The TO6xx family, plus secrets in plain env, the namespace allow-list and waivers.
SECURITY = UNWAIVABLE | {
    "image-unpinned",
    "secret-in-plain-env",
    "namespace-not-allowed",
    "waiver-invalid",
}


@dataclass(frozen=True)
class Waiver:
    slug: str
    reason: str
    annotation: str


def waivers(obj: Object) -> Iterator[Waiver]:
    for key, value in sorted(obj.annotations.items()):
        if key.startswith(WAIVER_PREFIX):
            yield Waiver(key[len(WAIVER_PREFIX) :], value.strip(), key)


def annotation_for(slug: str) -> str:
    return WAIVER_PREFIX + slug
