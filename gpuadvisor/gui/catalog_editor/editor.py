"""The catalog editor window and its tabs (one table per catalog)."""

from __future__ import annotations

import datetime as _dt
import html
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from PySide6.QtCore import QItemSelection, QItemSelectionModel, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
    QDialog,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMessageBox,
    QTableView,
    QTabWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from ...core.errors import CatalogError, InputError
from ...core.formats import user_catalog as uc
from ...core.formats.catalog_exchange import ImportReport, export_text, import_file
from ...core.formats.user_catalog_merge import rebase_rows
from ...core.numbers import NumberRule, Quantity
from ...core.specs.hardware import GpuCatalog
from ...storage import StorageError, atomic_write_text
from ...storage.settings import STALE_PRICE_MONTHS_RANGE
from ...storage.user_catalog_store import (
    restore_user_catalog,
    save_and_merge_user_catalog,
    user_catalog_backups,
)
from ..theme import colors
from ..widgets import NumberField
from .add_gpu import AddGpuDialog
from .columns import KIND_TITLES
from .commands import InstancesCommand, RowsCommand
from .delegates import CatalogDelegate, CatalogProxy
from .model import CatalogModel
from .preview import PreviewDialog, import_details

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TableView:
    """Where the user was in a table, by row id: what survives the table taking in new rows."""

    selected: tuple[str, ...]
    current: tuple[str, str] | None  # (row id, column)
    scroll: tuple[int, int]  # horizontal, vertical


class CatalogTab(QWidget):
    """The table of one catalog with its search box."""

    def __init__(self, model: CatalogModel, parent: QWidget | None = None) -> None:
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
        self.table.setEditTriggers(
            QTableView.EditTrigger.DoubleClicked
            | QTableView.EditTrigger.EditKeyPressed
            | QTableView.EditTrigger.AnyKeyPressed
        )
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
        parts = [
            f"{len(m.rows)} rows",
            f"{statuses.count('modified')} modified",
            f"{statuses.count('added')} added",
        ]
        invalid = len(m.invalid_rows())
        if invalid:
            parts.append(
                f"<span style='color:{colors(self.palette()).problem}'><b>{invalid} invalid</b></span>"
            )
        stale = sum(1 for i in range(len(m.rows)) if m.is_stale(i))
        if stale:
            parts.append(
                f"<span style='color:{colors(self.palette()).caution}'>{stale} with stale prices</span>"
            )
        self.counts.setText(" · ".join(parts))

    def selected_rows(self) -> list[int]:
        """Source rows of the selection (or of the current cell), in order."""
        rows = {self.proxy.mapToSource(i).row() for i in self.table.selectionModel().selectedRows()}
        if not rows and self.table.currentIndex().isValid():
            rows = {self.proxy.mapToSource(self.table.currentIndex()).row()}
        return sorted(r for r in rows if r >= 0)

    def view_state(self) -> TableView:
        """The selected rows, the current cell and the scroll position, by row id and column."""
        m = self.model
        rows = sorted({self.proxy.mapToSource(i).row() for i in self.table.selectionModel().selectedRows()})
        selected = tuple(m.rows[r].get("id", "") for r in rows if 0 <= r < len(m.rows))
        current = None
        index = self.proxy.mapToSource(self.table.currentIndex())
        if index.isValid() and index.row() < len(m.rows):
            current = (m.rows[index.row()].get("id", ""), m.columns[index.column()])
        scroll = (self.table.horizontalScrollBar().value(), self.table.verticalScrollBar().value())
        return TableView(selected, current, scroll)

    def restore_view(self, state: TableView) -> None:
        """Select the same rows (by id) and put the current cell and the scroll back."""
        m = self.model
        by_id = {r.get("id", ""): i for i, r in enumerate(m.rows)}
        chosen = QItemSelection()
        for row_id in state.selected:
            i = by_id.get(row_id)
            if i is None:
                continue  # removed by the other program
            first = self.proxy.mapFromSource(m.index(i, 0))
            last = self.proxy.mapFromSource(m.index(i, len(m.columns) - 1))
            if first.isValid():
                chosen.select(first, last)
        flags = QItemSelectionModel.SelectionFlag
        selection = self.table.selectionModel()
        if state.current is not None and state.current[0] in by_id:
            current = m.index(by_id[state.current[0]], m.columns.index(state.current[1]))
            selection.setCurrentIndex(self.proxy.mapFromSource(current), flags.NoUpdate)
        selection.select(chosen, flags.ClearAndSelect | flags.Rows)
        self.table.horizontalScrollBar().setValue(state.scroll[0])
        self.table.verticalScrollBar().setValue(state.scroll[1])

    def select_source_row(self, row: int) -> None:
        index = self.proxy.mapFromSource(self.model.index(row, 0))
        if index.isValid():
            self.table.setCurrentIndex(index)
            self.table.selectRow(index.row())
            self.table.scrollTo(index)


class CatalogEditor(QMainWindow):
    """The catalog editor window (see the module docstring)."""

    #: (GpuCatalog, ModelCatalog, warnings) after every change that still leaves a usable catalog.
    catalogsChanged = Signal(object, object, object)
    #: The cloud instance snapshot after a price-list import saved the instance types it holds.
    instancesImported = Signal(object)

    def __init__(
        self,
        user: uc.UserCatalog,
        parent: QWidget | None = None,
        stale_months: int = 6,
        on_stale_months: Callable[[int], None] | None = None,
        startup_warnings: list[str] | None = None,
        current_gpus: Callable[[], GpuCatalog] | None = None,
        today: _dt.date | None = None,
    ) -> None:
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
        #: The edits the file held when this window last read or wrote it: what a save merges against.
        self._base = user

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

        def action(
            text: str,
            slot: Callable[[], object],
            shortcut: QKeySequence | QKeySequence.StandardKey | str | None = None,
            tip: str = "",
        ) -> QAction:
            act = QAction(text, self)
            if shortcut is not None:
                act.setShortcut(QKeySequence(shortcut))
            act.setToolTip(tip or text)
            act.setStatusTip(tip or text)
            # triggered(bool) would land in the slot's first optional parameter (a path, or
            # reset_all's confirm): a click calls the slot with none.
            act.triggered.connect(lambda _checked=False: slot())
            return act

        # Short labels on the buttons; what would be undone is in the tooltip (a long command
        # name would otherwise widen the toolbar and push the other buttons off screen).
        self.undo_action = action("Undo", self.undo.undo, QKeySequence.StandardKey.Undo)
        self.redo_action = action("Redo", self.undo.redo, None)
        self.redo_action.setShortcuts(
            [QKeySequence(QKeySequence.StandardKey.Redo), QKeySequence("Ctrl+Shift+Z")]
        )
        self.undo_action.setEnabled(False)
        self.redo_action.setEnabled(False)
        self.undo.canUndoChanged.connect(self.undo_action.setEnabled)
        self.undo.canRedoChanged.connect(self.redo_action.setEnabled)
        self.undo.undoTextChanged.connect(
            lambda text: self.undo_action.setToolTip(f"Undo {text}" if text else "Undo")
        )
        self.undo.redoTextChanged.connect(
            lambda text: self.redo_action.setToolTip(f"Redo {text}" if text else "Redo")
        )
        self.add_gpu_action = action(
            "Add GPU…",
            self.add_gpu,
            "Ctrl+Shift+N",
            "Add a GPU: every field the estimates need on one form, with defaults where the datasheet allows",
        )
        self.add_action = action(
            "Add row", self.add_row, "Ctrl+N", "Add an empty row (a unique id is filled in)"
        )
        self.duplicate_action = action(
            "Duplicate",
            self.duplicate_rows,
            "Ctrl+D",
            "Copy the selected rows under new ids (e.g. your own price quote)",
        )
        self.delete_action = action(
            "Delete",
            self.delete_rows,
            QKeySequence.StandardKey.Delete,
            "Delete the selected rows (bundled rows are hidden; Reset all brings them back)",
        )
        self.reset_row_action = action(
            "Reset row", self.reset_rows, None, "Put the selected bundled rows back to their bundled values"
        )
        self.reset_all_action = action(
            "Reset all…", self.reset_all, None, "Discard every edit of this catalog and use the bundled rows"
        )
        self.import_action = action(
            "Import…", self.import_rows, "Ctrl+I", "Import rows from a CSV or JSON file (preview first)"
        )
        self.export_action = action(
            "Export…", self.export_rows, "Ctrl+E", "Export this catalog, with your edits, as CSV or JSON"
        )
        self.prices_action = action(
            "Import price list…",
            self.import_price_lists,
            None,
            "Update cloud prices from gpuhunt or SkyPilot catalog files (preview first)",
        )
        self.restore_action = action(
            "Restore backup…",
            self.restore_backup,
            None,
            "Bring back a backup of your catalog edits (undoable)",
        )
        for act in (
            self.undo_action,
            self.redo_action,
            None,
            self.add_gpu_action,
            self.add_action,
            self.duplicate_action,
            self.delete_action,
            None,
            self.reset_row_action,
            self.reset_all_action,
            None,
            self.import_action,
            self.export_action,
            self.prices_action,
            self.restore_action,
        ):
            if act is None:
                bar.addSeparator()
            else:
                bar.addAction(act)
                self.addAction(act)
        bar.addSeparator()
        bar.addWidget(QLabel(" Flag prices older than ", self))
        low, high = STALE_PRICE_MONTHS_RANGE
        self.stale_field = NumberField(
            "6", parent=self, rule=NumberRule(Quantity.MONTHS, low, high, integer=True)
        )
        self.stale_field.set_value(stale_months)
        self.stale_field.setToolTip(
            "Prices dated before this many months are flagged here, in the results and in the report"
        )
        self.stale_field.edited.connect(self._on_stale_edited)
        bar.addWidget(self.stale_field)
        bar.addWidget(QLabel(" months", self))
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
        self.add_gpu_action.setEnabled(tab.model.kind == "gpus")

    def current_tab(self) -> CatalogTab:
        tab = self.tabs.currentWidget()
        assert isinstance(tab, CatalogTab)  # every tab is one
        return tab

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
        row = uc.full_row(
            model.kind, {"id": self._unique_id(model, "my-gpu" if model.kind == "gpus" else "my-model")}
        )
        self._push_rows(model, model.snapshot() + [row], f"Add {row['id']}")
        self.current_tab().select_source_row(len(model.rows) - 1)

    def add_gpu(self) -> AddGpuDialog:
        """Open the Add GPU form (see :mod:`.add_gpu`), window-modal; the row it accepts is added as
        one undo step and selected. Returns the open dialog."""
        model = self.models["gpus"]
        self.tabs.setCurrentWidget(self.tabs_by_kind["gpus"])
        dialog = AddGpuDialog({r.get("id", "") for r in model.rows}, self.today, self)
        dialog.accepted.connect(lambda: self._add_gpu_row(dialog.row))
        self.add_gpu_dialog = dialog
        dialog.open()
        return dialog

    def _add_gpu_row(self, new: dict[str, str] | None) -> None:
        if new is None:
            return
        model = self.models["gpus"]
        row = uc.full_row("gpus", new)
        self._push_rows(model, model.snapshot() + [row], f"Add {row['id']}")
        self.tabs_by_kind["gpus"].select_source_row(len(model.rows) - 1)
        self.statusBar().showMessage(f"Added {row['name']} ({row['id']}): it is in the comparison.", 8000)

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
        del model.rows[len(model.rows) - len(rows) :]
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
                self,
                "Reset to the bundled catalog",
                f"Discard every edit of the {KIND_TITLES[model.kind].lower()} catalog (changed, added and "
                f"deleted rows)? You can undo this.",
                QMessageBox.StandardButton.Reset | QMessageBox.StandardButton.Cancel,
                QMessageBox.StandardButton.Cancel,
            )
            if answer != QMessageBox.StandardButton.Reset:
                return False
        self._push_rows(model, uc.bundled_rows(model.kind), f"Reset all {KIND_TITLES[model.kind].lower()}")
        return True

    # -- import and export ------------------------------------------------------------------------
    def import_rows(self, path: str | None = None, preview: bool = True) -> ImportReport | None:
        model = self.current_model()
        if path is None:
            path, _ = QFileDialog.getOpenFileName(
                self,
                f"Import {KIND_TITLES[model.kind].lower()}",
                "",
                "Catalog files (*.csv *.json);;All files (*)",
            )
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
        head = (
            f"<b>{name}</b>: {len(report.added)} added, {len(report.updated)} updated, "
            f"{len(report.unchanged)} unchanged, <span style='color:{colors(self.palette()).problem}'>{len(report.rejected)} "
            f"rejected</span>."
        )
        dialog = PreviewDialog(f"Import {name}", head, import_details(report, before), report.changed, self)
        return dialog.exec() == QDialog.DialogCode.Accepted

    def export_rows(self, path: str | None = None, fmt: str | None = None) -> Path | None:
        model = self.current_model()
        if path is None:
            path, chosen = QFileDialog.getSaveFileName(
                self,
                f"Export {KIND_TITLES[model.kind].lower()}",
                f"{model.kind}.csv",
                "CSV (*.csv);;JSON (*.json)",
            )
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

    def import_price_lists(
        self, paths: list[str] | None = None, preview: bool = True, provider: str | None = None
    ) -> list[tuple[str, dict[str, str]]] | None:
        """Update cloud prices from gpuhunt or SkyPilot catalog files; returns the applied updates."""
        from ...core.formats.instance_import import price_list_instance_types
        from ...core.formats.pricelists import merge_price_imports, price_update_rows, read_price_list
        from ...storage.instances_store import InstancesSaved, save_imported_instances

        model = self.models["gpus"]
        if paths is None:
            paths, _ = QFileDialog.getOpenFileNames(
                self,
                "Import cloud price lists (gpuhunt or SkyPilot CSV)",
                "",
                "CSV files (*.csv);;All files (*)",
            )
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
            lines.append(
                f"{gpu_id}: cloud price {old.get('cloud_usd_per_hour_low') or '-'} / "
                f"{old.get('cloud_usd_per_hour_expected') or '-'} / {old.get('cloud_usd_per_hour_high') or '-'}"
                f" -> {changes.get('cloud_usd_per_hour_low', '-')} / "
                f"{changes.get('cloud_usd_per_hour_expected', '-')} / "
                f"{changes.get('cloud_usd_per_hour_high', '-')} USD per GPU-hour"
            )
            after[i] = {**old, **changes}
        types = [
            t
            for p, imp in zip(paths, imports, strict=True)
            for t in price_list_instance_types(p, imp, catalog)
        ]
        details = "\n".join(lines) + ("\n\n" if lines else "") + merged.summary()
        providers = ", ".join(sorted({t.provider for t in types}))
        head = (
            f"<b>{len(lines)} GPU{'s' if len(lines) != 1 else ''}</b> get new prices from "
            f"{len(paths)} file{'s' if len(paths) != 1 else ''} ({merged.rows_read} rows read; "
            f"{sum(merged.unmatched.values())} offers unmatched; {len(merged.rejected)} rows rejected)"
            + (
                f"; <b>{len(types)} cloud instance types</b> of {providers} say where to rent."
                if types
                else "."
            )
        )
        if preview:
            dialog = PreviewDialog("Import cloud price lists", head, details, bool(lines or types), self)
            if dialog.exec() != QDialog.DialogCode.Accepted:
                return updates
        notice = merged.summary()
        saved: InstancesSaved | None = None
        if types:
            try:
                saved = save_imported_instances(types, merged.as_of)
            except StorageError as exc:
                notice += f"\nThe cloud instance types could not be saved: {exc}"
            else:
                notice += (
                    f"\n{len(types)} cloud instance types of {providers} saved to {saved.path.name}: "
                    "the results name them as where to rent."
                )
        # The catalog's new prices and the saved instance types are one step: one undo takes back both.
        if lines or saved is not None:
            self.undo.beginMacro(f"Import prices from {', '.join(Path(p).name for p in paths)}")
            if lines:
                self._push_rows(model, after, "Import prices")
            if saved is not None:
                self.undo.push(
                    InstancesCommand(saved.providers, saved.before, types, merged.as_of, self._put_instances)
                )
            self.undo.endMacro()
        if saved is not None:
            self.instancesImported.emit(saved.snapshot)
        self._set_notice(notice)
        return updates

    def _put_instances(self, providers: Sequence[str], rows: Sequence[Any], updated: str) -> None:
        """Undo or redo of the instance types an import saved: make ``rows`` the rows of
        ``providers`` again, and let the estimates use the snapshot that results."""
        from ...storage.instances_store import put_provider_rows

        try:
            saved = put_provider_rows(providers, rows, updated)
        except StorageError as exc:
            self._set_notice(f"The cloud instance types could not be put back: {exc}")
            return
        self.instancesImported.emit(saved.snapshot)

    def _catalog_for_matching(self) -> GpuCatalog:
        if self._current_gpus is not None:
            return self._current_gpus()
        gpus, _models, _w = uc.build_catalogs(self.user_catalog())
        return gpus

    def restore_backup(self, path: str | Path | None = None) -> bool:
        if path is None:
            backups = user_catalog_backups()
            if not backups:
                QMessageBox.information(
                    self, "Restore backup", "There is no backup of your catalog edits yet."
                )
                return False
            names = [
                f"{p.name}  ({_dt.datetime.fromtimestamp(p.stat().st_mtime):%Y-%m-%d %H:%M})" for p in backups
            ]
            choice, ok = QInputDialog.getItem(self, "Restore backup", "Bring back:", names, 0, False)
            if not ok:
                return False
            path = backups[names.index(choice)]
        try:
            loaded = restore_user_catalog(path)
        except (InputError, OSError) as exc:
            QMessageBox.warning(self, "Backup not restored", str(exc))
            return False
        self._base = loaded.catalog  # the file holds it now; the steps below show it
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
            saved = save_and_merge_user_catalog(user, self._base)
            self._base = saved.catalog
            self.last_saved_path = saved.path
            self.last_save_error = ""
            if saved.merged:  # another program saved meanwhile: show what the file holds now
                self._show_merged(user, saved.catalog)
                user = saved.catalog
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

    def _show_merged(self, mine: uc.UserCatalog, merged: uc.UserCatalog) -> None:
        """Show the edits a save merged with another program's (:func:`save_and_merge_user_catalog`):
        each table takes in the other program's rows and cells, the undo stack's tables are moved
        onto them (:func:`~gpuadvisor.core.formats.user_catalog_merge.rebase_rows`: undo still takes
        back this window's edits only), and the selection, current cell and scroll stay."""
        said = []
        for kind, model in self.models.items():
            base, theirs = mine.edits(kind), merged.edits(kind)
            if base == theirs:
                continue
            rows = [dict(m.row) for m in uc.merge(kind, theirs)[0]]
            said.append(self._merged_rows_text(kind, model.rows, rows))
            self._rebase_undo(model, partial(rebase_rows, kind, base=base, theirs=theirs))
            tab = self.tabs_by_kind[kind]
            where = tab.view_state()
            model._adopt_rows(rows)
            tab.restore_view(where)
        if said:
            self._set_notice(
                "Another gpuadvisor window or command saved the catalog meanwhile; its changes are shown "
                f"here with yours ({'; '.join(said)}). Undo takes back your own edits only."
            )
            self.statusBar().showMessage("Merged with changes saved by another program", 8000)

    @staticmethod
    def _merged_rows_text(kind: str, before: list[dict[str, str]], after: list[dict[str, str]]) -> str:
        """``GPUs: cli-a added, h100-sxm changed``: what the other program's save changed."""
        old = {r.get("id", ""): r for r in before}
        new = {r.get("id", ""): r for r in after}
        parts = []
        for verb, ids in (
            ("added", [i for i in new if i not in old]),
            ("changed", [i for i in new if i in old and new[i] != old[i]]),
            ("removed", [i for i in old if i not in new]),
        ):
            if ids:
                more = f" and {len(ids) - 3} more" if len(ids) > 3 else ""
                parts.append(f"{', '.join(ids[:3])}{more} {verb}")
        return f"{KIND_TITLES[kind]}: {', '.join(parts)}"

    def _rebase_undo(
        self, model: CatalogModel, move: Callable[[list[dict[str, str]]], list[dict[str, str]]]
    ) -> None:
        """Move every table the undo stack holds for ``model`` (in macros too) with ``move``."""

        def visit(command: QUndoCommand) -> None:
            if isinstance(command, RowsCommand) and command.model is model:
                command.rebase(move)
            for j in range(command.childCount()):
                visit(command.child(j))

        for i in range(self.undo.count()):
            visit(self.undo.command(i))

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
            parts.append(
                f"<span style='color:{colors(self.palette()).problem}'><b>{html.escape(self.last_save_error)}</b></span>"
            )
        invalid = [(kind, r) for kind, m in self.models.items() for r in m.invalid_rows()]
        if invalid:
            items = []
            for kind, r in invalid[:4]:
                m = self.models[kind]
                items.append(
                    f"{html.escape(m.rows[r].get('id') or f'row {r + 1}')}: {html.escape(m.row_error(r))}"
                )
            more = f" and {len(invalid) - 4} more" if len(invalid) > 4 else ""
            parts.append(
                f"<span style='color:{colors(self.palette()).problem}'>{len(invalid)} invalid row{'s' if len(invalid) != 1 else ''} "
                f"left out of the estimates: {'; '.join(items)}{more}.</span>"
            )
        elif self.build_warnings:
            parts.append("<br>".join(html.escape(w) for w in self.build_warnings[:3]))
        if not parts or parts == [html.escape(self.notice).replace("\n", "<br>")]:
            parts.append(
                "Edits are saved as you make them and used by the estimates at once. Double-click a "
                "cell to edit; tinted cells differ from the bundled catalog (hover for the bundled value)."
            )
        self.info.setText("<br>".join(parts))

    def show_banner(self, warnings: list[str]) -> None:
        """A notice above the tables (e.g. a damaged catalog file that was set aside at start)."""
        text = "<br>".join(html.escape(w) for w in warnings)
        self.banner.setText(f"{text}<br>Use <b>Restore backup…</b> to bring back a saved copy.")
        self.banner.show()

    def _show_rejected(self, message: str) -> None:
        self.statusBar().showMessage(message, 8000)
        self.info.setText(
            f"<span style='color:{colors(self.palette()).problem}'><b>Not changed:</b> {html.escape(message)}</span>"
        )

    def _on_stale_edited(self) -> None:
        """A valid number of months typed: flag prices older than it (an invalid one shows its message)."""
        try:
            months = self.stale_field.value()
        except ValueError:
            return
        if months is not None:
            self._stale_changed(int(months))

    def _stale_changed(self, months: int) -> None:
        for model in self.models.values():
            model.set_stale_months(months)
        for tab in self.tabs_by_kind.values():
            tab._update_counts()
        if self._on_stale_months is not None:
            self._on_stale_months(months)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.flush()
        super().closeEvent(event)
