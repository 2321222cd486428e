"""Which key an unknown key of a spec stands for (the did-you-mean of `problems`): a short
or odd spelling of a required key the mapping lacks, or another tool's name for one of ours,
where difflib's similarity is too low to say."""

from __future__ import annotations

import difflib
from collections.abc import Sequence


def renamed(key: str, missing: Sequence[str]) -> str | None:
    """The required key, missing from the same mapping, that `key` is a short or odd spelling
    of (`gpus`, `gpu` for `gpusPerReplica`): the mapping holds one mistake, not two."""
    folded = _fold(key)
    for want in missing:
        if len(folded) >= 3 and folded in want.lower():
            return want
    near = difflib.get_close_matches(key, list(missing), n=1, cutoff=0.4)
    return near[0] if near else None


def _fold(key: str) -> str:
    return key.lower().replace("_", "").replace("-", "")


def contained(key: str, allowed: Sequence[str]) -> str | None:
    """The one allowed key that holds `key`'s letters or is held in them, as DeepSpeed's and
    other tools' names are spelt (`stage` or `zero_stage` for `zeroStage`,
    `gradient_accumulation_steps` for `gradientAccumulation`), too far apart for difflib."""
    folded = _fold(key)
    if len(folded) < 4:
        return None
    found = [a for a in allowed if folded in _fold(a) or (len(a) >= 6 and _fold(a) in folded)]
    return found[0] if len(found) == 1 else None
