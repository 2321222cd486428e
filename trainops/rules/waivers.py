"""Waivers: an object opts out of one rule with an annotation that names the rule and says why.

    metadata:
      annotations:
        trainops.dev/waive.image-unpinned: "vendor publishes :latest only; mirror pins it"

Modelled on kube-linter's `ignore-check.kube-linter.io/<check>`. The reason is required: a
waiver without one, or naming a rule that does not exist, is itself a finding
(`waiver-invalid`), which cannot be waived.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from trainops.rules.objects import Object

WAIVER_PREFIX = "trainops.dev/waive."


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
