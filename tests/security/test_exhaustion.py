"""Issue 35 item 8: exhaustion, bounded in bytes and digits, not only in nodes; each refused at
the door (file:line, exit 2, nothing written, no traceback). The cluster's answers (a 1.2 GB
log body, JSON nested 100,000 deep) are tests/cluster/test_bounded_answers.py."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.rules.conftest import make_cluster
from tests.rules.helpers import manifests_from_text, run
from tests.tools import REPO, tree
from trainops.cluster.hang import detect
from trainops.cluster.logs import Log
from trainops.core.errors import InputError
from trainops.report.formats import from_json


def _refused_within(root: Path, seconds: float) -> str:
    """`trainops render` on `root` refuses (exit 2, nothing written, no traceback) within
    `seconds`; a hang is a failure, not a stuck suite."""
    before = tree(root)
    argv = [sys.executable, "-m", "trainops", "--root", str(root), "render"]
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, cwd=REPO, timeout=seconds, check=False
        )
    except subprocess.TimeoutExpired:
        raise AssertionError(f"`trainops render` still ran after {seconds:g}s") from None
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and "MemoryError" not in result.stderr
    assert tree(root) == before
    return result.stderr


def test_a_deepspeed_number_with_a_huge_exponent_is_refused_not_expanded(scratch: Path) -> None:
    """`"1e999999999"` where DeepSpeed wants an integer: main turned it into an int of a
    billion digits (`int(Decimal(...))`) and validate hung."""
    job = scratch / "jobs/llm-finetune.yaml"
    text = job.read_text()
    key = "      reduce_scatter: true\n"
    assert key in text
    job.write_text(text.replace(key, key + '      reduce_bucket_size: "1e999999999"\n'))
    err = _refused_within(scratch, 60)
    line = next(i for i, x in enumerate(job.read_text().splitlines(), 1) if "1e999999999" in x)
    assert f"jobs/llm-finetune.yaml:{line}:" in err, err


def test_one_string_aliased_thousands_of_times_is_refused_by_its_bytes(scratch: Path) -> None:
    """A 230 KB spec aliasing one 200 KB string 5,000 times is 5,000 nodes (under the node
    bound) and a gigabyte of text: main ended in MemoryError."""
    big = "x" * 200_000
    job = scratch / "jobs/llm-finetune.yaml"
    text = job.read_text()
    aliases = "".join("  - *big\n" for _ in range(5_000))
    assert "\nargs:\n" in text
    job.write_text(text.replace("\nargs:\n", f"\nargs:\n  - &big {big}\n{aliases}"))
    err = _refused_within(scratch, 120)
    assert "jobs/llm-finetune.yaml:" in err and "bytes of text" in err, err


DEEP = "[" * 100_000 + "]" * 100_000  # past the JSON decoder's stack


def test_a_deepspeed_configmap_nested_100000_deep_is_a_finding_not_a_traceback() -> None:
    """`validate --manifests`: the ConfigMap a job's `--deepspeed` names is parsed as JSON."""
    fixture = REPO / "tests/rules/fixtures/deepspeed-batch-mismatch/fail.yaml"
    docs = list(yaml.safe_load_all(fixture.read_text()))
    docs[1]["data"]["ds.json"] = DEEP
    findings = run(manifests_from_text(yaml.safe_dump_all(docs)), make_cluster())
    assert any("nests too deep" in f.message for f in findings), [f.message for f in findings]


def test_a_report_input_nested_100000_deep_is_bad_input(tmp_path: Path) -> None:
    findings = tmp_path / "findings.json"
    findings.write_text(DEEP)
    with pytest.raises(InputError, match="not `trainops validate --format json` output"):
        from_json(findings)


def test_a_log_line_nested_100000_deep_is_no_step() -> None:
    """A pod's log line (what `status` and `explain` read for the last step) is anything: a
    step line nested past the decoder's stack is skipped, the step before it is read."""
    now = dt.datetime(2026, 1, 1, 1, tzinfo=dt.UTC)
    deep = '{"event": "step", "x": ' + DEEP + "}"
    step = '{"event": "step", "step": 7}'
    log = Log("p", "c", False, [step, deep], ["2026-01-01T00:00:00Z", "2026-01-01T00:59:00Z"])
    found = detect([log], {}, now, stall_seconds=60)
    assert found is not None and "last step 7 at 2026-01-01T00:00:00+00:00" in found.cause
