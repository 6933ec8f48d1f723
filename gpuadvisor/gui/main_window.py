"""The main window: three wizard pages on the left, live results on the right.

Pages edit the scenario (``page.apply(scenario)``); :class:`AppState` recomputes once and
broadcasts ``estimateChanged``; charts, the ranking table and the detail panel redraw from
the estimate. Nothing here computes memory, speed or cost.
"""

from __future__ import annotations

import base64
import html
import json
import logging
from pathlib import Path

from PySide6.QtCore import QByteArray, QItemSelectionModel, Qt, QThread, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QMainWindow,
                               QMessageBox, QPushButton, QScrollArea, QSizePolicy, QSplitter, QTableView, QTabWidget,
                               QTextBrowser, QVBoxLayout, QWidget)

from .. import __version__
from ..core.errors import InputError
from ..core.estimate import Estimate
from ..core.scenario import Scenario
from ..core.serialize import estimate_to_dict
from ..core.units import format_count, format_hours, format_usd
from .pages.budget_page import BudgetPage
from .pages.model_page import ModelPage
from .pages.workload_page import WorkloadPage
from .ranking_table import ROLE_KEY, RankingModel, RankingProxy, RankingView
from .state import AppState

log = logging.getLogger(__name__)
MAX_RECENT = 10


class ReportExport(QThread):
    """Lays out and writes the PDF in a worker thread (the chart images are drawn beforehand)."""

    succeeded = Signal(str, int, float)
    failed = Signal(str)

    def __init__(self, report, est: Estimate, path: str, page_size: str, images, parent=None):
        super().__init__(parent)
        self.args = (report, est, path, page_size, images)

    def run(self) -> None:
        from .report_pdf import export_pdf

        report, est, path, page_size, images = self.args
        try:
            stats = export_pdf(report, est, path, page_size, images=images)
        except (InputError, OSError, ValueError) as exc:
            self.failed.emit(str(exc))
            return
        self.succeeded.emit(str(path), stats.pages, stats.seconds)


class MainWindow(QMainWindow):
    """The application window."""

    def __init__(self, state: AppState, settings=None, default_scenario: Scenario | None = None,
                 deferred_charts: bool = True, user_catalog=None, catalog_warnings=(),
                 catalog_set_aside: bool = False):
        super().__init__()
        self.state = state
        self.settings = settings
        self.user_catalog = user_catalog  # the edits loaded at start; the editor owns them afterwards
        self.catalog_warnings = list(catalog_warnings)
        self._catalog_notice = list(catalog_warnings) if catalog_set_aside else []
        self.catalog_editor = None
        self.catalog_warning_box = None
        self.default_scenario = default_scenario or state.scenario
        self.charts_ready = False
        self.vram_chart = self.cost_chart = self.whatif_chart = None
        self.setWindowTitle("gpuadvisor")
        self.resize(1400, 880)

        # --- pages --------------------------------------------------------------------------
        self.workload_page = WorkloadPage(state.gpus)
        self.model_page = ModelPage(state.models)
        self.budget_page = BudgetPage()
        self.pages = (self.workload_page, self.model_page, self.budget_page)
        self.page_tabs = QTabWidget()
        for i, page in enumerate(self.pages):
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            scroll.setWidget(page)
            self.page_tabs.addTab(scroll, f"{i + 1}. {page.title}")
            page.edited.connect(self._on_page_edited)
        self.back_button = QPushButton("Back")
        self.next_button = QPushButton("Next")
        self.back_button.clicked.connect(lambda: self.page_tabs.setCurrentIndex(self.page_tabs.currentIndex() - 1))
        self.next_button.clicked.connect(lambda: self.page_tabs.setCurrentIndex(self.page_tabs.currentIndex() + 1))
        self.page_tabs.currentChanged.connect(self._on_page_changed)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(6, 6, 6, 6)
        left_layout.addWidget(self.page_tabs, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.back_button)
        buttons.addStretch(1)
        buttons.addWidget(self.next_button)
        left_layout.addLayout(buttons)
        left.setMinimumWidth(440)

        # --- results ------------------------------------------------------------------------
        # Always three lines (the job, the answer, the first warning), so the layout below it never
        # moves while the user types: a label that grows and shrinks re-lays out and repaints the
        # whole window. Lines too long for the width are clipped; the tooltip has everything.
        self.summary = QLabel("Computing…")
        self.summary.setWordWrap(False)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        margins = self.summary.contentsMargins()
        self.summary.setFixedHeight(self.summary.fontMetrics().lineSpacing() * 3 + 4 + margins.top()
                                    + margins.bottom())
        self.error_banner = QLabel()
        self.error_banner.setWordWrap(True)
        self.error_banner.setStyleSheet("background: #fde8ea; color: #8a0015; padding: 6px; border-radius: 3px;")
        self.error_banner.hide()
        self.chart_tabs = QTabWidget()
        for name in ("VRAM across GPUs", "Cost vs time", "What-if"):
            placeholder = QLabel("Loading charts…")
            placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.chart_tabs.addTab(placeholder, name)
        self.whatif_axis = "context"

        self.ranking_model = RankingModel(self)
        self.ranking_model.stale_months = self._stale_months()
        self.ranking_proxy = RankingProxy(self)
        self.ranking_proxy.setSourceModel(self.ranking_model)
        self.table = RankingView(self.ranking_model, self.ranking_proxy)
        self.table.setModel(self.ranking_proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(-1, Qt.SortOrder.AscendingOrder)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.verticalHeader().hide()  # row numbers cost a headerData call per row per paint
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setAlternatingRowColors(True)
        # Size columns from the first rows only: measuring all ~600 rows takes most of a second.
        self.table.horizontalHeader().setResizeContentsPrecision(25)
        self._columns_sized = False
        self.table.selectionModel().currentRowChanged.connect(self._on_table_row_changed)
        self.fitting_only = QCheckBox("Only setups that fit")
        self.fitting_only.setChecked(True)
        self.fitting_only.toggled.connect(self._on_fitting_only_toggled)
        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)
        self.detail.setMinimumWidth(300)
        # A scroll bar that comes and goes with the text length resizes the viewport twice per
        # update and re-lays out the window around it; keep it in place.
        self.detail.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)

        table_box = QWidget()
        tb = QVBoxLayout(table_box)
        tb.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(QLabel("<b>Ranking</b> (cheapest first; click a column to sort)"))
        head.addStretch(1)
        head.addWidget(self.fitting_only)
        tb.addLayout(head)
        tb.addWidget(self.table)
        self.bottom_split = QSplitter(Qt.Orientation.Horizontal)
        self.bottom_split.addWidget(table_box)
        self.bottom_split.addWidget(self.detail)
        self.bottom_split.setStretchFactor(0, 3)
        self.bottom_split.setStretchFactor(1, 1)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.summary)
        top_layout.addWidget(self.error_banner)
        top_layout.addWidget(self.chart_tabs, 1)
        self.right_split = QSplitter(Qt.Orientation.Vertical)
        self.right_split.addWidget(top)
        self.right_split.addWidget(self.bottom_split)
        self.right_split.setStretchFactor(0, 3)
        self.right_split.setStretchFactor(1, 2)

        self.main_split = QSplitter(Qt.Orientation.Horizontal)
        self.main_split.addWidget(left)
        self.main_split.addWidget(self.right_split)
        self.main_split.setStretchFactor(1, 1)
        self.main_split.setSizes([470, 1130])
        self.setCentralWidget(self.main_split)

        self._build_menus()
        self.statusBar().showMessage("Ready")

        state.estimateChanged.connect(self._on_estimate_changed)
        state.errorChanged.connect(self._on_error_changed)
        state.dirtyChanged.connect(self._update_title)
        state.pathChanged.connect(self._update_title)
        state.selectionChanged.connect(self._on_selection_changed)
        state.scenarioChanged.connect(self._on_scenario_loaded)

        self._fill_pages(state.scenario)
        self._on_page_changed(0)
        self._restore_layout()
        self._deferred_charts = deferred_charts
        if not deferred_charts:
            self.create_charts()
        self._init_calibration()  # measurements & calibration: saved profile, Tools menu entry, status label
        state.recompute()
        if self.catalog_warnings:
            QTimer.singleShot(0, self._show_catalog_warnings)

    def _show_catalog_warnings(self) -> None:
        """Say once what was wrong with the user's catalog file (it was set aside, not lost)."""
        self.statusBar().showMessage(self.catalog_warnings[0], 15000)
        if not self._catalog_notice:
            return
        box = QMessageBox(QMessageBox.Icon.Warning, "Your catalog edits were set aside",
                          "\n\n".join(self._catalog_notice), QMessageBox.StandardButton.Ok, self)
        box.setInformativeText("The bundled catalog is in use. Tools > Catalog editor > Restore backup… brings "
                               "back a saved copy of your edits.")
        box.setModal(False)
        box.show()
        self.catalog_warning_box = box

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._deferred_charts and not self.charts_ready:
            QTimer.singleShot(60, self.create_charts)  # after the first frame is painted

    # --- charts (created after the window shows: pyqtgraph is the slowest import) -----------------
    def create_charts(self) -> None:
        if self.charts_ready:
            return
        from .charts import CostTimeChart, VramChart, WhatIfChart  # deferred: ~0.6 s of imports

        self.vram_chart = VramChart()
        self.cost_chart = CostTimeChart()
        self.whatif_chart = WhatIfChart()
        whatif_box = QWidget()
        box_layout = QVBoxLayout(whatif_box)
        box_layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("Memory per GPU as"))
        self.whatif_axis_box = QComboBox()
        self.whatif_axis_box.addItem("the context length grows", "context")
        self.whatif_axis_box.addItem("the batch (or concurrent users) grows", "batch")
        self.whatif_axis_box.setToolTip("Where does each card stop fitting? The selected setup's GPU and the "
                                        "cheapest ones that fit are drawn, each with its capacity.")
        self.whatif_axis_box.currentIndexChanged.connect(
            lambda _i: self.set_whatif_axis(self.whatif_axis_box.currentData()))
        row.addWidget(self.whatif_axis_box)
        row.addStretch(1)
        box_layout.addLayout(row)
        box_layout.addWidget(self.whatif_chart, 1)
        for i, chart in enumerate((self.vram_chart, self.cost_chart, whatif_box)):
            name = self.chart_tabs.tabText(i)
            old = self.chart_tabs.widget(i)
            self.chart_tabs.removeTab(i)
            self.chart_tabs.insertTab(i, chart, name)
            old.deleteLater()
        self.chart_tabs.setCurrentIndex(0)
        self.chart_tabs.currentChanged.connect(self._on_chart_tab_changed)
        self.vram_chart.gpuClicked.connect(self._on_gpu_clicked)
        self.cost_chart.candidateSelected.connect(self.state.select)
        self.charts_ready = True
        if self.state.estimate is not None:
            self._update_charts(self.state.estimate)

    def _update_charts(self, est: Estimate) -> None:
        """Redraw the visible chart now; the hidden ones when their tab is opened."""
        if not self.charts_ready:
            return
        self._stale_charts = {0, 1, 2}
        self._draw_chart(self.chart_tabs.currentIndex(), est)

    def _draw_chart(self, index: int, est: Estimate) -> None:
        if index not in getattr(self, "_stale_charts", set()):
            return
        self._stale_charts.discard(index)
        if index == 0:
            self.vram_chart.set_candidates(list(est.best_per_gpu().values()))
        elif index == 1:
            self.cost_chart.set_estimate(est)
            self.cost_chart.set_selected(self.state.selected)
        elif index == 2:
            from .charts.whatif_data import whatif_curves
            self.whatif_chart.set_curves(*self._whatif_input(est, est.best_per_gpu(), whatif_curves))

    def _on_chart_tab_changed(self, index: int) -> None:
        if self.charts_ready and self.state.estimate is not None:
            self._draw_chart(index, self.state.estimate)

    def _whatif_input(self, est: Estimate, best, whatif_curves):
        # The selected candidate's GPU plus the cheapest few that fit, at most six curves.
        ids: list[str] = []
        selected = est.candidate(self.state.selected)
        if selected is not None:
            ids.append(selected.gpu.id)
        for c in est.ranking:
            if c.gpu.id not in ids:
                ids.append(c.gpu.id)
            if len(ids) >= 4:
                break
        for gid in best:
            if len(ids) >= 4:
                break
            if gid not in ids:
                ids.append(gid)
        axis = self.whatif_axis
        label = "Sequence length (tokens)" if est.scenario.workload.is_training else "Context per request (tokens)"
        if axis == "batch":
            label = "Micro-batch per GPU" if est.scenario.workload.is_training else "Concurrent sequences"
        return label, whatif_curves(est, ids, axis)

    # --- menus -------------------------------------------------------------------------------
    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self.new_action = self._action(file_menu, "&New", QKeySequence.StandardKey.New, self.on_new)
        self.open_action = self._action(file_menu, "&Open…", QKeySequence.StandardKey.Open, self.on_open)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.save_action = self._action(file_menu, "&Save", QKeySequence.StandardKey.Save, self.on_save)
        self.save_as_action = self._action(file_menu, "Save &as…", QKeySequence.StandardKey.SaveAs, self.on_save_as)
        file_menu.addSeparator()
        self.report_action = self._action(file_menu, "Export &report (PDF)…", QKeySequence("Ctrl+P"),
                                          self.on_export_report)
        size_menu = file_menu.addMenu("Report page si&ze")
        self.page_size_actions = {}
        group = QActionGroup(self)
        for size in ("A4", "Letter"):
            action = size_menu.addAction(size)
            action.setCheckable(True)
            action.setChecked(size == self._page_size())
            action.triggered.connect(lambda _=False, sz=size: self._set_page_size(sz))
            group.addAction(action)
            self.page_size_actions[size] = action
        self.export_action = self._action(file_menu, "&Export comparison (JSON)…", QKeySequence("Ctrl+E"),
                                          self.on_export_json)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QKeySequence.StandardKey.Quit, self.close)
        view = self.menuBar().addMenu("&View")
        self._action(view, "What-if over &context length", QKeySequence("Ctrl+1"), lambda: self.set_whatif_axis("context"))
        self._action(view, "What-if over &batch size", QKeySequence("Ctrl+2"), lambda: self.set_whatif_axis("batch"))
        self.tools_menu = self.menuBar().addMenu("&Tools")
        self.catalog_action = self._action(self.tools_menu, "&Catalog editor…", QKeySequence("Ctrl+K"),
                                           self.open_catalog_editor)
        self.catalog_action.setStatusTip("Edit GPUs, prices and model presets; edits are saved and used at once")
        help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "&About gpuadvisor", QKeySequence.StandardKey.HelpContents, self.on_about)
        self._fill_recent_menu()

    # --- catalog editor ----------------------------------------------------------------------
    def open_catalog_editor(self):
        """Show the catalog editor (created on first use) and return it."""
        if self.catalog_editor is None:
            from ..core.user_catalog import UserCatalog
            from .catalog_editor import CatalogEditor

            months = self._stale_months()
            self.catalog_editor = CatalogEditor(
                self.user_catalog or UserCatalog.empty(), parent=self, stale_months=months,
                on_stale_months=self._set_stale_months, startup_warnings=self._catalog_notice,
                current_gpus=lambda: self.state.gpus)
            self.catalog_editor.catalogsChanged.connect(self._on_catalogs_edited)
        self.catalog_editor.show()
        self.catalog_editor.raise_()
        self.catalog_editor.activateWindow()
        return self.catalog_editor

    def _on_catalogs_edited(self, gpus, models, warnings) -> None:
        self.model_page.set_models(models)
        self.ranking_model.stale_months = self._stale_months()
        self.state.set_catalogs(gpus, models)
        if getattr(self, "measurements_dialog", None) is not None:
            self.state.flush()
            self.measurements_dialog.refresh()  # its estimates use the edited catalog too
        if warnings:
            self.statusBar().showMessage(warnings[0], 8000)

    def _stale_months(self) -> int:
        return int(getattr(self.settings, "stale_price_months", 6) or 6) if self.settings is not None else 6

    def _set_stale_months(self, months: int) -> None:
        if self.settings is not None:
            self.settings.stale_price_months = months
            self._save_settings_quietly()
        self.ranking_model.stale_months = months
        if self.state.estimate is not None:
            self.ranking_model.set_estimate(self.state.estimate)

    def _save_settings_quietly(self) -> None:
        from ..storage import StorageError
        from ..storage.settings import save_settings

        try:
            save_settings(self.settings)
        except StorageError as exc:
            self.statusBar().showMessage(str(exc), 8000)

    def _action(self, menu, text, shortcut, slot) -> QAction:
        action = QAction(text, self)
        action.setShortcut(shortcut)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        files = self._recent_files()
        for path in files:
            action = self.recent_menu.addAction(Path(path).name)
            action.setToolTip(path)
            action.setStatusTip(path)
            action.triggered.connect(lambda _=False, p=path: self.open_path(p))
        self.recent_menu.setEnabled(bool(files))

    def _recent_files(self) -> list[str]:
        if self.settings is None:
            return []
        from ..storage.settings import existing_recent_files
        return list(existing_recent_files(self.settings))

    # --- page <-> state --------------------------------------------------------------------
    def _fill_pages(self, scenario: Scenario) -> None:
        for page in self.pages:
            page.set_scenario(scenario)

    def _on_scenario_loaded(self, scenario: Scenario) -> None:
        if not getattr(self, "_applying", False):
            self._fill_pages(scenario)

    def _on_page_edited(self) -> None:
        scenario = self.state.scenario
        try:
            for page in self.pages:
                scenario = page.apply(scenario)
        except (InputError, ValueError) as exc:
            self.state.set_error(str(exc))
            if hasattr(self.sender(), "show_error") and isinstance(exc, InputError) and \
                    exc.field.startswith(("model", "workload.weights")):
                self.model_page.show_error(str(exc))
            return
        self.model_page.show_error("")
        self.state.set_error("")
        self._applying = True
        try:
            self.state.set_scenario(scenario)
        finally:
            self._applying = False

    def _on_page_changed(self, index: int) -> None:
        self.back_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(self.pages) - 1)

    # --- estimate -> views -------------------------------------------------------------------
    def _on_estimate_changed(self, est: Estimate) -> None:
        self.summary.setText(self._summary_html(est))
        self.summary.setToolTip(self._summary_tooltip(est))
        self.ranking_model.set_estimate(est)
        if not self._columns_sized and self.ranking_model.rows:
            self.table.resizeColumnsToContents()
            self._columns_sized = True
        self._update_charts(est)
        self._select_row(self.state.selected)
        self._show_detail(self.state.selected)
        self.model_page.show_model(
            f"{est.model.name}: {format_count(est.model.parameters)} parameters"
            + (f", {format_count(est.model.active_parameters)} active per token" if est.model.is_moe else "")
            + f", {est.model.num_layers} layers, context up to {est.model.max_context:,} tokens.")
        self.statusBar().showMessage(f"{len(est.candidates)} setups compared in {self.state.last_compute_ms:.0f} ms")

    def _on_error_changed(self, message: str) -> None:
        self.error_banner.setText(f"<b>Fix this input:</b> {html.escape(message)}" if message else "")
        self.error_banner.setVisible(bool(message))

    def _summary_html(self, est: Estimate) -> str:
        w = est.scenario.workload
        head = (f"<b>{html.escape(est.model.name)}</b> · {w.kind.replace('_', ' ')} · weights {w.weights} · "
                f"{'micro-batch' if w.is_training else 'concurrent sequences'} {w.batch_size} · "
                f"{w.context_tokens:,} tokens")
        fitting = sum(1 for c in est.candidates if c.fits)
        if est.ranking:
            best = est.ranking[0]
            cost = best.cost
            money = f", about {format_usd(cost.cost_usd.expected)}" if cost and cost.cost_usd else ""
            time = f" in {format_hours(cost.job_hours.expected)}" if cost else ""
            setup = "one GPU" if best.gpu_count == 1 else best.parallelism
            line = (f"Cheapest setup that fits: <b>{best.gpu_count} × {html.escape(best.gpu.name)}</b> "
                    f"({setup}){time}{money}. {fitting} of {len(est.candidates)} setups fit.")
        else:
            line = "<span style='color:#8a0015'><b>Nothing fits.</b></span> See the changes suggested below."
        notes = ""
        if est.warnings:
            more = f" (+{len(est.warnings) - 1} more: hover here)" if len(est.warnings) > 1 else ""
            notes = f"<br><span style='color:#8a5300'>⚠ {html.escape(est.warnings[0])}{more}</span>"
        if est.calibration is not None:  # calibration to the user's measurements is on
            n = len(est.calibrated_gpus)
            line += (f" <span style='color:#117733'>Calibrated to your measurements on {n} GPU type"
                     f"{'s' if n != 1 else ''}.</span>" if n else
                     " <span style='color:#117733'>Calibration on (no values for this scenario's engine).</span>")
        return f"{head}<br>{line}{notes}"

    def _summary_tooltip(self, est: Estimate) -> str:
        """Every warning in full (the summary shows the first one)."""
        if not est.warnings:
            return ""
        return "<br>".join(f"⚠ {html.escape(w)}" for w in est.warnings)

    # --- selection ---------------------------------------------------------------------------
    def _on_table_row_changed(self, current, _previous) -> None:
        if current.isValid():
            self.state.select(current.data(ROLE_KEY))

    def _on_gpu_clicked(self, gpu_id: str) -> None:
        est = self.state.estimate
        if est is None:
            return
        best = est.best_per_gpu().get(gpu_id)
        if best is not None:
            self.state.select(best.key)

    def _on_selection_changed(self, key: str) -> None:
        self._select_row(key)
        self._show_detail(key)
        if self.charts_ready:
            self.cost_chart.set_selected(key)

    def _select_row(self, key: str) -> None:
        current = self.table.currentIndex()
        if current.isValid() and current.siblingAtColumn(0).data(ROLE_KEY) == key:
            return
        source_row = self.ranking_model.row_of(key)
        if source_row is None:
            return
        index = self.ranking_proxy.mapFromSource(self.ranking_model.index(source_row, 0))
        if index.isValid():
            selection = self.table.selectionModel()
            selection.blockSignals(True)
            flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
            selection.setCurrentIndex(index, flags)
            selection.blockSignals(False)
            self.table.viewport().update()

    def _show_detail(self, key: str) -> None:
        est = self.state.estimate
        if est is None:
            self.detail.setHtml("")
            return
        c = est.candidate(key)
        parts = []
        if c is not None:
            g = c.memory.gib()
            setup = "one GPU" if c.gpu_count == 1 else c.parallelism
            parts.append(f"<h3>{c.gpu_count} × {html.escape(c.gpu.name)} ({setup})</h3>")
            parts.append(f"<p><b>{c.verdict}</b>: {g['device_total']:.1f} of {c.capacity_gib:.1f} GiB per GPU "
                         f"({c.utilization:.0%}), headroom {c.headroom_gib:+.1f} GiB.</p>")
            wi = est.what_if(c)
            parts.append(f"<p>Largest batch that fits: {wi.max_batch:,}; longest context: {wi.max_context:,} "
                         f"tokens.</p>")
            if c.performance is not None and c.cost is not None:
                p, cost = c.performance, c.cost
                parts.append(f"<p>{p.tokens_per_s.expected:,.0f} tokens/s ({p.bound}-bound, {p.precision_used}); "
                             f"job {format_hours(cost.job_hours.low)} – {format_hours(cost.job_hours.high)}")
                if cost.cost_usd is not None:
                    parts.append(f", {format_usd(cost.cost_usd.low)} – {format_usd(cost.cost_usd.high)}"
                                 f" ({format_usd(cost.usd_per_million_tokens or 0)} per 1M tokens)")
                parts.append(".</p>")
                if p.time_to_first_token_s is not None:
                    parts.append(f"<p>Time to first token {p.time_to_first_token_s * 1000:,.0f} ms; "
                                 f"{p.tokens_per_s_per_user or 0:,.0f} tokens/s per user.</p>")
                if cost.buy is not None:
                    b = cost.buy
                    verdict = "buying is cheaper" if b.buy_is_cheaper else "renting is cheaper"
                    be = (f"; break-even at {b.break_even_utilization:.0%} utilization"
                          if b.break_even_utilization is not None else "")
                    parts.append(f"<p>Buy vs rent (per GPU-hour of use): owned {format_usd(b.owned_usd_per_hour)}, "
                                 f"rented {format_usd(b.rent_usd_per_hour)}: {verdict}{be}.</p>")
            if c.cost is not None and c.cost.cost_usd is not None and self.ranking_model.is_stale(c):
                when = f"dated {c.gpu.price_as_of}" if c.gpu.price_as_of else "undated"
                parts.append(f"<p style='color:#8a5300'>The prices of this GPU are {when}, older than "
                             f"{self._stale_months()} months: check them in Tools &gt; Catalog editor.</p>")
            if c.under_provisioned:
                parts.append("<p style='color:#8a0015'>Under-provisioned: no room left for longer samples or "
                             "allocator spikes (the target is 85–95% of VRAM).</p>")
            if c.over_provisioned:
                parts.append("<p style='color:#8a5300'>Over-provisioned: most of the memory stays idle, or a much "
                             "cheaper setup meets the same deadline.</p>")
        if est.advice:
            parts.append("<h4>Cheapest changes that make it work</h4><ul>")
            parts += [f"<li>{html.escape(str(a))}</li>" for a in est.advice[:6]]
            parts.append("</ul>")
        self.detail.setHtml("".join(parts) or "<p>Select a setup in the table or a chart.</p>")

    def _on_fitting_only_toggled(self, value: bool) -> None:
        self.ranking_model.set_fitting_only(value)
        self._select_row(self.state.selected)

    def set_whatif_axis(self, axis: str) -> None:
        self.whatif_axis = axis
        if self.charts_ready:
            self.whatif_axis_box.blockSignals(True)
            self.whatif_axis_box.setCurrentIndex(max(0, self.whatif_axis_box.findData(axis)))
            self.whatif_axis_box.blockSignals(False)
        self.chart_tabs.setCurrentIndex(2)
        if self.state.estimate is not None:
            self._update_charts(self.state.estimate)

    # --- files -----------------------------------------------------------------------------
    def _update_title(self, *_args) -> None:
        name = self.state.path.name if self.state.path else "Untitled"
        self.setWindowTitle(f"{name}[*] — gpuadvisor")
        self.setWindowModified(self.state.dirty)

    def maybe_save(self) -> bool:
        """Ask about unsaved changes; False means the user cancelled."""
        if not self.state.dirty:
            return True
        answer = QMessageBox.question(self, "Unsaved changes", "The scenario has unsaved changes. Save them first?",
                                      QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard
                                      | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Save)
        if answer == QMessageBox.StandardButton.Cancel:
            return False
        if answer == QMessageBox.StandardButton.Save:
            return self.on_save()
        return True

    def on_new(self) -> None:
        if self.maybe_save():
            self.state.new(self.default_scenario)

    def on_open(self) -> None:
        if not self.maybe_save():
            return
        path, _ = QFileDialog.getOpenFileName(self, "Open scenario", self._last_dir(), "Scenarios (*.json)")
        if path:
            self.open_path(path)

    def open_path(self, path: str) -> bool:
        try:
            self.state.open(path)
        except InputError as exc:
            QMessageBox.warning(self, "Cannot open scenario", str(exc))
            return False
        for warning in self.state.scenario.warnings:
            self.statusBar().showMessage(warning, 8000)
        self._remember(path)
        return True

    def on_save(self) -> bool:
        if self.state.path is None:
            return self.on_save_as()
        return self._save_to(self.state.path)

    def on_save_as(self) -> bool:
        path, _ = QFileDialog.getSaveFileName(self, "Save scenario", self._last_dir(), "Scenarios (*.json)")
        if not path:
            return False
        if not path.endswith(".json"):
            path += ".json"
        return self._save_to(Path(path))

    def _save_to(self, path: Path) -> bool:
        try:
            self.state.save(path)
        except InputError as exc:
            QMessageBox.warning(self, "Cannot save scenario", str(exc))
            return False
        self._remember(str(path))
        self.statusBar().showMessage(f"Saved {path.name}", 4000)
        return True

    def _page_size(self) -> str:
        size = getattr(self.settings, "page_size", "A4") if self.settings is not None else "A4"
        return size if size in ("A4", "Letter") else "A4"

    def _set_page_size(self, size: str) -> None:
        if self.settings is not None:
            self.settings.page_size = size

    def on_export_report(self) -> None:
        """File > Export report: pick a file, then write the PDF without blocking the window."""
        self.state.flush()
        if self.state.estimate is None:
            return
        default = str(Path(self._last_dir()) / "gpuadvisor-report.pdf")
        path, _ = QFileDialog.getSaveFileName(self, "Export report", default, "PDF (*.pdf)")
        if path:
            if not path.lower().endswith(".pdf"):
                path += ".pdf"
            self.export_report_to(path)

    def export_report_to(self, path: str) -> "ReportExport | None":
        """Start writing the report to ``path``; returns the running export (tests wait on it)."""
        import datetime

        from ..core.report import build_report
        from .report_pdf import chart_images, check_target

        est = self.state.estimate
        if est is None:
            return None
        try:
            check_target(path)
        except InputError as exc:
            QMessageBox.warning(self, "Cannot export the report", str(exc))
            return None
        report = build_report(est, self.state.gpus.meta, datetime.date.today(),
                              stale_after_months=self._stale_months())
        images = chart_images(est, report.recommended_key)  # widgets: GUI thread
        job = ReportExport(report, est, path, self._page_size(), images, self)
        job.succeeded.connect(self._on_report_written)
        job.failed.connect(lambda message: QMessageBox.warning(self, "Cannot export the report", message))
        job.finished.connect(lambda: self.report_action.setEnabled(True))
        self.report_action.setEnabled(False)
        self.statusBar().showMessage(f"Writing {Path(path).name}…")
        self._report_job = job
        job.start()
        return job

    def _on_report_written(self, path: str, pages: int, seconds: float) -> None:
        self.statusBar().showMessage(f"Report written: {Path(path).name}, {pages} pages in {seconds:.1f} s", 8000)

    def on_export_json(self) -> None:
        self.state.flush()
        if self.state.estimate is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export comparison", self._last_dir(), "JSON (*.json)")
        if not path:
            return
        from ..storage.atomic import atomic_write_text
        try:
            atomic_write_text(Path(path), json.dumps(estimate_to_dict(self.state.estimate), indent=2) + "\n")
        except InputError as exc:
            QMessageBox.warning(self, "Cannot export", str(exc))
            return
        self.statusBar().showMessage(f"Exported {Path(path).name}", 4000)

    def _last_dir(self) -> str:
        if self.state.path:
            return str(self.state.path.parent)
        files = self._recent_files()
        return str(Path(files[0]).parent) if files else str(Path.home())

    def _remember(self, path: str) -> None:
        if self.settings is None:
            return
        from ..storage.settings import add_recent_file
        self.settings = add_recent_file(self.settings, path)
        self.settings.last_scenario = str(Path(path).resolve())
        self._fill_recent_menu()

    def on_about(self) -> None:
        from .about_dialog import show_about
        show_about(self, self.state.gpus, self.state.models)

    # --- measurements and calibration ---------------------------------------------------------
    def _init_calibration(self) -> None:
        """Load the saved calibration profile, apply the "calibration on" setting, add the Tools menu
        entry and a status-bar label that says when estimates are calibrated."""
        from ..storage.measurements_store import load_calibration

        loaded = load_calibration()
        for warning in loaded.warnings:
            log.warning(warning)
            self.statusBar().showMessage(warning, 10000)
        self.state.set_calibration(loaded.value, bool(getattr(self.settings, "calibration_enabled", False)))
        menu = getattr(self, "tools_menu", None)
        if menu is None:
            menu = self.tools_menu = self.menuBar().addMenu("&Tools")
        else:
            menu.addSeparator()
        self.measurements_action = self._action(menu, "&Measurements && calibration…", QKeySequence(),
                                                self.open_measurements)
        self.measurements_action.setStatusTip("Record measured runs, compare them with the estimate and "
                                              "calibrate the estimate to them")
        self.measurements_dialog = None
        self.calibration_label = QLabel()
        self.calibration_label.setStyleSheet("color: #117733; padding: 0 6px;")
        self.statusBar().addPermanentWidget(self.calibration_label)
        self.state.calibrationChanged.connect(self._on_calibration_changed)
        self.state.estimateChanged.connect(self._show_calibration_status)
        self._show_calibration_status()

    def open_measurements(self):
        """Show the Measurements & calibration window (created on first use) and return it."""
        if self.measurements_dialog is None:
            from .measurements_dialog import MeasurementsDialog
            self.measurements_dialog = MeasurementsDialog(self.state, parent=self)
        self.measurements_dialog.show()
        self.measurements_dialog.raise_()
        self.measurements_dialog.activateWindow()
        return self.measurements_dialog

    def _on_calibration_changed(self) -> None:
        if self.settings is not None and self.settings.calibration_enabled != self.state.calibration_enabled:
            from ..storage.settings import save_settings
            self.settings.calibration_enabled = self.state.calibration_enabled
            try:
                save_settings(self.settings)
            except InputError as exc:
                self.statusBar().showMessage(str(exc), 8000)
        self._show_calibration_status()

    def _show_calibration_status(self, *_args) -> None:
        est = self.state.estimate
        if not self.state.calibration_enabled:
            self.calibration_label.setText("")
            self.calibration_label.hide()
            return
        if self.state.calibration is None:
            text = "Calibration on: no profile yet"
        elif est is not None and est.calibrated_gpus:
            n = len(est.calibrated_gpus)
            text = f"Calibration on: {n} GPU type{'s' if n != 1 else ''} calibrated"
        else:
            text = "Calibration on: no values for this scenario"
        self.calibration_label.setText(text)
        self.calibration_label.show()

    # --- layout persistence ------------------------------------------------------------------
    def _restore_layout(self) -> None:
        s = self.settings
        if s is None:
            return
        try:
            if s.window_geometry:
                self.restoreGeometry(QByteArray(base64.b64decode(s.window_geometry)))
            for name, split in self._splitters().items():
                sizes = s.splitter_sizes.get(name)
                if sizes and len(sizes) == split.count():
                    split.setSizes([int(x) for x in sizes])
        except (ValueError, TypeError) as exc:
            log.warning("ignored saved window layout: %s", exc)

    def _splitters(self) -> dict[str, QSplitter]:
        return {"main": self.main_split, "right": self.right_split, "bottom": self.bottom_split}

    def layout_into_settings(self) -> None:
        if self.settings is None:
            return
        self.settings.window_geometry = base64.b64encode(bytes(self.saveGeometry())).decode("ascii")
        self.settings.splitter_sizes = {n: list(s.sizes()) for n, s in self._splitters().items()}

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt override
        if not self.maybe_save():
            event.ignore()
            return
        self.layout_into_settings()
        if self.settings is not None:
            from ..storage.settings import save_settings
            try:
                save_settings(self.settings)
            except InputError as exc:
                log.warning("settings not saved: %s", exc)
        event.accept()
