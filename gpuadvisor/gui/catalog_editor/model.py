"""The table model over one catalog's rows (``column -> CSV text``), validated cell by cell."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QBrush, QUndoStack

from ...core.errors import CatalogError
from ...core.formats import user_catalog as uc
from .columns import (
    ADDED_BRUSH,
    INVALID_BRUSH,
    KIND_TITLES,
    MODIFIED_BRUSH,
    ROLE_SORT,
    STALE_BRUSH,
    TINTED_TEXT_BRUSH,
    clean_number_text,
    column_label,
    column_unit,
    is_numeric,
    number_or_none,
)
from .commands import SetCellCommand

_CLOUD = ("cloud_usd_per_hour_low", "cloud_usd_per_hour_expected", "cloud_usd_per_hour_high")
_CLOUD_WORDS = {
    "cloud_usd_per_hour_low": "low",
    "cloud_usd_per_hour_expected": "expected",
    "cloud_usd_per_hour_high": "high",
}


def price_order_problem(row: dict[str, str], column: str) -> str:
    """Why a typed cloud price puts the expected price above the high one ("" when it does not). The
    catalog's reader widens the range to take an expected price outside it (a quote from a file);
    typed in the editor, an expected price above the high one is more often a slip (25 for 2.5)
    than a quote, so it is refused rather than silently raising the high price. A quote below the
    low price is taken: a negotiated deal is below the market's range."""
    if column not in ("cloud_usd_per_hour_expected", "cloud_usd_per_hour_high"):
        return ""
    expected = number_or_none(row.get("cloud_usd_per_hour_expected", "") or "")
    high = number_or_none(row.get("cloud_usd_per_hour_high", "") or "")
    if expected is None or high is None or expected <= high:
        return ""
    if column == "cloud_usd_per_hour_expected":
        return (
            f"the expected price {expected:g} is above the high price {high:g}: change the high price first"
        )
    return (
        f"the high price {high:g} is below the expected price {expected:g}: change the expected price first"
    )


class CatalogModel(QAbstractTableModel):
    """One catalog as editable text rows; every change goes through the undo stack."""

    changed = Signal()
    rejected = Signal(str)  # a change that was refused, with the reason

    def __init__(
        self,
        kind: str,
        rows: list[dict[str, str]],
        undo: QUndoStack,
        stale_months: int = 6,
        today: _dt.date | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        uc.check_kind(kind)
        self.kind = kind
        self.columns = uc.columns(kind)
        self.undo = undo
        self.stale_months = stale_months
        self.today = today or _dt.date.today()
        self._bundled = {r["id"]: r for r in uc.bundled_rows(kind)}
        self.rows: list[dict[str, str]] = [uc.full_row(kind, r) for r in rows]
        self._errors: dict[int, tuple[str | None, str]] = {}
        self.last_refusal = ""  # why the last edit was refused ("" when it was not)
        self._revalidate()

    # -- what the views ask -------------------------------------------------------------------------
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal:
            column = self.columns[section]
            if role == Qt.ItemDataRole.DisplayRole:
                return column_label(column)
            if role == Qt.ItemDataRole.ToolTipRole:
                unit = column_unit(column)
                return f"{column}" + (f" (in {unit})" if unit else "")
            return None
        if role == Qt.ItemDataRole.DisplayRole and 0 <= section < len(self.rows):
            # The id doubles as the row header, so it stays in view when scrolling sideways;
            # the marks say invalid (!), changed (✎) or added (+).
            mark = {"modified": "✎ ", "added": "+ "}.get(self.status(section), "")
            return (
                f"{'! ' if section in self._errors else ''}{mark}{self.rows[section].get('id') or '(no id)'}"
            )
        if role == Qt.ItemDataRole.ToolTipRole and 0 <= section < len(self.rows):
            return self.row_summary(section)
        return None

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if not index.isValid():
            return None
        row, column = index.row(), self.columns[index.column()]
        value = self.rows[row].get(column, "")
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return value
        if role == ROLE_SORT:
            if is_numeric(column):
                number = number_or_none(value)
                return (0, number) if number is not None else (1, value)
            return (0, value.lower())
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return (
                int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                if is_numeric(column)
                else int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
            )
        if role == Qt.ItemDataRole.BackgroundRole:
            return self._tint(row, column)
        if role == Qt.ItemDataRole.ForegroundRole:
            return TINTED_TEXT_BRUSH if self._tint(row, column) is not None else None
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.cell_tooltip(row, column)
        return None

    def _tint(self, row: int, column: str) -> QBrush | None:
        """The cell's background: an error, a stale price, an added row or a changed cell (or None)."""
        if self.cell_error(row, column):
            return INVALID_BRUSH
        if column == "price_as_of" and self.is_stale(row):
            return STALE_BRUSH
        status = self.status(row)
        if status == "added":
            return ADDED_BRUSH
        if status == "modified" and column in self.changed_columns(row):
            return MODIFIED_BRUSH
        return None

    def setData(
        self, index: QModelIndex | QPersistentModelIndex, value: Any, role: int = Qt.ItemDataRole.EditRole
    ) -> bool:
        """Change one cell; a value that would take a valid row out of the comparison is refused,
        with the reason (``rejected``, and :attr:`last_refusal` for the cell's editor)."""
        if not index.isValid() or role != Qt.ItemDataRole.EditRole:
            return False
        row, column = index.row(), self.columns[index.column()]
        text = "" if value is None else str(value).strip()
        if is_numeric(column):
            text = clean_number_text(text)  # "$2.5" is a price
        self.last_refusal = ""
        old = self.rows[row].get(column, "")
        if text == old:
            return False
        reason = self.id_problem(text, row) if column == "id" else self.cell_problem(row, column, text)
        if reason:
            self.last_refusal = f"{column_label(column)}: {reason}"
            row_id = self.rows[row].get("id") or f"row {row + 1}"
            self.rejected.emit(f"{KIND_TITLES[self.kind]}, {row_id}, {self.last_refusal}")
            return False
        self.undo.push(SetCellCommand(self, row, column, old, text))
        return True

    def cell_problem(self, row: int, column: str, text: str) -> str:
        """Why ``text`` in ``column`` of ``row`` is refused ("" when it is not): a row that is in the
        comparison must stay in it, so a value that makes it fail the catalog's checks is refused
        where it is typed. A row that is already incomplete (just added, or imported with a
        problem) takes any value, so it can be completed one cell at a time."""
        if row in self._errors:
            return ""
        candidate = {**self.rows[row], column: text}
        try:
            uc.validate_row(self.kind, candidate, origin=KIND_TITLES[self.kind], today=self.today)
        except CatalogError as exc:
            bad = uc.error_column(exc)
            words = exc.reason + ("" if exc.value is None else f" (got {exc.value!r})")
            return words if bad in (None, column) else f"{column_label(bad)} would then be wrong: {words}"
        return price_order_problem(candidate, column)

    # -- facts about rows ---------------------------------------------------------------------------
    def id_problem(self, text: str, row: int | None = None) -> str:
        """Why ``text`` cannot be the id of ``row`` ("" when it can): ids must be unique and present."""
        if not text:
            return "is required (every row needs a unique id)"
        if any(r.get("id") == text for i, r in enumerate(self.rows) if i != row):
            return f"'{text}' is already used by another row (ids must be unique)"
        return ""

    def status(self, row: int) -> str:
        """``bundled`` (as shipped), ``modified`` (a bundled row with changes) or ``added``."""
        base = self._bundled.get(self.rows[row].get("id", ""))
        if base is None:
            return "added"
        return "modified" if self.changed_columns(row) else "bundled"

    def changed_columns(self, row: int) -> frozenset[str]:
        base = self._bundled.get(self.rows[row].get("id", ""))
        if base is None:
            return frozenset(self.columns)
        r = self.rows[row]
        return frozenset(c for c in self.columns if r.get(c, "") != base.get(c, ""))

    def bundled_row(self, row: int) -> dict[str, str] | None:
        base = self._bundled.get(self.rows[row].get("id", ""))
        return dict(base) if base is not None else None

    def cell_error(self, row: int, column: str) -> str:
        """The validation message of this cell ("" when the cell is fine)."""
        err = self._errors.get(row)
        if err is None:
            return ""
        col, message = err
        return message if col == column or (col is None and column == "id") else ""

    def row_error(self, row: int) -> str:
        err = self._errors.get(row)
        return err[1] if err else ""

    def invalid_rows(self) -> list[int]:
        return sorted(self._errors)

    def is_stale(self, row: int) -> bool:
        if self.kind != "gpus":
            return False
        return uc.stale_price(self.rows[row], self.today, self.stale_months)

    def cell_tooltip(self, row: int, column: str) -> str:
        parts = []
        error = self.cell_error(row, column)
        if error:
            parts.append(f"Invalid: {error}")
        if column == "price_as_of" and self.is_stale(row):
            value = self.rows[row].get(column, "")
            parts.append(
                f"Stale price: {'undated' if not value else 'dated ' + value}, older than "
                f"{self.stale_months} months. Update the prices or import a price list."
            )
        base = self.bundled_row(row)
        if base is not None and column in self.changed_columns(row):
            parts.append(f"Bundled value: {base.get(column) or '(empty)'}")
        unit = column_unit(column)
        value = self.rows[row].get(column, "")
        if not parts and len(value) > 40:
            parts.append(value)
        if unit and not parts:
            parts.append(f"{column_label(column)}")
        return "\n".join(parts)

    def row_summary(self, row: int) -> str:
        status = self.status(row)
        text = {
            "bundled": "As bundled",
            "modified": "Bundled row with your changes",
            "added": "Added by you",
        }[status]
        error = self.row_error(row)
        if error:
            text += f"\nLeft out of the estimates: {error}"
        return text

    # -- changing (only the undo commands call these) ----------------------------------------
    def _set_cell(self, row: int, column: str, value: str) -> None:
        self.rows[row][column] = value
        self._revalidate_row(row)
        self.dataChanged.emit(self.index(row, 0), self.index(row, len(self.columns) - 1))
        self.headerDataChanged.emit(Qt.Orientation.Vertical, row, row)
        self.changed.emit()

    def _replace_rows(self, rows: list[dict[str, str]]) -> None:
        self.beginResetModel()
        self.rows = [uc.full_row(self.kind, r) for r in rows]
        self._revalidate()
        self.endResetModel()
        self.changed.emit()

    def _adopt_rows(self, rows: list[dict[str, str]]) -> None:
        """Show ``rows`` as saved (another program's changes merged in): no undo step, no new save."""
        self.beginResetModel()
        self.rows = [uc.full_row(self.kind, r) for r in rows]
        self._revalidate()
        self.endResetModel()

    def snapshot(self) -> list[dict[str, str]]:
        return [dict(r) for r in self.rows]

    def set_stale_months(self, months: int) -> None:
        self.stale_months = months
        if self.rows:
            col = self.columns.index("price_as_of") if "price_as_of" in self.columns else 0
            self.dataChanged.emit(self.index(0, col), self.index(len(self.rows) - 1, col))

    def _revalidate(self) -> None:
        self._errors = {}
        for i in range(len(self.rows)):
            self._revalidate_row(i)

    def _revalidate_row(self, row: int) -> None:
        try:
            uc.validate_row(self.kind, self.rows[row], origin=KIND_TITLES[self.kind], today=self.today)
        except CatalogError as exc:
            self._errors[row] = (uc.error_column(exc), uc.describe_error(exc))
        else:
            self._errors.pop(row, None)
