"""What import could not carry, and why: one note per field, positioned in the file the
field came from (`file:line: message`), printed by the CLI. Import never drops a field
without one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from trainops.core.errors import Problem
from trainops.core.yamlio import Document


class Notes:
    """Notes about one imported object, positioned through its document (and the documents
    of the objects beside it)."""

    def __init__(self, doc: Document, beside_docs: dict[int, Document] | None = None) -> None:
        self.doc = doc
        self.beside_docs = beside_docs or {}
        self.items: list[Problem] = []
        self.refused: list[Problem] = []
        """Bad input: the object cannot be imported for this cluster (exit 2)."""

    def add(self, path: Sequence[str | int], message: str) -> None:
        line, column = self.doc.position(list(path))
        self.items.append(Problem(self.doc.file, line, column, message))

    def refuse(self, path: Sequence[str | int], message: str) -> None:
        line, column = self.doc.position(list(path))
        self.refused.append(Problem(self.doc.file, line, column, message))

    def add_object(self, obj: dict[str, Any], message: str) -> None:
        doc = self.beside_docs.get(id(obj), self.doc)
        line, column = doc.position([])
        meta = obj.get("metadata") or {}
        self.items.append(
            Problem(doc.file, line, column, f"{obj.get('kind')} {meta.get('name')}: {message}")
        )
