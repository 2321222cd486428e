"""A Kubernetes object read from YAML, with the way back to its file and line."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trainops.core.yamlio import Document

FieldPath = tuple[str | int, ...]
"""A place inside an object: keys and list indexes, e.g. ("spec", "template", "spec")."""


@dataclass
class Manifest:
    """One object: its data, and where it came from (for findings)."""

    data: dict[str, Any]
    file: str | None = None
    """File shown in findings (a manifest file, or the rendered file the object came from)."""
    document: Document | None = None
    """Parsed document, when `file` holds this object's YAML: gives lines for paths."""
    source_line: int | None = None
    """Line for every path when there is no document: `file` only declares the object
    (e.g. the kustomization entry of a configMapGenerator that produced it)."""
    cluster: str | None = None
    """Cluster whose overlay produced it, for rendered output."""

    @property
    def api_version(self) -> str:
        return str(self.data.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.data.get("kind", ""))

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.data.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def name(self) -> str | None:
        name = self.metadata.get("name")
        return str(name) if name is not None else None

    @property
    def namespace(self) -> str | None:
        ns = self.metadata.get("namespace")
        return str(ns) if ns is not None else None

    def line_of(self, path: Sequence[str | int] = ()) -> int | None:
        """1-based line of `path` inside the object, when we have its document."""
        if self.document is None:
            return self.source_line
        return self.document.line_of(path)
