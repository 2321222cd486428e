"""The `waiver-invalid` rule: waivers must name a real rule and give a reason."""

from __future__ import annotations

from collections.abc import Iterator

from trainops.core.findings import Severity
from trainops.kube.objects import Object
from trainops.rules.context import Context
from trainops.rules.model import Rule, Violation
from trainops.rules.waivers import UNWAIVABLE, waivers

SLUG = "waiver-invalid"


def _invalid(obj: Object, ctx: Context) -> Iterator[Violation]:
    for waiver in waivers(obj):
        path = ("metadata", "annotations", waiver.annotation)
        if waiver.slug == SLUG or waiver.slug not in ctx.rule_slugs:
            yield Violation(f"`{waiver.annotation}` names no rule that can be waived", path)
        elif waiver.slug in UNWAIVABLE:
            yield Violation(
                f"`{waiver.annotation}`: `{waiver.slug}` cannot be waived by a manifest; the"
                " cluster profile relaxes it (`podSecurity.exceptions`, `policy`), reviewed by"
                " the platform team; the waiver is ignored",
                path,
            )
        elif not waiver.reason:
            yield Violation(
                f"`{waiver.annotation}` gives no reason: say why this object may break"
                f" `{waiver.slug}`; the waiver is ignored until then",
                path,
            )


RULES = (
    Rule(
        slug=SLUG,
        code="TO905",
        severity=Severity.ERROR,
        summary="A waiver annotation without a reason, naming no known rule, or waiving a rule"
        " only the cluster profile may relax (pod-security, privileged, delivery-fence,"
        " pod-fence).",
        why="A waiver is a reviewed exception: without a reason nobody can tell later whether"
        " it still holds, and a misspelt rule waives nothing.",
        fix='Write `trainops.dev/waive.<rule>: "<why this object may break the rule>"` with a'
        " slug from `trainops rules`.",
        example='metadata:\n  annotations:\n    trainops.dev/waive.image-unpinned: ""',
        check=_invalid,
    ),
)
