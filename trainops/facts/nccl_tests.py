"""What NVIDIA nccl-tests' `all_reduce_perf` prints, and how to read it.

Format (nccl-tests src/common.cu, v2.13 to 2.16): a `#` header with the options and devices,
then one row per message size: `size count type redop root` and, out-of-place then in-place,
`time algbw busbw #wrong` (`time` in us, bandwidths in GB/s); then
`# Out of bounds values : N OK|FAILED` and `# Avg bus bandwidth    : X`. Bus bandwidth is the
figure to compare with the fabric (README "Performance": algbw corrected by 2(n-1)/n for
all-reduce, independent of the rank count). The average runs over every size, the small ones
included, so the fabric's figure is the bus bandwidth at the largest message.
https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The nccl-tests options of the preflight: 8 B to 8 GiB, doubling, one GPU per rank (MPI).
ALL_REDUCE_ARGV = ("all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "1")

_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.]+)", re.MULTILINE)
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)", re.MULTILINE)
# size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
_ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+\w+\s+\w+\s+-?\d+"
    r"\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)\s+(\d+|N/A)"
    r"\s+[0-9.]+\s+[0-9.]+\s+([0-9.]+)\s+(\d+|N/A)\s*$",
    re.MULTILINE,
)


@dataclass(frozen=True)
class AllReduceResult:
    avg_bus_bandwidth: float
    """`# Avg bus bandwidth`, GB/s, over every message size."""
    largest_bytes: int
    """The largest message size measured."""
    largest_bus_bandwidth: float
    """Bus bandwidth (GB/s) at the largest message: the better of out-of-place and in-place."""
    wrong: int
    """Wrong results counted over all rows and the out-of-bounds line (0 when correct)."""


def parse_all_reduce(text: str) -> AllReduceResult | None:
    """The result in an all_reduce_perf log, or None when it has none (the run did not finish)."""
    avg = _AVG.search(text)
    rows = _ROW.findall(text)
    if avg is None or not rows:
        return None
    wrong = sum(int(w) for r in rows for w in (r[3], r[5]) if w != "N/A")
    bounds = _OUT_OF_BOUNDS.search(text)
    if bounds is not None:
        wrong += int(bounds.group(1))
    size, _, out_bus, _, in_bus, _ = max(rows, key=lambda r: int(r[0]))
    return AllReduceResult(
        float(avg.group(1)), int(size), max(float(out_bus), float(in_bus)), wrong
    )


def shortfall(result: AllReduceResult, minimum_gbps: float | None) -> str | None:
    """Why the fabric fails the preflight, or None when it passes (no minimum: only
    correctness is judged)."""
    if result.wrong:
        return f"{result.wrong} wrong result(s): a GPU, NIC or NCCL setting corrupts data"
    if minimum_gbps is not None and result.largest_bus_bandwidth < minimum_gbps:
        return (
            f"bus bandwidth {result.largest_bus_bandwidth:g} GB/s at {result.largest_bytes} B"
            f" is below the profile's minBusBandwidthGBps {minimum_gbps:g}: check that NCCL"
            " uses RDMA (NCCL_DEBUG=INFO: `NET/IB`, not `NET/Socket`) and every rail is up"
        )
    return None
