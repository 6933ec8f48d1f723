"""Cell editors (numbers with their unit, dates, choices) and the sorting, filtering proxy."""

from __future__ import annotations

from PySide6.QtCore import (
    QAbstractItemModel,
    QDate,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtWidgets import (
    QComboBox,
    QDateEdit,
    QHBoxLayout,
    QLineEdit,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolTip,
    QWidget,
)

from ..widgets import ToneLabel
from .columns import (
    BOOLEAN_COLUMNS,
    CHOICES,
    DATE_COLUMNS,
    ROLE_SORT,
    STRICT_CHOICES,
    column_unit,
    is_numeric,
)
from .model import CatalogModel


class NumberEditor(QWidget):
    """A number with its unit beside it; empty means unknown. Any text is accepted here and the
    model marks what the core rejects, so nothing is silently dropped."""

    def __init__(self, unit: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 2, 0)
        layout.setSpacing(3)
        self.line = QLineEdit(self)
        self.line.setAlignment(Qt.AlignmentFlag.AlignRight)
        self.line.setPlaceholderText("empty = unknown")
        layout.addWidget(self.line, 1)
        if unit:
            label = ToneLabel(unit.replace(" per GPU-hour", "/GPU-h"), "muted", self)
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

    def __init__(self, model: CatalogModel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._model = model
        self.last_refusal_shown = ""  # the last refusal said under its cell (tests; accessibility)

    def _column(self, index: QModelIndex | QPersistentModelIndex) -> str:
        return self._model.columns[index.column()]

    def createEditor(  # noqa: N802 - Qt override
        self, parent: QWidget, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QWidget:
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

    def setEditorData(self, editor: QWidget, index: QModelIndex | QPersistentModelIndex) -> None:  # noqa: N802 - Qt override
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

    def setModelData(  # noqa: N802 - Qt override
        self, editor: QWidget, model: QAbstractItemModel, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        self._model.last_refusal = ""
        if isinstance(editor, QComboBox):
            model.setData(index, editor.currentText())
        elif isinstance(editor, QDateEdit):
            date = editor.date()
            model.setData(index, "" if date == editor.minimumDate() else date.toString("yyyy-MM-dd"))
        elif isinstance(editor, NumberEditor):
            model.setData(index, editor.text())
        else:
            super().setModelData(editor, model, index)
        reason = self._model.last_refusal
        if reason:
            # Said where it was typed: under the cell, as it closes on the last valid value.
            self.last_refusal_shown = reason
            parent = self.parent()
            view = parent if isinstance(parent, QWidget) else None
            where = editor.mapToGlobal(editor.rect().bottomLeft())
            QToolTip.showText(where, f"Not changed: {reason}", view)


class CatalogProxy(QSortFilterProxyModel):
    """Sorts numbers as numbers and filters on any column (case-insensitive)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setSortRole(ROLE_SORT)
        self.setFilterKeyColumn(-1)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)

    def lessThan(
        self, left: QModelIndex | QPersistentModelIndex, right: QModelIndex | QPersistentModelIndex
    ) -> bool:
        a, b = left.data(ROLE_SORT), right.data(ROLE_SORT)
        try:
            return bool(a < b)
        except TypeError:
            return str(a) < str(b)
