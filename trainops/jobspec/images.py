"""Image references the kubelet cannot parse: it reports `InvalidImageName` and no pod of
the job starts, while every schema (a string) and the API server let them through.

The grammar is distribution/reference's (`reference.go`): `[domain/]path[:tag][@digest]`,
path components lower-case; a digest's algorithm fixes its length (go-digest: sha256 is 64
hex digits, sha512 128)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from trainops.jobspec.problems import Collector

_ALNUM = r"[a-z0-9]+"
_COMPONENT = rf"{_ALNUM}(?:(?:[._]|__|-+){_ALNUM})*"
_DOMAIN_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"([A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*):([0-9a-fA-F]{32,})"
_REFERENCE = re.compile(
    rf"^(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*(?::{_TAG})?(?:@{_DIGEST})?$"
)
_DIGEST_LENGTH = {"sha256": 64, "sha384": 96, "sha512": 128}
# Where a job spec names an image of its own.
_FIXED: tuple[tuple[str, ...], ...] = (("image",), ("dataSync", "image"))


def _images(d: dict[str, Any]) -> Iterator[tuple[list[str | int], Any]]:
    for where in _FIXED:
        node: Any = d
        for key in where:
            node = node.get(key) if isinstance(node, dict) else None
        if node is not None:
            yield list(where), node
    for i, sidecar in enumerate(d.get("sidecars") or ()):
        if isinstance(sidecar, dict) and "image" in sidecar:
            yield ["sidecars", i, "image"], sidecar["image"]


def image_problem(image: str) -> str | None:
    """Why the kubelet cannot parse `image`, or None."""
    match = _REFERENCE.match(image)
    if match is None:
        name, at, digest = image.partition("@")
        repository, colon, tag = name, "", ""
        if ":" in name.rsplit("/", 1)[-1]:
            repository, colon, tag = name.rpartition(":")
        if _REFERENCE.match(repository.lower() + colon + tag + at + digest):
            return "repository names are lower-case"
        if "@" in image and not re.search(r"@[A-Za-z0-9+._-]+:[0-9a-fA-F]{32,}$", image):
            return "a digest is `@sha256:` and 64 hex digits"
        if " " in image:
            return "it holds a space"
        return "it is not `[registry/]repository[:tag][@sha256:digest]`"
    algorithm, digest = match.group(1), match.group(2)
    want = _DIGEST_LENGTH.get(algorithm or "")
    if digest and want and len(digest) != want:
        return f"a {algorithm} digest is {want} hex digits, this one has {len(digest)}"
    return None


def check_images(d: dict[str, Any], out: Collector) -> None:
    """Each image the spec names parses as the kubelet parses it, at its line."""
    for path, image in _images(d):
        if not isinstance(image, str):
            continue
        why = image_problem(image)
        if why:
            out.add(
                path,
                f"image `{image}` is not a valid image reference ({why}): the kubelet refuses"
                " it (`InvalidImageName`) and no pod starts",
            )
