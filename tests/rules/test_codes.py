"""Rule codes are stable: once published, a code always names the same rule (ruff-style).

Users waive, configure and search by these; renumbering by list position (as `trainops rules`
did before codes) silently changes what `TO105` means in someone's CI config. Add new rules
with new codes; never reuse a retired one. This table is the record.
"""

from __future__ import annotations

import re

from trainops.rules import RULES
from trainops.rules.registry import RULES_BY_CODE

PUBLISHED = {
    "TO101": "gpu-request-limit-mismatch",
    "TO102": "resources-unbounded",
    "TO103": "nproc-gpu-mismatch",
    "TO104": "shm-missing",
    "TO120": "cpu-oversubscribed",
    "TO201": "elastic-range-invalid",
    "TO202": "elastic-nnodes-conflict",
    "TO203": "rdzv-backend-unsupported",
    "TO204": "nnodes-pod-mismatch",
    "TO205": "elastic-needs-torchrun",
    "TO208": "elastic-store-shared",
    "TO206": "checkpoint-ephemeral",
    "TO301": "env-reference-undefined",
    "TO302": "secret-in-plain-env",
    "TO303": "rendezvous-unresolvable",
    "TO304": "rendezvous-missing",
    "TO308": "torch-env-unknown",
    "TO401": "gang-scheduling-inconsistent",
    "TO402": "restart-policy-unsafe",
    "TO403": "ttl-missing",
    "TO404": "gitops-rerun-risk",
    "TO405": "api-removed",
    "TO406": "name-refused",
    "TO407": "gang-partial",
    "TO410": "command-never-exits",
    "TO411": "failure-ignored",
    "TO412": "pipe-hides-failure",
    "TO470": "kueue-api-version",
    "TO430": "gang-unschedulable",
    "TO431": "queue-quota-exceeded",
    "TO432": "kueue-resource-uncovered",
    "TO440": "trainjob-foreign-fields",
    "TO441": "trainjob-elastic-unsupported",
    "TO501": "nccl-env-deprecated",
    "TO502": "nccl-env-unknown",
    "TO503": "rdma-incomplete",
    "TO504": "network-mismatch",
    "TO505": "host-network-dns",
    "TO601": "image-unpinned",
    "TO602": "privileged",
    "TO603": "pod-security",
    "TO610": "pod-security-baseline",
    "TO604": "delivery-fence",
    "TO650": "pod-fence",
    "TO701": "deepspeed-batch-mismatch",
    "TO702": "deepspeed-elastic-batch",
    "TO703": "deepspeed-precision-conflict",
    "TO704": "deepspeed-stage-ignored",
    "TO801": "mpi-np-mismatch",
    "TO802": "mpi-arg-has-space",
    "TO810": "mpi-launcher-gpus",
    "TO811": "mpi-ssh-contract",
    "TO901": "gpu-product-unknown",
    "TO902": "namespace-not-allowed",
    "TO903": "claim-single-node",
    "TO904": "metrics-port-mismatch",
    "TO905": "waiver-invalid",
    "TO906": "write-to-read-only",
    "TO907": "dataset-writable",
    "TO915": "platform-unused",
    "TO908": "cache-on-read-only",
}
# Codes that named a rule once and may never be given to another.
RETIRED: set[str] = set()


def test_published_codes_keep_their_rule() -> None:
    for code, slug in PUBLISHED.items():
        assert code in RULES_BY_CODE, f"{code} ({slug}) was removed: retire it instead"
        assert RULES_BY_CODE[code].slug == slug, f"{code} changed meaning"


def test_every_rule_has_a_well_formed_unpublished_or_published_code() -> None:
    for rule in RULES:
        assert re.fullmatch(r"TO[1-9]\d{2}", rule.code), rule.code
        assert rule.code not in RETIRED, f"{rule.code} is retired"
    new = sorted(r.code for r in RULES if r.code not in PUBLISHED)
    assert not new, f"add {new} to PUBLISHED (a code is forever once released)"


def test_listing_order_is_the_code_order() -> None:
    assert [r.code for r in RULES] == sorted(r.code for r in RULES)
