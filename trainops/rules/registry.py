"""Every rule, by code (the order `trainops rules` and docs/rules.md list them in)."""

from __future__ import annotations

from trainops.rules.checks import (
    apis,
    capacity,
    checkpoint,
    cluster,
    cpu,
    deepspeed,
    delivery,
    elastic,
    env,
    exits,
    kueue,
    lifecycle,
    metrics,
    mpi,
    names,
    nccl,
    pod,
    pod_fence,
    pod_security,
    rdma,
    rendezvous,
    resources,
    scheduling,
    trainer,
    volumes,
    waiver,
)
from trainops.rules.model import Rule

_ALL: tuple[Rule, ...] = (
    *apis.RULES,
    *checkpoint.RULES,
    *resources.RULES,
    *cpu.RULES,
    *elastic.RULES,
    *env.RULES,
    *scheduling.RULES,
    *capacity.RULES,
    *kueue.RULES,
    *trainer.RULES,
    *lifecycle.RULES,
    *exits.RULES,
    *nccl.RULES,
    *pod.RULES,
    *rdma.RULES,
    *rendezvous.RULES,
    *pod_fence.RULES,
    *pod_security.RULES,
    *delivery.RULES,
    *deepspeed.RULES,
    *mpi.RULES,
    *names.RULES,
    *cluster.RULES,
    *volumes.RULES,
    *metrics.RULES,
    *waiver.RULES,
)

RULES: tuple[Rule, ...] = tuple(sorted(_ALL, key=lambda rule: rule.code))
RULES_BY_SLUG: dict[str, Rule] = {rule.slug: rule for rule in RULES}
RULES_BY_CODE: dict[str, Rule] = {rule.code: rule for rule in RULES}
assert len(RULES_BY_SLUG) == len(RULES) == len(RULES_BY_CODE), "slugs and codes must be unique"
