"""Issue 33 item 6 end to end: seed 001's ZeRO-3 config with `allgather_bucket_size` (which
DeepSpeed 0.19.8 reads at stages 1 and 2 only) renders, and `render` and `validate` say, at
the key's line, that it does nothing; the shipped llm-finetune no longer sets it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.tools import trainops
from trainops.core.errors import InputError
from trainops.jobspec.load import load_repository

SEED_KEY = "      allgather_bucket_size: 500000000\n"


def _with_seed_key(root: Path) -> int:
    path = root / "jobs" / "llm-finetune.yaml"
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "reduce_scatter:" in line) + 1
    lines.insert(at, SEED_KEY)
    path.write_text("".join(lines))
    return at + 1


def test_the_shipped_jobs_set_nothing_their_stage_ignores(scratch: Path) -> None:
    try:
        repo = load_repository(scratch)
    except InputError as err:  # pragma: no cover - the shipped repository loads
        raise AssertionError(err) from err
    assert [str(n) for j in repo.jobs for n in j.notes] == []


def test_validate_warns_at_the_key_and_render_says_it(scratch: Path) -> None:
    line = _with_seed_key(scratch)
    rendered = trainops(scratch, "render")
    assert rendered.returncode == 0, rendered.stderr
    assert f"jobs/llm-finetune.yaml:{line}:7:" in rendered.stderr + rendered.stdout
    result = trainops(scratch, "validate", "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    (finding,) = [f for f in findings if "allgather_bucket_size" in f["message"]]
    assert (finding["rule"], finding["severity"]) == ("spec", "warning")
    assert (finding["file"], finding["line"]) == ("jobs/llm-finetune.yaml", line)
    assert "ZeRO stage 3 ignores it" in finding["message"]
