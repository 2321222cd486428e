"""A profile the loader accepts renders output that its own `validate` passes (issue 23 item 6).

Never blame the user for our own output: for combinations of the profile options the shipped
and fixture profiles use (transport, scheduler, Pod Security level and exceptions, Kueue
release), applied to every shipped profile at once, either the loader refuses the profile
(exit 2, with what to add) or `validate` finds no error in what `render` made of it. Before
issue 23 an RDMA profile without `podSecurity` loaded, rendered, and failed `validate` with
`pod-security` errors on the rendered files.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tools import REPO, copy_inputs, require_kustomize
from trainops.core.errors import InputError
from trainops.core.findings import Severity
from trainops.jobspec.load import load_repository
from trainops.rules import RULES_BY_SLUG
from trainops.validate.repo import validate_repository

pytestmark = pytest.mark.slow

Edit = Callable[[dict[str, Any]], None]


def _no_pod_security(p: dict[str, Any]) -> None:
    p.pop("podSecurity", None)


def _baseline(p: dict[str, Any]) -> None:
    p["podSecurity"] = {"level": "baseline", "allowCapabilities": ["IPC_LOCK"]}


def _restricted_no_exceptions(p: dict[str, Any]) -> None:
    p["podSecurity"] = {"level": "restricted"}


def _tcp(p: dict[str, Any]) -> None:
    p["network"] = {"transport": "tcp", "socketInterface": "eth0"}


def _volcano(p: dict[str, Any]) -> None:
    p["scheduler"] = {"name": "volcano", "queue": "research"}


def _default_scheduler(p: dict[str, Any]) -> None:
    p["scheduler"] = {"name": "default"}


def _kueue_0_19_defaults(p: dict[str, Any]) -> None:
    p["scheduler"] = {"name": "kueue", "queue": "team"}
    p["installed"] = {"kueue": {"version": "0.19"}}


def _kueue_0_18(p: dict[str, Any]) -> None:
    p["scheduler"] = {"name": "kueue", "queue": "team"}
    p["installed"] = {"kueue": {"version": "0.18"}}


COMBINATIONS: dict[str, tuple[Edit, ...]] = {
    "as-shipped": (),
    "no-podSecurity": (_no_pod_security,),
    "baseline+IPC_LOCK": (_baseline,),
    "restricted-no-exceptions": (_restricted_no_exceptions,),
    "tcp-no-podSecurity": (_tcp, _no_pod_security),
    "volcano-everywhere": (_volcano,),
    "default-scheduler-baseline": (_default_scheduler, _baseline),
    "kueue-0.19-defaults": (_kueue_0_19_defaults,),
    "kueue-0.18-tcp": (_kueue_0_18, _tcp, _no_pod_security),
}


@pytest.mark.parametrize("name", list(COMBINATIONS))
def test_an_accepted_profile_renders_output_that_validates(name: str, tmp_path: Path) -> None:
    require_kustomize()
    root = copy_inputs(REPO, tmp_path)
    for path in sorted((root / "clusters").glob("*.yaml")):
        profile = yaml.safe_load(path.read_text())
        for edit in COMBINATIONS[name]:
            edit(profile)
        path.write_text(yaml.safe_dump(profile, sort_keys=False))
    try:
        repo = load_repository(root, frozenset(RULES_BY_SLUG))
    except InputError as err:
        # Refused at the door is fine: with file, line and what to do.
        assert all(p.line is not None and p.message for p in err.problems), err
        return
    findings = validate_repository(root, repo).findings
    errors = [f"{f.file}: {f.rule}: {f.message}" for f in findings if f.severity is Severity.ERROR]
    assert errors == []
