"""Training-aware policy rules: what schemas cannot say about whether a job will train.

`check(manifests, cluster)` runs every rule (`RULES`, metadata + a small check each) and
returns located findings; `docs/rules.md` and `trainops rules` are generated from the
rules' metadata (`trainops.rules.docs`).
"""

from __future__ import annotations

from trainops.rules.engine import check
from trainops.rules.model import Rule, Violation
from trainops.rules.registry import RULES, RULES_BY_SLUG
from trainops.rules.waivers import WAIVER_PREFIX

__all__ = ["RULES", "RULES_BY_SLUG", "WAIVER_PREFIX", "Rule", "Violation", "check"]
