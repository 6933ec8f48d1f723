"""The catalog editor: the user's own GPUs, prices and model presets, stored safely.

One window with a tab per catalog (GPUs, model presets). Each tab is a table over the full
catalog rows as text (``column -> CSV text``, :mod:`gpuadvisor.core.user_catalog`), with:

* editors suited to each column (numbers with their unit, prices in USD, dates with a calendar,
  choices), sorting and a search box;
* every cell checked with the core's row validation: an invalid cell is marked red and its
  tooltip names the column and the rule; modified cells are tinted and show the bundled value;
  prices older than the configured age are flagged;
* undo and redo for every change (one :class:`QUndoStack` for the whole editor, Ctrl+Z /
  Ctrl+Shift+Z), including imports, price-list updates, resets and backup restores;
* import (CSV or JSON, with a preview of what is added, updated and rejected, line by line),
  export (round-trips exactly), cloud price lists (gpuhunt, SkyPilot) with a preview, "reset to
  bundled" for one row or all, and restoring a backup of the user catalog.

Every change is saved at once (atomically, with a backup of the previous file) as overrides on
top of the bundled catalogs, and :attr:`CatalogEditor.catalogsChanged` hands the merged,
validated catalogs to the estimates, so charts follow edits live. Rows that fail validation
stay in the editor, marked, and are left out of the estimates with a warning.
"""

from __future__ import annotations

import datetime as _dt
import html
import logging
import re
from pathlib import Path
from typing import Callable

from PySide6.QtCore import (QAbstractTableModel, QDate, QModelIndex, QSortFilterProxyModel, Qt, QTimer,
                            Signal)
from PySide6.QtGui import QAction, QBrush, QColor, QKeySequence, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (QComboBox, QDateEdit, QDialog, QDialogButtonBox, QFileDialog, QHBoxLayout,
                               QHeaderView, QInputDialog, QLabel, QLineEdit, QMainWindow, QMessageBox,
                               QPlainTextEdit, QSpinBox, QStyledItemDelegate, QTableView, QTabWidget,
                               QToolBar, QVBoxLayout, QWidget)

from ..core import user_catalog as uc
from ..core.catalog_exchange import ImportReport, export_text, import_file
from ..core.errors import CatalogError, InputError
from ..core.hardware import KNOWN_ARCHITECTURES, GpuCatalog
from ..core.presets import ModelCatalog
from ..storage import StorageError, atomic_write_text
from ..storage.user_catalog_store import restore_user_catalog, save_user_catalog, user_catalog_backups

log = logging.getLogger(__name__)

KIND_TITLES = {"gpus": "GPUs", "models": "Model presets"}
ROLE_SORT = Qt.ItemDataRole.UserRole + 1
INVALID_BRUSH = QBrush(QColor("#f8c9cf"))
MODIFIED_BRUSH = QBrush(QColor("#fff3c4"))
ADDED_BRUSH = QBrush(QColor("#dff3e3"))
STALE_BRUSH = QBrush(QColor("#ffd9a8"))

#: Choices offered by the cell editors; an editable combo box still accepts other text.
CHOICES: dict[str, tuple[str, ...]] = {
    "architecture": tuple(sorted(KNOWN_ARCHITECTURES)),
    "vendor": ("nvidia", "amd", "intel", "other"),
    "form_factor": ("pcie", "sxm", "oam", "nvl", "superchip", "other"),
    "memory_type": ("GDDR6", "GDDR6X", "GDDR7", "HBM2", "HBM2e", "HBM3", "HBM3e", "LPDDR5X"),
    "kind": ("decoder", "encoder"),
    "position_embedding": ("rope", "learned", "alibi", "none"),
    "norm": ("rmsnorm", "layernorm"),
}
BOOLEAN_COLUMNS = frozenset({"gated_mlp", "tied_embeddings", "attention_bias", "attention_out_bias", "mlp_bias"})
#: Only these choices are enforced (the others are suggestions): the core rejects anything else.
STRICT_CHOICES = frozenset({"architecture", "kind"})
DATE_COLUMNS = frozenset({"price_as_of"})
TEXT_COLUMNS = frozenset({"id", "name", "family", "hf_model_type", "source", "notes"})
_WORDS = {"gib": "GiB", "gb": "GB", "usd": "USD", "tflops": "TFLOPS", "tops": "TOPS", "fp32": "FP32",
          "tf32": "TF32", "fp16": "FP16", "bf16": "BF16", "fp8": "FP8", "int8": "INT8", "fp4": "FP4",
          "tdp": "TDP", "nvlink": "NVLink", "pcie": "PCIe", "mig": "MIG", "id": "Id", "hf": "HF",
          "moe": "MoE", "mlp": "MLP", "kv": "KV", "mlp_bias": "MLP bias"}


def column_unit(column: str) -> str:
    """The unit a numeric column is stored in (``""`` for plain counts and text)."""
    if column.startswith("cloud_usd_per_hour"):
        return "USD per GPU-hour"
    if column.startswith("purchase_") and "_usd" in column:
        return "USD"
    for suffix, unit in (("_gb_s", "GB/s"), ("_gib_usable", "GiB"), ("_gib", "GiB"), ("_gb", "GB"),
                         ("_tflops", "TFLOPS"), ("_tops", "TOPS"), ("_w", "W")):
        if column.endswith(suffix):
            return unit
    return ""


def column_label(column: str) -> str:
    """A readable header: ``memory_bandwidth_gb_s`` -> ``Memory bandwidth (GB/s)``."""
    unit = column_unit(column)
    name = column
    for suffix in ("_usd_per_hour", "_gb_s", "_tflops", "_tops", "_gib", "_gb", "_w", "_usd"):
        if suffix in name and unit:
            name = name.replace(suffix, "")
    name = name.replace("cloud", "cloud price").replace("purchase_new", "purchase new") \
        .replace("purchase_used", "purchase used")
    words = [_WORDS.get(w, w) for w in name.split("_") if w]
    text = " ".join(words)
    text = text[:1].upper() + text[1:]
    return f"{text} ({unit})" if unit else text


def is_numeric(column: str) -> bool:
    return column not in TEXT_COLUMNS and column not in DATE_COLUMNS and column not in CHOICES \
        and column not in BOOLEAN_COLUMNS


def _number_or_none(text: str) -> float | None:
    try:
        return float(text.replace(",", "").replace("_", ""))
    except ValueError:
        return None


# --- model ------------------------------------------------------------------------------------
class CatalogModel(QAbstractTableModel):
    """One catalog as editable text rows; every change goes through the undo stack."""

    changed = Signal()
    rejected = Signal(str)  # a change that was refused, with the reason

    def __init__(self, kind: str, rows: list[dict[str, str]], undo: QUndoStack, stale_months: int = 6,
                 today: _dt.date | None = None, parent=None) -> None:
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
        self._revalidate()

    # -- what the views ask -------------------------------------------------------------------------
    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
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
            return f"{'! ' if section in self._errors else ''}{mark}{self.rows[section].get('id') or '(no id)'}"
        if role == Qt.ItemDataRole.ToolTipRole and 0 <= section < len(self.rows):
            return self.row_summary(section)
        return None

    def flags(self, index):
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        row, column = index.row(), self.columns[index.column()]
        value = self.rows[row].get(column, "")
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return value
        if role == ROLE_SORT:
            if is_numeric(column):
                number = _number_or_none(value)
                return (0, number) if number is not None else (1, value)
            return (0, value.lower())
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter) if is_numeric(column) \
                else int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.BackgroundRole:
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
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.cell_tooltip(row, column)
        return None

    def setData(self, index, value, role=Qt.ItemDataRole.EditRole) -> bool:  # noqa: N802
        if not index.isValid() or role != Qt.ItemDataRole.EditRole:
            return False
        row, column = index.row(), self.columns[index.column()]
        text = "" if value is None else str(value).strip()
        old = self.rows[row].get(column, "")
        if text == old:
            return False
        if column == "id":
            reason = self.id_problem(text, row)
            if reason:
                self.rejected.emit(f"{KIND_TITLES[self.kind]}, row {row + 1}, column id: {reason}")
                return False
        self.undo.push(SetCellCommand(self, row, column, old, text))
        return True

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
            parts.append(f"Stale price: {'undated' if not value else 'dated ' + value}, older than "
                         f"{self.stale_months} months. Update the prices or import a price list.")
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
        text = {"bundled": "As bundled", "modified": "Bundled row with your changes",
                "added": "Added by you"}[status]
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


# --- undo commands ----------------------------------------------------------------------------
class SetCellCommand(QUndoCommand):
    """One cell edited."""

    def __init__(self, model: CatalogModel, row: int, column: str, old: str, new: str) -> None:
        row_id = model.rows[row].get("id", "") or f"row {row + 1}"
        super().__init__(f"Edit {row_id} {column_label(column)}")
        self.model, self.row, self.column, self.old, self.new = model, row, column, old, new

    def redo(self) -> None:
        self.model._set_cell(self.row, self.column, self.new)

    def undo(self) -> None:
        self.model._set_cell(self.row, self.column, self.old)


class RowsCommand(QUndoCommand):
    """Any change of the rows as a whole (add, duplicate, delete, import, reset, restore)."""

    def __init__(self, model: CatalogModel, before: list[dict[str, str]], after: list[dict[str, str]],
                 text: str, parent: QUndoCommand | None = None) -> None:
        super().__init__(text, parent)
        self.model, self.before, self.after = model, before, after

    def redo(self) -> None:
        self.model._replace_rows(self.after)

    def undo(self) -> None:
        self.model._replace_rows(self.before)


# --- cell editors -----------------------------------------------------------------------------
class NumberEditor(QWidget):
    """A number with its unit beside it; empty means unknown. Any text is accepted here and the
    model marks what the core rejects, so nothing is silently dropped."""

    def __init__(self, unit: str, parent=None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 2, 0)
        layout.setSpacing(3)
        self.line = QLineEdit(self)
        self.line.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.line.setPlaceholderText("empty = unknown")
        layout.addWidget(self.line, 1)
        if unit:
            label = QLabel(unit.replace(" per GPU-hour", "/GPU-h"), self)
            label.setStyleSheet("color: #555;")
            layout.addWidget(label)
        self.setFocusProxy(self.line)
        self.setAutoFillBackground(True)

    def text(self) -> str:
        return self.line.text()

    def setText(self, text: str) -> None:  # noqa: N802 - Qt style
        self.line.setText(text)
        self.line.selectAll()


class CatalogDelegate(QStyledItemDelegate):
    """Picks the editor from the column: a number with its unit, a date, a choice or plain text."""

    def __init__(self, model: CatalogModel, parent=None) -> None:
        super().__init__(parent)
        self._model = model

    def _column(self, index) -> str:
        return self._model.columns[index.column()]

    def createEditor(self, parent, option, index):  # noqa: N802 - Qt override
        column = self._column(index)
        if column in BOOLEAN_COLUMNS or column in CHOICES:
            box = QComboBox(parent)
            choices = ("", "true", "false") if column in BOOLEAN_COLUMNS else ("",) + CHOICES[column]
            box.addItems(list(choices))
            box.setEditable(column not in BOOLEAN_COLUMNS and column not in STRICT_CHOICES)
            return box
        if column in DATE_COLUMNS:
            edit = QDateEdit(parent)
            edit.setCalendarPopup(True)
            edit.setDisplayFormat("yyyy-MM-dd")
            edit.setMinimumDate(QDate(1999, 12, 31))
            edit.setSpecialValueText("(no date)")  # the minimum date stands for "empty"
            return edit
        if is_numeric(column):
            return NumberEditor(column_unit(column), parent)
        return super().createEditor(parent, option, index)

    def setEditorData(self, editor, index) -> None:  # noqa: N802 - Qt override
        value = index.data(Qt.ItemDataRole.EditRole) or ""
        if isinstance(editor, QComboBox):
            i = editor.findText(value)
            if i < 0 and editor.isEditable():
                editor.setEditText(value)
            else:
                editor.setCurrentIndex(max(i, 0))
        elif isinstance(editor, QDateEdit):
            date = QDate.fromString(value, "yyyy-MM-dd")
            editor.setDate(date if date.isValid() else editor.minimumDate())
        elif isinstance(editor, NumberEditor):
            editor.setText(value)
        else:
            super().setEditorData(editor, index)

    def setModelData(self, editor, model, index) -> None:  # noqa: N802 - Qt override
        if isinstance(editor, QComboBox):
            model.setData(index, editor.currentText())
        elif isinstance(editor, QDateEdit):
            date = editor.date()
            model.setData(index, "" if date == editor.minimumDate() else date.toString("yyyy-MM-dd"))
        elif isinstance(editor, NumberEditor):
            model.setData(index, editor.text())
        else:
            super().setModelData(editor, model, index)


class CatalogProxy(QSortFilterProxyModel):
    """Sorts numbers as numbers and filters on any column (case-insensitive)."""

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setSortRole(ROLE_SORT)
        self.setFilterKeyColumn(-1)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)

    def lessThan(self, left, right) -> bool:  # noqa: N802 - Qt override
        a, b = left.data(ROLE_SORT), right.data(ROLE_SORT)
        try:
            return a < b
        except TypeError:
            return str(a) < str(b)


# --- one tab ----------------------------------------------------------------------------------
class CatalogTab(QWidget):
    """The table of one catalog with its search box."""

    def __init__(self, model: CatalogModel, parent=None) -> None:
        super().__init__(parent)
        self.model = model
        self.proxy = CatalogProxy(self)
        self.proxy.setSourceModel(model)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        self.search = QLineEdit(self)
        self.search.setPlaceholderText(f"Search {KIND_TITLES[model.kind].lower()} (any column)…")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self.proxy.setFilterFixedString)
        top.addWidget(self.search, 1)
        self.counts = QLabel(self)
        top.addWidget(self.counts)
        layout.addLayout(top)
        self.table = QTableView(self)
        self.table.setModel(self.proxy)
        self.table.setItemDelegate(CatalogDelegate(model, self.table))
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QTableView.EditTrigger.DoubleClicked | QTableView.EditTrigger.EditKeyPressed
                                   | QTableView.EditTrigger.AnyKeyPressed)
        self.table.verticalHeader().setDefaultSectionSize(22)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # Wide enough for the header and the values; long texts (name, source, notes) capped.
        header.setResizeContentsPrecision(60)
        self.table.resizeColumnsToContents()
        for i, column in enumerate(model.columns):
            cap = {"name": 260, "source": 320, "notes": 320}.get(column, 220)
            if self.table.columnWidth(i) > cap:
                self.table.setColumnWidth(i, cap)
        layout.addWidget(self.table, 1)
        model.changed.connect(self._update_counts)
        model.modelReset.connect(self._update_counts)
        self._update_counts()

    def _update_counts(self) -> None:
        m = self.model
        statuses = [m.status(i) for i in range(len(m.rows))]
        parts = [f"{len(m.rows)} rows", f"{statuses.count('modified')} modified", f"{statuses.count('added')} added"]
        invalid = len(m.invalid_rows())
        if invalid:
            parts.append(f"<span style='color:#8a0015'><b>{invalid} invalid</b></span>")
        stale = sum(1 for i in range(len(m.rows)) if m.is_stale(i))
        if stale:
            parts.append(f"<span style='color:#8a5300'>{stale} with stale prices</span>")
        self.counts.setText(" · ".join(parts))

    def selected_rows(self) -> list[int]:
        """Source rows of the selection (or of the current cell), in order."""
        rows = {self.proxy.mapToSource(i).row() for i in self.table.selectionModel().selectedRows()}
        if not rows and self.table.currentIndex().isValid():
            rows = {self.proxy.mapToSource(self.table.currentIndex()).row()}
        return sorted(r for r in rows if r >= 0)

    def select_source_row(self, row: int) -> None:
        index = self.proxy.mapFromSource(self.model.index(row, 0))
        if index.isValid():
            self.table.setCurrentIndex(index)
            self.table.selectRow(index.row())
            self.table.scrollTo(index)


# --- dialogs ------------------------------------------------------------------------------------
class PreviewDialog(QDialog):
    """Shows what an import would change; Apply or Cancel."""

    def __init__(self, title: str, summary_html: str, details: str, can_apply: bool, parent=None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(720, 480)
        layout = QVBoxLayout(self)
        head = QLabel(summary_html, self)
        head.setWordWrap(True)
        head.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(head)
        self.details = QPlainTextEdit(self)
        self.details.setReadOnly(True)
        self.details.setPlainText(details)
        layout.addWidget(self.details, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel, self)
        self.apply_button = buttons.addButton("Apply", QDialogButtonBox.ButtonRole.AcceptRole)
        self.apply_button.setEnabled(can_apply)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)


def import_details(report: ImportReport, before: list[dict[str, str]]) -> str:
    """The import report with every changed value spelled out (``tdp_w: 450 -> 460``), so the
    user sees what Apply would change, not only which rows (the core's wording, shared with the CLI)."""
    return report.details(before)


# --- the window ---------------------------------------------------------------------------------
class CatalogEditor(QMainWindow):
    """The catalog editor window (see the module docstring)."""

    #: (GpuCatalog, ModelCatalog, warnings) after every change that still leaves a usable catalog.
    catalogsChanged = Signal(object, object, object)

    def __init__(self, user: uc.UserCatalog, parent=None, stale_months: int = 6,
                 on_stale_months: Callable[[int], None] | None = None, startup_warnings: list[str] | None = None,
                 current_gpus: Callable[[], GpuCatalog] | None = None, today: _dt.date | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Catalog editor · gpuadvisor")
        self.setWindowFlag(Qt.WindowType.Window, True)
        self.resize(1280, 720)
        self.today = today or _dt.date.today()
        self.undo = QUndoStack(self)
        self._on_stale_months = on_stale_months
        self._current_gpus = current_gpus
        self.last_save_error = ""
        self.last_saved_path: Path | None = None
        self.build_warnings: list[str] = []
        self.notice = ""  # the last import's report, shown until the next import

        self.models: dict[str, CatalogModel] = {}
        self.tabs_by_kind: dict[str, CatalogTab] = {}
        self.tabs = QTabWidget(self)
        for kind in uc.KINDS:
            merged, _warnings = uc.merge(kind, user.edits(kind))
            model = CatalogModel(kind, [m.row for m in merged], self.undo, stale_months, self.today, self)
            model.changed.connect(self._schedule_apply)
            model.rejected.connect(self._show_rejected)
            self.models[kind] = model
            tab = CatalogTab(model, self)
            self.tabs_by_kind[kind] = tab
            self.tabs.addTab(tab, KIND_TITLES[kind])

        central = QWidget(self)
        layout = QVBoxLayout(central)
        layout.setContentsMargins(6, 6, 6, 6)
        self.banner = QLabel(self)
        self.banner.setWordWrap(True)
        self.banner.setTextFormat(Qt.TextFormat.RichText)
        self.banner.setStyleSheet("background: #fff4e0; color: #5a3a00; padding: 6px; border-radius: 3px;")
        self.banner.hide()
        layout.addWidget(self.banner)
        layout.addWidget(self.tabs, 1)
        self.info = QLabel(self)
        self.info.setWordWrap(True)
        self.info.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(self.info)
        self.setCentralWidget(central)

        self._build_actions(stale_months)
        self._apply_timer = QTimer(self)
        self._apply_timer.setSingleShot(True)
        self._apply_timer.setInterval(0)
        self._apply_timer.timeout.connect(self.apply_now)
        if startup_warnings:
            self.show_banner(startup_warnings)
        self._update_info()

    # -- toolbar and menus -------------------------------------------------------------------------
    def _build_actions(self, stale_months: int) -> None:
        bar = QToolBar("Catalog", self)
        bar.setMovable(False)
        self.addToolBar(bar)

        def action(text: str, slot, shortcut=None, tip: str = "") -> QAction:
            act = QAction(text, self)
            if shortcut is not None:
                act.setShortcut(QKeySequence(shortcut))
            act.setToolTip(tip or text)
            act.setStatusTip(tip or text)
            act.triggered.connect(slot)
            return act

        # Short labels on the buttons; what would be undone is in the tooltip (a long command
        # name would otherwise widen the toolbar and push the other buttons off screen).
        self.undo_action = action("Undo", self.undo.undo, QKeySequence.StandardKey.Undo)
        self.redo_action = action("Redo", self.undo.redo, None)
        self.redo_action.setShortcuts([QKeySequence.StandardKey.Redo, QKeySequence("Ctrl+Shift+Z")])
        self.undo_action.setEnabled(False)
        self.redo_action.setEnabled(False)
        self.undo.canUndoChanged.connect(self.undo_action.setEnabled)
        self.undo.canRedoChanged.connect(self.redo_action.setEnabled)
        self.undo.undoTextChanged.connect(lambda text: self.undo_action.setToolTip(f"Undo {text}" if text else "Undo"))
        self.undo.redoTextChanged.connect(lambda text: self.redo_action.setToolTip(f"Redo {text}" if text else "Redo"))
        self.add_action = action("Add row", self.add_row, "Ctrl+N", "Add an empty row (a unique id is filled in)")
        self.duplicate_action = action("Duplicate", self.duplicate_rows, "Ctrl+D",
                                       "Copy the selected rows under new ids (e.g. your own price quote)")
        self.delete_action = action("Delete", self.delete_rows, QKeySequence.StandardKey.Delete,
                                    "Delete the selected rows (bundled rows are hidden; Reset all brings them back)")
        self.reset_row_action = action("Reset row", self.reset_rows, None,
                                       "Put the selected bundled rows back to their bundled values")
        self.reset_all_action = action("Reset all…", self.reset_all, None,
                                       "Discard every edit of this catalog and use the bundled rows")
        self.import_action = action("Import…", self.import_rows, "Ctrl+I",
                                    "Import rows from a CSV or JSON file (preview first)")
        self.export_action = action("Export…", self.export_rows, "Ctrl+E",
                                    "Export this catalog, with your edits, as CSV or JSON")
        self.prices_action = action("Import price list…", self.import_price_lists, None,
                                    "Update cloud prices from gpuhunt or SkyPilot catalog files (preview first)")
        self.restore_action = action("Restore backup…", self.restore_backup, None,
                                     "Bring back a backup of your catalog edits (undoable)")
        for act in (self.undo_action, self.redo_action, None, self.add_action, self.duplicate_action,
                    self.delete_action, None, self.reset_row_action, self.reset_all_action, None,
                    self.import_action, self.export_action, self.prices_action, self.restore_action):
            if act is None:
                bar.addSeparator()
            else:
                bar.addAction(act)
                self.addAction(act)
        bar.addSeparator()
        bar.addWidget(QLabel(" Flag prices older than ", self))
        self.stale_box = QSpinBox(self)
        self.stale_box.setRange(1, 240)
        self.stale_box.setSuffix(" months")
        self.stale_box.setValue(stale_months)
        self.stale_box.setToolTip("Prices dated before this are flagged here, in the results and in the report")
        self.stale_box.valueChanged.connect(self._stale_changed)
        bar.addWidget(self.stale_box)
        self.tabs.currentChanged.connect(lambda _i: self._update_actions())
        for tab in self.tabs_by_kind.values():
            tab.table.selectionModel().selectionChanged.connect(lambda *_a: self._update_actions())
        self.prices_action.setVisible(True)
        self._update_actions()

    def _update_actions(self) -> None:
        tab = self.current_tab()
        rows = tab.selected_rows()
        self.duplicate_action.setEnabled(bool(rows))
        self.delete_action.setEnabled(bool(rows))
        self.reset_row_action.setEnabled(any(tab.model.status(r) == "modified" for r in rows))
        self.prices_action.setEnabled(tab.model.kind == "gpus")

    def current_tab(self) -> CatalogTab:
        return self.tabs.currentWidget()

    def current_model(self) -> CatalogModel:
        return self.current_tab().model

    # -- row operations (each one undoable step) -------------------------------------------------
    def _push_rows(self, model: CatalogModel, after: list[dict[str, str]], text: str) -> None:
        self.undo.push(RowsCommand(model, model.snapshot(), after, text))

    def _unique_id(self, model: CatalogModel, base: str) -> str:
        base = re.sub(r"[^a-z0-9._-]+", "-", base.lower()).strip("-") or "new"
        taken = {r.get("id") for r in model.rows}
        if base not in taken:
            return base
        for i in range(2, 10_000):
            candidate = f"{base}-{i}"
            if candidate not in taken:
                return candidate
        raise RuntimeError("no free id")  # unreachable in practice

    def add_row(self) -> None:
        model = self.current_model()
        row = uc.full_row(model.kind, {"id": self._unique_id(model, "my-gpu" if model.kind == "gpus" else "my-model")})
        self._push_rows(model, model.snapshot() + [row], f"Add {row['id']}")
        self.current_tab().select_source_row(len(model.rows) - 1)

    def duplicate_rows(self) -> None:
        tab = self.current_tab()
        model = tab.model
        rows = tab.selected_rows()
        if not rows:
            return
        after = model.snapshot()
        for r in rows:
            copy = dict(model.rows[r])
            copy["id"] = self._unique_id(model, copy.get("id", "") + "-copy")
            if copy.get("name"):
                copy["name"] = copy["name"] + " (copy)"
            after.append(copy)
            model.rows.append(copy)  # so the next _unique_id sees it; the command replaces the rows
        del model.rows[len(model.rows) - len(rows):]
        self._push_rows(model, after, f"Duplicate {len(rows)} row{'s' if len(rows) != 1 else ''}")
        tab.select_source_row(len(model.rows) - 1)

    def delete_rows(self) -> None:
        tab = self.current_tab()
        model = tab.model
        rows = set(tab.selected_rows())
        if not rows:
            return
        if len(rows) == len(model.rows) and model.kind == "gpus":
            self._show_rejected("At least one GPU must remain: the estimates need a catalog.")
            return
        ids = [model.rows[r].get("id", "") for r in sorted(rows)]
        after = [r for i, r in enumerate(model.snapshot()) if i not in rows]
        self._push_rows(model, after, f"Delete {', '.join(ids[:3])}{'…' if len(ids) > 3 else ''}")

    def reset_rows(self) -> None:
        tab = self.current_tab()
        model = tab.model
        rows = [r for r in tab.selected_rows() if model.status(r) == "modified"]
        if not rows:
            return
        after = model.snapshot()
        for r in rows:
            base = model.bundled_row(r)
            if base is not None:
                after[r] = uc.full_row(model.kind, base)
        self._push_rows(model, after, f"Reset {', '.join(model.rows[r]['id'] for r in rows[:3])} to bundled")

    def reset_all(self, confirm: bool = True) -> bool:
        model = self.current_model()
        if confirm:
            answer = QMessageBox.question(
                self, "Reset to the bundled catalog",
                f"Discard every edit of the {KIND_TITLES[model.kind].lower()} catalog (changed, added and "
                f"deleted rows)? You can undo this.",
                QMessageBox.StandardButton.Reset | QMessageBox.StandardButton.Cancel,
                QMessageBox.StandardButton.Cancel)
            if answer != QMessageBox.StandardButton.Reset:
                return False
        self._push_rows(model, uc.bundled_rows(model.kind), f"Reset all {KIND_TITLES[model.kind].lower()}")
        return True

    # -- import and export ------------------------------------------------------------------------
    def import_rows(self, path: str | None = None, preview: bool = True) -> ImportReport | None:
        model = self.current_model()
        if path is None:
            path, _ = QFileDialog.getOpenFileName(self, f"Import {KIND_TITLES[model.kind].lower()}", "",
                                                  "Catalog files (*.csv *.json);;All files (*)")
            if not path:
                return None
        try:
            report = import_file(model.kind, path, model.snapshot())
        except InputError as exc:
            QMessageBox.warning(self, "Import failed", f"{Path(path).name} cannot be imported:\n{exc}")
            return None
        if preview and not self._confirm_import(report, Path(path).name, model.snapshot()):
            return report
        if report.changed:
            self._push_rows(model, report.rows, f"Import {Path(path).name}")
        self._set_notice(report.summary())
        return report

    def _confirm_import(self, report: ImportReport, name: str, before: list[dict[str, str]]) -> bool:
        head = (f"<b>{name}</b>: {len(report.added)} added, {len(report.updated)} updated, "
                f"{len(report.unchanged)} unchanged, <span style='color:#8a0015'>{len(report.rejected)} "
                f"rejected</span>.")
        dialog = PreviewDialog(f"Import {name}", head, import_details(report, before), report.changed, self)
        return dialog.exec() == QDialog.DialogCode.Accepted

    def export_rows(self, path: str | None = None, fmt: str | None = None) -> Path | None:
        model = self.current_model()
        if path is None:
            path, chosen = QFileDialog.getSaveFileName(
                self, f"Export {KIND_TITLES[model.kind].lower()}", f"{model.kind}.csv",
                "CSV (*.csv);;JSON (*.json)")
            if not path:
                return None
            fmt = "json" if "JSON" in chosen or path.lower().endswith(".json") else "csv"
        fmt = fmt or ("json" if str(path).lower().endswith(".json") else "csv")
        text = export_text(model.kind, model.snapshot(), fmt, updated=self.today.isoformat())
        try:
            written = atomic_write_text(path, text)
        except StorageError as exc:
            QMessageBox.warning(self, "Export failed", str(exc))
            return None
        self.statusBar().showMessage(f"Exported {len(model.rows)} rows to {written.name}", 6000)
        return written

    def import_price_lists(self, paths: list[str] | None = None, preview: bool = True,
                           provider: str | None = None):
        """Update cloud prices from gpuhunt or SkyPilot catalog files; returns the applied updates."""
        from ..core.pricelists import merge_price_imports, price_update_rows, read_price_list

        model = self.models["gpus"]
        if paths is None:
            paths, _ = QFileDialog.getOpenFileNames(self, "Import cloud price lists (gpuhunt or SkyPilot CSV)", "",
                                                    "CSV files (*.csv);;All files (*)")
            if not paths:
                return None
        catalog = self._catalog_for_matching()
        imports = []
        for p in paths:
            try:
                imports.append(read_price_list(p, catalog, provider=provider, as_of=self.today))
            except InputError as exc:
                QMessageBox.warning(self, "Price list not imported", f"{Path(p).name}: {exc}")
                return None
        merged = merge_price_imports(imports)
        updates = price_update_rows(imports, model.snapshot(), as_of=self.today)
        after = model.snapshot()
        index = {r["id"]: i for i, r in enumerate(after)}
        lines = []
        for gpu_id, changes in updates:
            i = index.get(gpu_id)
            if i is None:
                continue
            old = after[i]
            lines.append(f"{gpu_id}: cloud price {old.get('cloud_usd_per_hour_low') or '-'} / "
                         f"{old.get('cloud_usd_per_hour_expected') or '-'} / {old.get('cloud_usd_per_hour_high') or '-'}"
                         f" -> {changes.get('cloud_usd_per_hour_low', '-')} / "
                         f"{changes.get('cloud_usd_per_hour_expected', '-')} / "
                         f"{changes.get('cloud_usd_per_hour_high', '-')} USD per GPU-hour")
            after[i] = {**old, **changes}
        details = "\n".join(lines) + ("\n\n" if lines else "") + merged.summary()
        head = (f"<b>{len(lines)} GPU{'s' if len(lines) != 1 else ''}</b> get new prices from "
                f"{len(paths)} file{'s' if len(paths) != 1 else ''} ({merged.rows_read} rows read; "
                f"{sum(merged.unmatched.values())} offers unmatched; {len(merged.rejected)} rows rejected).")
        if preview:
            dialog = PreviewDialog("Import cloud price lists", head, details, bool(lines), self)
            if dialog.exec() != QDialog.DialogCode.Accepted:
                return updates
        if lines:
            self._push_rows(model, after, f"Import prices from {', '.join(Path(p).name for p in paths)}")
        self._set_notice(merged.summary())
        return updates

    def _catalog_for_matching(self) -> GpuCatalog:
        if self._current_gpus is not None:
            return self._current_gpus()
        gpus, _models, _w = uc.build_catalogs(self.user_catalog())
        return gpus

    def restore_backup(self, path: str | Path | None = None) -> bool:
        if path is None:
            backups = user_catalog_backups()
            if not backups:
                QMessageBox.information(self, "Restore backup", "There is no backup of your catalog edits yet.")
                return False
            names = [f"{p.name}  ({_dt.datetime.fromtimestamp(p.stat().st_mtime):%Y-%m-%d %H:%M})" for p in backups]
            choice, ok = QInputDialog.getItem(self, "Restore backup", "Bring back:", names, 0, False)
            if not ok:
                return False
            path = backups[names.index(choice)]
        try:
            loaded = restore_user_catalog(path)
        except (InputError, OSError) as exc:
            QMessageBox.warning(self, "Backup not restored", str(exc))
            return False
        self.undo.beginMacro(f"Restore {Path(path).name}")
        for kind, model in self.models.items():
            merged, _w = uc.merge(kind, loaded.catalog.edits(kind))
            self._push_rows(model, [m.row for m in merged], f"Restore {kind}")
        self.undo.endMacro()
        self.banner.hide()
        self.statusBar().showMessage(f"Restored {Path(path).name}", 6000)
        return True

    # -- saving and applying ---------------------------------------------------------------------
    def user_catalog(self) -> uc.UserCatalog:
        """The edits as they stand (raises CatalogError only for missing or duplicate ids, which
        the editor refuses before they happen)."""
        user = uc.UserCatalog.empty()
        for kind, model in self.models.items():
            user = user.with_edits(kind, uc.diff(kind, model.rows))
        return user

    def _schedule_apply(self) -> None:
        self._apply_timer.start()

    def apply_now(self) -> None:
        """Save the edits and hand the merged catalogs to the estimates (runs after each change)."""
        self._apply_timer.stop()
        try:
            user = self.user_catalog()
        except CatalogError as exc:
            self.last_save_error = str(exc)
            self._update_info()
            return
        try:
            self.last_saved_path = save_user_catalog(user)
            self.last_save_error = ""
        except StorageError as exc:
            self.last_save_error = f"Your edits are kept in this window but could not be saved: {exc}"
            log.warning("user catalog not saved: %s", exc)
        try:
            gpus, models, warnings = uc.build_catalogs(user)
        except CatalogError as exc:
            self.build_warnings = [f"The estimates keep the previous catalog: {exc}"]
        else:
            self.build_warnings = warnings
            self.catalogsChanged.emit(gpus, models, warnings)
        self._update_info()

    def flush(self) -> None:
        """Apply a pending change now (tests; closing)."""
        if self._apply_timer.isActive():
            self.apply_now()

    def _set_notice(self, text: str) -> None:
        self.notice = text
        self._update_info()

    def _update_info(self) -> None:
        parts = []
        if self.notice:
            parts.append(html.escape(self.notice).replace("\n", "<br>"))
        if self.last_save_error:
            parts.append(f"<span style='color:#8a0015'><b>{html.escape(self.last_save_error)}</b></span>")
        invalid = [(kind, r) for kind, m in self.models.items() for r in m.invalid_rows()]
        if invalid:
            items = []
            for kind, r in invalid[:4]:
                m = self.models[kind]
                items.append(f"{html.escape(m.rows[r].get('id') or f'row {r + 1}')}: {html.escape(m.row_error(r))}")
            more = f" and {len(invalid) - 4} more" if len(invalid) > 4 else ""
            parts.append(f"<span style='color:#8a0015'>{len(invalid)} invalid row{'s' if len(invalid) != 1 else ''} "
                         f"left out of the estimates: {'; '.join(items)}{more}.</span>")
        elif self.build_warnings:
            parts.append("<br>".join(html.escape(w) for w in self.build_warnings[:3]))
        if not parts or parts == [html.escape(self.notice).replace("\n", "<br>")]:
            parts.append("Edits are saved as you make them and used by the estimates at once. Double-click a "
                         "cell to edit; tinted cells differ from the bundled catalog (hover for the bundled value).")
        self.info.setText("<br>".join(parts))

    def show_banner(self, warnings: list[str]) -> None:
        """A notice above the tables (e.g. a damaged catalog file that was set aside at start)."""
        text = "<br>".join(html.escape(w) for w in warnings)
        self.banner.setText(f"{text}<br>Use <b>Restore backup…</b> to bring back a saved copy.")
        self.banner.show()

    def _show_rejected(self, message: str) -> None:
        self.statusBar().showMessage(message, 8000)
        self.info.setText(f"<span style='color:#8a0015'><b>Not changed:</b> {html.escape(message)}</span>")

    def _stale_changed(self, months: int) -> None:
        for model in self.models.values():
            model.set_stale_months(months)
        for tab in self.tabs_by_kind.values():
            tab._update_counts()
        if self._on_stale_months is not None:
            self._on_stale_months(months)

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        self.flush()
        super().closeEvent(event)

