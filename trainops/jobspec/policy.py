"""A cluster profile's `policy:` block, read the way users write it.

- YAML 1.1, which trainops reads with (PyYAML), turns an unquoted `off` (and `no`, `false`)
  into the boolean false, so `policy: {image-unpinned: off}`, as the docs show it, arrives
  as False. It can only mean "off", so it is read as "off".
- An unquoted `on` / `yes` / `true` arrives as True, which names no severity: a clear
  message says what to write instead of the schema's bare enum error.
- A slug that names no rule would be ignored without a word (the rule keeps its default
  severity), so it is an error, with a did-you-mean. The rules sit above the spec layer, so
  the caller (the CLI) passes their slugs in; without them names are not checked.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Collection
from typing import Any

from trainops.core.yamlio import Document

OFF = "off"

# (path inside the profile, message)
Problems = list[tuple[list[str | int], str]]


def read_policy(doc: Document, rule_slugs: Collection[str] = ()) -> tuple[Document, Problems]:
    """`doc` with `policy` values read as written (false -> "off"), and the problems found.

    Entries with a problem are left out of the returned document, so the schema check does
    not report them a second time; the profile is rejected anyway.
    """
    data = doc.data
    policy = data.get("policy") if isinstance(data, dict) else None
    if not isinstance(policy, dict):
        return doc, []
    problems: Problems = []
    slugs = sorted(rule_slugs)
    read: dict[Any, Any] = {}
    for slug, value in policy.items():
        path: list[str | int] = ["policy", str(slug)]
        if slugs and slug not in slugs:
            hint = difflib.get_close_matches(str(slug), slugs, n=1)
            did_you_mean = f"; did you mean `{hint[0]}`?" if hint else ""
            problems.append(
                (
                    path,
                    f"unknown rule `{slug}` in `policy`{did_you_mean}"
                    " (`trainops rules` lists them)",
                )
            )
            continue
        if value is True:
            written = doc.scalar_text(path) or "true"
            problems.append(
                (
                    path,
                    f"`policy.{slug}` is `{written}`, which YAML reads as true: write `error` or"
                    f" `warning` to set the rule's severity on this cluster, or `off`",
                )
            )
            continue
        read[slug] = OFF if value is False else value
    return dataclasses.replace(doc, data={**data, "policy": read}), problems
