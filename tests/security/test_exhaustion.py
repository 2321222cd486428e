"""Issue 35 item 8: exhaustion, bounded in bytes and digits, not only in nodes; each refused at
the door (file:line, exit 2, nothing written, no traceback). The cluster's answers (a 1.2 GB
log body, JSON nested 100,000 deep) are tests/cluster/test_bounded_answers.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.tools import REPO, tree


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
    key = "      reduce_bucket_size: 500000000\n"
    assert key in text
    job.write_text(text.replace(key, '      reduce_bucket_size: "1e999999999"\n'))
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
