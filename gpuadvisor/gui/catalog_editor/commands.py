"""Undo commands: one cell, whole rows (imports, price updates, resets, restores), and the
cloud instance types a price-list import saves."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from PySide6.QtGui import QUndoCommand

from .columns import column_label


class EditableRows(Protocol):
    """What the commands change: the table model's rows (see :class:`.model.CatalogModel`)."""

    rows: list[dict[str, str]]

    def _set_cell(self, row: int, column: str, value: str) -> None: ...

    def _replace_rows(self, rows: list[dict[str, str]]) -> None: ...


class SetCellCommand(QUndoCommand):
    """One cell edited. The row is found by its id when the command runs (its id before the edit on
    redo, after it on undo), so the command still reaches its row after the table took in another
    program's rows, which may move it; a row another program removed leaves nothing to change."""

    def __init__(self, model: EditableRows, row: int, column: str, old: str, new: str) -> None:
        row_id = model.rows[row].get("id", "")
        super().__init__(f"Edit {row_id or f'row {row + 1}'} {column_label(column)}")
        self.model, self.row, self.column, self.old, self.new = model, row, column, old, new
        self.id_before = row_id
        self.id_after = new if column == "id" else row_id

    def _index(self, row_id: str) -> int | None:
        if row_id:
            found = [i for i, r in enumerate(self.model.rows) if r.get("id") == row_id]
            if len(found) == 1:
                return found[0]
            if not found:
                return None
        return self.row if 0 <= self.row < len(self.model.rows) else None  # no id to go by

    def redo(self) -> None:
        row = self._index(self.id_before)
        if row is not None:
            self.model._set_cell(row, self.column, self.new)

    def undo(self) -> None:
        row = self._index(self.id_after)
        if row is not None:
            self.model._set_cell(row, self.column, self.old)


class RowsCommand(QUndoCommand):
    """Any change of the rows as a whole (add, duplicate, delete, import, reset, restore)."""

    def __init__(
        self,
        model: EditableRows,
        before: list[dict[str, str]],
        after: list[dict[str, str]],
        text: str,
        parent: QUndoCommand | None = None,
    ) -> None:
        super().__init__(text, parent)
        self.model, self.before, self.after = model, before, after

    def redo(self) -> None:
        self.model._replace_rows(self.after)

    def undo(self) -> None:
        self.model._replace_rows(self.before)

    def rebase(self, move: Callable[[list[dict[str, str]]], list[dict[str, str]]]) -> None:
        """Move both tables onto a table that took in another program's changes (``move``)."""
        self.before, self.after = move(self.before), move(self.after)


class InstancesCommand(QUndoCommand):
    """The cloud instance types a price-list import saved: undo puts back the rows the import
    replaced (of its providers only: what another program imported meanwhile stays), redo the
    rows it wrote. ``put(providers, rows, updated)`` writes them and hands the effective snapshot
    on; it reports its own failures. The import has already written the file when the command is
    pushed, so the first redo writes nothing."""

    def __init__(
        self,
        providers: Sequence[str],
        before: Sequence[Any],
        after: Sequence[Any],
        updated: str,
        put: Callable[[Sequence[str], Sequence[Any], str], None],
        parent: QUndoCommand | None = None,
    ) -> None:
        super().__init__("Save cloud instance types", parent)
        self.providers, self.before, self.after = tuple(providers), tuple(before), tuple(after)
        self.updated, self.put = updated, put
        self._written = True

    def redo(self) -> None:
        if self._written:
            self._written = False
            return
        self.put(self.providers, self.after, self.updated)

    def undo(self) -> None:
        self.put(self.providers, self.before, "")
