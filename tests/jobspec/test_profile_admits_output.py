"""A profile the loader accepts renders output its own `validate` passes (issue 23, item 6).

An RDMA profile without `podSecurity` used to load and render, then `validate` failed with
`pod-security` errors on files the user never wrote (IPC_LOCK under the default `baseline`).
Such a profile is now refused at load with the exact addition it needs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tools import line_of, replace_once, trainops, tree


def _output(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in tree(root).items() if k.startswith(("base/", "overlays/", "gitops/"))}


PODSEC = (
    "podSecurity:\n  level: privileged            # the namespaces' enforce label: admission has"
    " no per-capability exception\n  allowCapabilities: [IPC_LOCK]"
)


@pytest.mark.parametrize(
    ("replacement", "needle", "addition"),
    [
        (
            "",
            "transport: rdma",
            "add `podSecurity: {level: privileged, allowCapabilities: [IPC_LOCK]}`",
        ),
        (
            "podSecurity:\n  level: restricted",
            "podSecurity:",
            "add `level: privileged, allowCapabilities: [IPC_LOCK]` under it",
        ),
        (
            "podSecurity:\n  level: privileged\n  allowCapabilities: [NET_RAW]",
            "allowCapabilities: [NET_RAW]",
            "add `IPC_LOCK` to it",
        ),
        # Issue 38.7: the advised exception beside a level whose admission refuses it.
        (
            "podSecurity:\n  level: baseline\n  allowCapabilities: [IPC_LOCK]",
            "allowCapabilities: [IPC_LOCK]",
            "`IPC_LOCK` is not a capability Pod Security `baseline` allows",
        ),
        (
            "podSecurity:\n  level: restricted\n  allowCapabilities: [IPC_LOCK]",
            "allowCapabilities: [IPC_LOCK]",
            "label the training namespaces `privileged`",
        ),
    ],
    ids=[
        "no-podSecurity",
        "no-allowCapabilities",
        "without-IPC_LOCK",
        "baseline-with-IPC_LOCK",
        "restricted-with-IPC_LOCK",
    ],
)
def test_an_rdma_profile_that_does_not_admit_ipc_lock_is_refused_at_load(
    scratch: Path, replacement: str, needle: str, addition: str
) -> None:
    """Before the fix the first case rendered (exit 0) and `validate` then reported
    `pod-security` on `overlays/onprem-a100/...`: IPC_LOCK breaks every Pod Security level's
    "Capabilities" control (kubernetes.io pod-security-standards, baseline)."""
    trainops(scratch, "render")
    before = _output(scratch)
    cluster = scratch / "clusters" / "onprem-a100.yaml"
    replace_once(cluster, PODSEC, replacement)
    result = trainops(scratch, "render")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert _output(scratch) == before, "a refused profile must not touch the output"
    line = line_of(cluster, needle)
    assert f"clusters/onprem-a100.yaml:{line}:" in result.stderr
    assert addition in result.stderr
