"""Undo commands: one cell, or whole rows (imports, price updates, resets, restores)."""

from __future__ import annotations

from typing import Protocol

from PySide6.QtGui import QUndoCommand

from .columns import column_label


class EditableRows(Protocol):
    """What the commands change: the table model's rows (see :class:`.model.CatalogModel`)."""

    rows: list[dict[str, str]]

    def _set_cell(self, row: int, column: str, value: str) -> None: ...

    def _replace_rows(self, rows: list[dict[str, str]]) -> None: ...


class SetCellCommand(QUndoCommand):
    """One cell edited."""

    def __init__(self, model: EditableRows, row: int, column: str, old: str, new: str) -> None:
        row_id = model.rows[row].get("id", "") or f"row {row + 1}"
        super().__init__(f"Edit {row_id} {column_label(column)}")
        self.model, self.row, self.column, self.old, self.new = model, row, column, old, new

    def redo(self) -> None:
        self.model._set_cell(self.row, self.column, self.new)

    def undo(self) -> None:
        self.model._set_cell(self.row, self.column, self.old)


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
