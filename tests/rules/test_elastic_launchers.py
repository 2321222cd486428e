"""elastic-needs-torchrun names what each launcher does with the operator's rendezvous."""

from __future__ import annotations

from tests.rules.helpers import FIXTURES, manifests_from_file, run


def test_accelerate_runs_an_agent_that_ignores_the_operator_settings() -> None:
    """`accelerate launch` starts torch's elastic agent (torch.distributed.run) itself: the
    finding must not say that no agent joins, but that its fixed settings win."""
    path = FIXTURES / "elastic-needs-torchrun" / "fail-accelerate.yaml"
    [found] = [f for f in run(manifests_from_file(path)) if f.rule == "elastic-needs-torchrun"]
    assert "accelerate launch" in found.message and "PET_" in found.message, found.message
    assert "no elastic agent" not in found.message
