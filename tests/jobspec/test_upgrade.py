"""`trainops upgrade` (issue 33 item 10): a repository whose profiles predate `podSecurity`,
`jobAccess.sharedClaims`, `installed.kueue` and `providedByPlatform` gets every addition in one
run, with the lines to add; `--write` adds them and the repository then loads. A plain run
shows only the first layer (a profile failing one check is not checked further)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.tools import REPO, copy_inputs
from trainops.cli import main
from trainops.core.errors import InputError
from trainops.jobspec.load import load_repository

ADDED_SINCE = ("podSecurity", "jobAccess", "installed", "providedByPlatform")


def _old_repository(dest: Path) -> Path:
    """The shipped repository as an older release wrote it: none of the four blocks, and the
    platform objects installed by the platform rather than delivered from here."""
    root = copy_inputs(REPO, dest)
    for path in (root / "clusters").glob("*.yaml"):
        text = path.read_text()
        for key in ADDED_SINCE:
            text = re.sub(rf"^{key}:.*\n((?:[ #].*\n|\n)*)", "", text, flags=re.M)
        path.write_text(text)
    for manifests in (root / "clusters").glob("*/manifests"):
        shutil.rmtree(manifests.parent)
    return root


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_one_run_lists_every_addition_and_write_makes_it_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _old_repository(tmp_path / "repo")
    with pytest.raises(InputError) as first:
        load_repository(root)
    first_layer = {(a.cluster, a.path) for p in first.value.problems for a in p.additions}
    code, out, err = _run(capsys, "--root", str(root), "validate")
    assert code == 2 and "hint: `trainops upgrade` lists every addition" in err

    code, out, _ = _run(capsys, "--root", str(root), "upgrade")
    assert code == 1
    blocks = {
        name: yaml.safe_load("\n".join(line[2:] for line in body.splitlines()))
        for name, body in re.findall(r"^(clusters/\S+\.yaml): add.*:\n((?:  .*\n)+)", out, re.M)
    }
    assert set(blocks) == {
        f"clusters/{c}.yaml" for c in ("cloud-h100", "onprem-a100", "onprem-h200")
    }
    a100 = blocks["clusters/onprem-a100.yaml"]
    assert a100["podSecurity"] == {"level": "privileged", "allowCapabilities": ["IPC_LOCK"]}
    assert {"name": "nfsordma-checkpoints", "writable": True} in a100["jobAccess"]["sharedClaims"]
    assert a100["providedByPlatform"] == {
        "networks": ["rdma-net"], "priorityClasses": ["training"], "queues": ["research"]
    }  # fmt: skip
    integrations = blocks["clusters/cloud-h100.yaml"]["installed"]["kueue"]["integrations"]
    assert {"kubeflow.org/pytorchjob", "kubeflow.org/tfjob"} <= set(integrations)
    # The defaults stay listed: a list replaces Kueue 0.19's defaults (MPIJob v2beta1 among them).
    assert "kubeflow.org/mpijob" in integrations
    # More than one plain run would have shown: the onprem profiles stopped at podSecurity.
    found = sum(len(v) for b in blocks.values() for block in b.values() for v in block.values())
    assert found > len(first_layer)

    code, out, _ = _run(capsys, "--root", str(root), "upgrade", "--write")
    assert code == 0, out
    load_repository(root)  # loads: every addition was there
    code, out, _ = _run(capsys, "--root", str(root), "upgrade")
    assert (code, out) == (0, "the cluster profiles need no additions\n")


def test_write_merges_into_a_block_already_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A profile with `podSecurity: {level: restricted}` but no IPC_LOCK gains the capability
    and the one level whose admission allows it (`privileged`: jobspec/admission.py); the rest
    of the file is untouched, comments included."""
    root = copy_inputs(REPO, tmp_path / "repo")
    path = root / "clusters" / "onprem-a100.yaml"
    text = path.read_text()
    old = re.search(r"^podSecurity:.*\n((?:[ #].*\n)*)", text, re.M)
    assert old is not None
    text = text.replace(old.group(0), "podSecurity:\n  level: restricted\n")
    path.write_text(text)
    code, _, _ = _run(capsys, "--root", str(root), "upgrade", "--write")
    assert code == 0
    after = path.read_text()
    assert yaml.safe_load(after)["podSecurity"] == {
        "level": "privileged", "allowCapabilities": ["IPC_LOCK"]
    }  # fmt: skip
    assert after.replace(
        re.search(r"^podSecurity:.*\n((?:[ #].*\n)*)", after, re.M).group(0), ""
    ) == (text.replace("podSecurity:\n  level: restricted\n", ""))
