"""The ranking widget: what to buy, one row per GPU type, with copy, CSV export and an explained empty state.

Public API (what the window wires):

- ``RankingTable(parent=None, stale_months=6)``
- ``show(est, selected)``: redraw for an ``Estimate`` (or None) and select the candidate key
  ``selected`` when it is shown; ``show()`` without arguments is ``QWidget.show``.
- ``select_key(key) -> bool`` (no signal), ``selected_key() -> str | None``
- ``set_stale_months(months)``, ``set_expanded(bool)`` / ``is_expanded()``,
  ``set_fitting_only(bool)``, ``set_within_limits_only(bool)``
- ``copy_rows()`` (TSV), ``copy_csv()``, ``copy_setup_name()``, ``export_csv(path)``,
  ``export_csv_dialog()``, ``select_all()``, ``sort_in_decision_order()``, ``empty_message()``
- signals ``keySelected(str)`` (arrows, clicks, Enter) and ``expandedChanged(bool)``
- parts: ``model`` (:class:`RankingModel`), ``proxy``, ``view`` (:class:`RankingView`), ``menu``,
  ``expand_box``, ``fitting_box``, ``limits_box``
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QItemSelectionModel, QModelIndex, QPoint, Qt, Signal
from PySide6.QtGui import QAction, QFont, QFontMetrics, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QMenu,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

from ...core.estimation.estimate import Estimate
from ...storage.atomic import atomic_write_text
from ...storage.errors import StorageError
from .model import (
    COL_BUDGET,
    COL_DEADLINE,
    COL_PICK,
    COL_SETUP,
    COL_VERDICT,
    EXPAND_LABEL,
    FITTING_FILTER_LABEL,
    HEADERS,
    LIMITS_FILTER_LABEL,
    ROLE_KEY,
    RankingModel,
    RankingProxy,
    setup_name,
)
from .view import RankingView

#: Room around a cell's text: the view paints it 4 px in from each side (``RankingView``).
_CELL_PADDING = 8
#: Columns whose alarm words ("at risk", "over", "does not fit") are painted bold.
_BOLD_WORDS = frozenset({COL_DEADLINE, COL_BUDGET, COL_VERDICT})
_MAX_COLUMN_WIDTH = 220
_MAX_SETUP_WIDTH = 360  # a laid-out job's name: "64 × TP8 SP · PP4 · DP2 · selective recompute"
_NO_ESTIMATE = object()  # show() without arguments: QWidget.show


class RankingTable(QWidget):
    """The ranking the window embeds: toggles, the table, copy and export, and why it is empty.

    Feed it with :meth:`show` (``show(est, selected)``, like every view); it reports the setup
    the user picks with :attr:`keySelected` (arrows, clicks, Enter) and never emits it while the
    window pushes a selection in with :meth:`select_key`.
    """

    #: The candidate key of the setup the user moved to or confirmed with Enter.
    keySelected = Signal(str)
    #: The "Show every GPU count and parallelism" toggle changed (the window may remember it).
    expandedChanged = Signal(bool)

    def __init__(self, parent: QWidget | None = None, stale_months: int = 6) -> None:
        super().__init__(parent)
        self.model = RankingModel(self, expanded=False)
        self.model.stale_months = stale_months
        self.proxy = RankingProxy(self)
        self.proxy.setSourceModel(self.model)

        self.expand_box = QCheckBox(EXPAND_LABEL)
        self.expand_box.setToolTip(
            "Off: one row per GPU type, its best setup. On: every GPU count and "
            "way to share the work, in the same order."
        )
        self.expand_box.setToolTip(
            "Show every GPU count and parallelism. Off: one row per GPU type, its best "
            "setup. On: every GPU count and way to share the work, in the same order."
        )
        self.fitting_box = QCheckBox(FITTING_FILTER_LABEL)
        self.fitting_box.setToolTip("Only setups that fit in the GPU's memory")
        self.fitting_box.setChecked(True)
        self.limits_box = QCheckBox(LIMITS_FILTER_LABEL)
        self.limits_box.setToolTip(
            "Only setups within the deadline and budget: hide the setups whose job time is at risk of missing the deadline or "
            "whose cost goes over the budget"
        )

        view = self.view = RankingView(self.model, self.proxy)
        view.setModel(self.proxy)
        view.setSortingEnabled(True)
        view.sortByColumn(-1, Qt.SortOrder.AscendingOrder)  # the decision order until a header is clicked
        view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        view.setTabKeyNavigation(False)  # Tab leaves the table; arrows move within it
        view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        view.setWordWrap(False)
        view.verticalHeader().setDefaultSectionSize(22)
        view.verticalHeader().hide()  # row numbers cost a headerData call per row per paint
        header = view.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        header.moveSection(header.visualIndex(COL_PICK), 0)  # the mark comes first
        header.setSortIndicatorShown(False)
        view.setAlternatingRowColors(True)
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self._columns_sized = False
        self._refilling = False
        self._sized_for_serving = False

        self.copy_action = self._action("Copy rows", self.copy_rows, QKeySequence.StandardKey.Copy)
        self.copy_csv_action = self._action("Copy as CSV", self.copy_csv)
        self.copy_name_action = self._action("Copy setup name", self.copy_setup_name)
        self.export_action = self._action("Export table as CSV…", self.export_csv_dialog)
        self.select_all_action = self._action(
            "Select all", self.select_all, QKeySequence.StandardKey.SelectAll
        )
        self.decision_order_action = self._action("Sort in decision order", self.sort_in_decision_order)
        self.menu = QMenu(self)
        for a in (
            self.copy_action,
            self.copy_csv_action,
            self.copy_name_action,
            None,
            self.export_action,
            None,
            self.select_all_action,
            self.decision_order_action,
        ):
            self.menu.addSeparator() if a is None else self.menu.addAction(a)

        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.expand_box)
        top.addStretch(1)
        top.addWidget(self.fitting_box)
        top.addWidget(self.limits_box)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(top)
        layout.addWidget(view, 1)

        self.expand_box.toggled.connect(self._on_expand_toggled)
        self.fitting_box.toggled.connect(self._on_fitting_toggled)
        self.limits_box.toggled.connect(self._on_limits_toggled)
        view.selectionModel().currentRowChanged.connect(self._on_current_row_changed)
        view.enterPressed.connect(self._on_enter)
        view.customContextMenuRequested.connect(self._on_context_menu)
        view.doubleClicked.connect(lambda _index: self._on_enter())
        header.sortIndicatorChanged.connect(self._on_sorted_by_column)

    def _action(
        self, text: str, slot: Callable[[], object], shortcut: QKeySequence.StandardKey | None = None
    ) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
            # Shown in the menu; the table handles the keys itself (no window-wide shortcut).
            action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        action.triggered.connect(lambda _checked=False: slot())
        return action

    # --- what the window calls ---------------------------------------------------------------
    def show(
        self,
        est: Estimate | None | object = _NO_ESTIMATE,
        selected: str | None = None,
    ) -> None:
        """Redraw for a new estimate and select ``selected`` (a candidate key) when it is shown.

        Called without arguments it is ``QWidget.show`` (the widget appears on screen).
        """
        if est is _NO_ESTIMATE:
            super().show()
            return
        # While the rows are replaced the view moves its current row onto whatever row is left,
        # which still holds the old estimate's setup: that is no choice of the user's.
        self._refilling = True
        try:
            self.model.set_estimate(est if isinstance(est, Estimate) else None)
        finally:
            self._refilling = False
        serving = isinstance(est, Estimate) and est.scenario.workload.serving is not None
        if self.model.rows and (not self._columns_sized or serving != self._sized_for_serving):
            # A service shows other texts in some columns (the fleet): fit them once per mode.
            self.size_columns()
            self._sized_for_serving = serving
        elif self.model.rows:
            self._widen_columns()
        self.select_key(selected)
        self.view.viewport().update()

    def select_key(self, key: str | None) -> bool:
        """Select the row of this candidate (without emitting :attr:`keySelected`); False when not shown."""
        selection = self.view.selectionModel()
        current = self.view.currentIndex()
        if key and current.isValid() and current.siblingAtColumn(0).data(ROLE_KEY) == key:
            return True
        source_row = self.model.row_of(key) if key else None
        index = self.proxy.mapFromSource(self.model.index(source_row, 0)) if source_row is not None else None
        selection.blockSignals(True)
        try:
            if index is None or not index.isValid():
                selection.clear()
                return False
            flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
            selection.setCurrentIndex(index, flags)
        finally:
            selection.blockSignals(False)
            self.view.viewport().update()
        self.view.scrollTo(index)
        return True

    def selected_key(self) -> str | None:
        """The key of the current row, or None."""
        current = self.view.currentIndex()
        return current.siblingAtColumn(0).data(ROLE_KEY) if current.isValid() else None

    def set_stale_months(self, months: int) -> None:
        """Prices older than this many months are flagged "stale" (the catalog editor's setting)."""
        self.model.set_stale_months(months)
        self.view.viewport().update()

    def set_expanded(self, value: bool) -> None:
        """Every GPU count and parallelism (True) or one row per GPU type (False); ticks the box."""
        self.expand_box.setChecked(value)

    def is_expanded(self) -> bool:
        return self.model.expanded

    def set_fitting_only(self, value: bool) -> None:
        self.fitting_box.setChecked(value)

    def set_within_limits_only(self, value: bool) -> None:
        self.limits_box.setChecked(value)

    def empty_message(self) -> str:
        """What the table says when no row is shown ("" when rows are shown)."""
        heading, lines = self.model.empty_message()
        return "\n".join([heading, *lines]) if heading else ""

    def size_columns(self) -> None:
        """Fit each column to its header and the first rows' texts (measured, not asked of a delegate).

        The header is measured as the header draws it (bold while rows are selected, with room
        for the sort arrow only once the user sorts by a column), the cells as the view paints
        them: on a 1366x768 laptop the decision's columns, from the mark to the fit, then fit
        without scrolling sideways.
        """
        header = self.view.horizontalHeader()
        for col, width in enumerate(self._needed_widths()):
            self.view.setColumnWidth(col, max(width, header.sectionSizeFromContents(col).width()))
        self._columns_sized = bool(self.model.rows)

    def _needed_widths(self) -> list[int]:
        """Each column's width for the first rows' texts, capped (the tooltip has a longer text)."""
        metrics = self.view.fontMetrics()
        bold = QFont(self.view.font())
        bold.setBold(True)
        bold_metrics = QFontMetrics(bold)
        sample = [self.model.texts(r) for r in range(min(len(self.model.rows), 40))]
        widths = []
        for col in range(len(HEADERS)):
            cell_metrics = bold_metrics if col in _BOLD_WORDS else metrics
            width = max([0] + [cell_metrics.horizontalAdvance(t[col]) + _CELL_PADDING for t in sample])
            widths.append(min(width, _MAX_SETUP_WIDTH if col == COL_SETUP else _MAX_COLUMN_WIDTH))
        return widths

    def _widen_columns(self) -> None:
        """Widen the columns a new estimate needs wider (a laid-out job's "64 × TP8 · PP4 · …",
        the GPU names and "runner-up" once a one-GPU service compares the whole catalog), so no
        figure is cut; a column never narrows while the user types."""
        for col, width in enumerate(self._needed_widths()):
            if width > self.view.columnWidth(col):
                self.view.setColumnWidth(col, width)

    # --- copy and export -----------------------------------------------------------------------
    def visible_columns(self) -> list[int]:
        """Logical columns in the order shown."""
        return self.view.visible_columns()

    def table_rows(self, selected_only: bool) -> list[list[str]]:
        """The header and the rows (all shown rows, or the selected ones) as shown, in the table's order."""
        return self.view.table_rows(selected_only)

    def _selected_with_header(self) -> list[list[str]]:
        rows = self.table_rows(selected_only=True)
        return rows if len(rows) > 1 else []

    def copy_rows(self) -> None:
        """The selected rows to the clipboard as tab-separated text with a header line (for spreadsheets)."""
        self.view.copy_rows()

    def copy_csv(self) -> None:
        """The selected rows to the clipboard as CSV with a header line."""
        rows = self._selected_with_header()
        if rows:
            QGuiApplication.clipboard().setText(to_csv(rows))

    def copy_setup_name(self) -> None:
        """The names of the selected setups (``4 × AMD Instinct MI300X (ddp)``), one a line."""
        est = self.model.estimate
        keys = [
            self.proxy.index(i.row(), 0).data(ROLE_KEY)
            for i in sorted(self.view.selectionModel().selectedRows(), key=lambda i: i.row())
        ]
        names = [setup_name(c) for c in (est.candidate(k) for k in keys) if c is not None] if est else []
        if names:
            QGuiApplication.clipboard().setText("\n".join(names))

    def export_csv(self, path: str | Path) -> Path:
        """Write every shown row (with the header) to ``path`` as CSV, atomically. Raises StorageError."""
        # UTF-8 with a byte-order mark, so that spreadsheets read ★, × and – correctly.
        return atomic_write_text(path, to_csv(self.table_rows(selected_only=False)), encoding="utf-8-sig")

    def export_csv_dialog(self) -> Path | None:
        """Ask for a file name, then :meth:`export_csv`; a failure is shown in one line."""
        path, _ = QFileDialog.getSaveFileName(
            self, "Export the ranking as CSV", "ranking.csv", "CSV files (*.csv);;All files (*)"
        )
        if not path:
            return None
        try:
            return self.export_csv(path)
        except StorageError as exc:
            QMessageBox.warning(self, "Export the ranking", f"Could not export the table: {exc}")
            return None

    def select_all(self) -> None:
        self.view.selectAll()

    def sort_in_decision_order(self) -> None:
        """Back to the core's order (recommended first), after sorting by a column."""
        self.view.sortByColumn(-1, Qt.SortOrder.AscendingOrder)
        self.view.horizontalHeader().setSortIndicatorShown(False)
        if self.model.rows:
            self.size_columns()  # no sort arrow: the headers need less room again

    # --- slots -----------------------------------------------------------------------------------
    def _on_current_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid() and not self._refilling:
            self.keySelected.emit(current.siblingAtColumn(0).data(ROLE_KEY))

    def _on_enter(self) -> None:
        key = self.selected_key()
        if key:
            self.view.selectRow(self.view.currentIndex().row())
            self.keySelected.emit(key)

    def _on_context_menu(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        if index.isValid() and not self.view.selectionModel().isRowSelected(index.row(), QModelIndex()):
            self.view.selectRow(index.row())
        has_rows = self.proxy.rowCount() > 0
        has_selection = self.view.selectionModel().hasSelection()
        for a in (self.copy_action, self.copy_csv_action, self.copy_name_action):
            a.setEnabled(has_selection)
        self.export_action.setEnabled(has_rows)
        self.select_all_action.setEnabled(has_rows)
        self.menu.popup(self.view.viewport().mapToGlobal(pos))

    def _on_sorted_by_column(self, _column: int, _order: Qt.SortOrder) -> None:
        """The first sort by a column shows the sort arrow: the headers get room for it."""
        header = self.view.horizontalHeader()
        if not header.isSortIndicatorShown():
            header.setSortIndicatorShown(True)
            if self.model.rows:
                self.size_columns()

    def _on_expand_toggled(self, value: bool) -> None:
        key = self.selected_key()
        self.model.set_expanded(value)
        self.select_key(key)
        self.expandedChanged.emit(value)

    def _on_fitting_toggled(self, value: bool) -> None:
        key = self.selected_key()
        self.model.set_fitting_only(value)
        self.select_key(key)

    def _on_limits_toggled(self, value: bool) -> None:
        key = self.selected_key()
        self.model.set_within_limits_only(value)
        self.select_key(key)


def to_csv(rows: list[list[str]]) -> str:
    """Rows as CSV text (RFC 4180 quoting, CRLF line ends as spreadsheets expect)."""
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


def _preview() -> None:
    """Show the widget on the default scenario with a 2 h deadline (``python -m gpuadvisor.gui.ranking.table``)."""
    import sys
    from dataclasses import replace

    from PySide6.QtWidgets import QApplication

    from ...core.estimation.estimate import estimate
    from ...core.formats.scenario import Budget, default_scenario
    from ...core.specs.hardware import load_gpu_catalog
    from ...core.specs.presets import load_model_catalog

    app = QApplication.instance() or QApplication(sys.argv)
    est = estimate(
        replace(default_scenario(), budget=Budget(deadline_hours=2)), load_gpu_catalog(), load_model_catalog()
    )
    table = RankingTable()
    table.keySelected.connect(lambda key: table.setWindowTitle(f"Ranking: {key}"))
    table.resize(900, 300)
    table.show(est, None)
    table.show()
    app.exec()


if __name__ == "__main__":
    _preview()
