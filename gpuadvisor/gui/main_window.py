"""The main window: three wizard pages on the left, live results on the right, menus and files.

Data flows one way: the page the user edits writes its fields into the scenario
(``page.apply(scenario)``); :class:`AppState` (the one holder of live state) recomputes once
and broadcasts ``estimateChanged``; every page then shows the scenario again (so a rule the
core applied, such as weights a new workload kind cannot use, is visible everywhere), and the
results side (:mod:`.results_view`) redraws. Nothing here computes memory, speed, cost or the
recommendation. The PDF is written by :mod:`.report_export`.
"""

from __future__ import annotations

import base64
import html
import json
import logging
from pathlib import Path

from PySide6.QtCore import QByteArray, Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QApplication, QFileDialog, QHBoxLayout, QLabel, QMainWindow, QMessageBox,
                               QPushButton, QScrollArea, QSplitter, QTabWidget, QVBoxLayout, QWidget)

from .. import __version__
from ..core.errors import InputError
from ..core.estimation.results import Estimate
from ..core.formats.scenario import Scenario
from ..core.presentation.serialize import estimate_to_dict
from ..core.units import format_count
from .pages.budget_page import BudgetPage
from .pages.model_page import ModelPage
from .pages.workload_page import WorkloadPage
from .messages import user_message
from .report_export import ReportExport
from .results_view import ResultsView
from .state import AppState
from .theme import APPEARANCES, apply_appearance

log = logging.getLogger(__name__)
MAX_RECENT = 10


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
        self._page_errors: dict[int, str] = {}
        if settings is not None:
            state.set_stale_months(int(getattr(settings, "stale_price_months", 6) or 6))
        self.setWindowTitle("gpuadvisor")
        self._fit_to_screen()

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
            self.page_tabs.addTab(scroll, f"&{i + 1}. {page.title}")  # Alt+1/2/3
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
        left.setMinimumWidth(300)
        self.left_panel = left

        # --- results ------------------------------------------------------------------------
        self.results = ResultsView(state)
        self.main_split = QSplitter(Qt.Orientation.Horizontal)
        self.main_split.addWidget(self.left_panel)
        self.main_split.addWidget(self.results)
        self.main_split.setStretchFactor(1, 1)
        self.main_split.setCollapsible(1, False)
        self.main_split.setSizes([400, 1000])
        self.setCentralWidget(self.main_split)

        self._build_menus()
        if self._appearance() != "system":
            self.set_appearance(self._appearance())
        self.statusBar().showMessage("Ready")

        state.estimateChanged.connect(self._on_estimate_changed)
        state.errorChanged.connect(self._on_error_changed)
        state.dirtyChanged.connect(self._update_title)
        state.pathChanged.connect(self._update_title)
        state.scenarioChanged.connect(self._on_scenario_loaded)
        state.catalogsChanged.connect(self._on_catalogs_changed)
        self.results.chartsCreated.connect(lambda: setattr(self, "charts_ready", True))

        self._fill_pages(state.scenario)
        self._on_page_changed(0)
        self._restore_layout()
        self._deferred_charts = deferred_charts
        if not deferred_charts:
            self.create_charts()
        self.results.split.setSizes([3000, 2000])
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

    # --- the results side, for callers and tests ---------------------------------------------------
    def create_charts(self) -> None:
        self.results.create_charts()

    @property
    def summary(self):
        return self.results.summary

    @property
    def ranking_model(self):
        return self.results.ranking_model

    @property
    def ranking_proxy(self):
        return self.results.ranking_proxy

    @property
    def table(self):
        return self.results.table

    @property
    def detail(self):
        return self.results.detail

    def set_whatif_axis(self, axis: str) -> None:
        self.results.set_whatif_axis(axis)

    def _fit_to_screen(self) -> None:
        """Open at a size that fits the screen: 1400 x 880 on a desktop; maximized on a laptop,
        where the layout keeps the answer, the charts and three ranking rows in view."""
        screen = QGuiApplication.primaryScreen()
        avail = screen.availableGeometry() if screen is not None else None
        if avail is None or avail.width() <= 0:
            self.resize(1400, 880)
            return
        width, height = min(1400, avail.width()), min(880, avail.height())
        self.resize(width, height)
        self.move(avail.x() + (avail.width() - width) // 2, avail.y() + (avail.height() - height) // 2)
        self._laptop = avail.width() < 1400 or avail.height() < 900

    def _on_estimate_changed(self, est: Estimate) -> None:
        self.model_page.show_model(
            f"{est.model.name}: {format_count(est.model.parameters)} parameters"
            + (f", {format_count(est.model.active_parameters)} active per token" if est.model.is_moe else "")
            + f", {est.model.num_layers} layers, context up to {est.model.max_context:,} tokens.")
        self.statusBar().showMessage(f"{len(est.candidates)} setups compared in {self.state.last_compute_ms:.0f} ms")

    def _on_error_changed(self, message: str) -> None:
        if message:
            self.statusBar().showMessage("An input is invalid: the results are stale until it is fixed.")

    def _on_catalogs_changed(self, gpus, models) -> None:
        """A catalog edit or import: the pages list the new GPUs and models."""
        self.workload_page.set_gpus(gpus)
        self.model_page.set_models(models)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().showEvent(event)
        if self._deferred_charts and not self.charts_ready:
            QTimer.singleShot(60, self.create_charts)  # after the first frame is painted

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
        for i, page in enumerate(self.pages):
            self._action(view, f"Page {i + 1}: {page.title}", QKeySequence(f"Alt+{i + 1}"),
                         lambda _=False, n=i: self.show_page(n))
        view.addSeparator()
        self.panel_actions = {}
        for name, text, key in (("pages", "Show the &wizard pages", "Ctrl+Shift+W"),
                                ("charts", "Show the c&harts", "Ctrl+Shift+H"),
                                ("detail", "Show the &details panel", "Ctrl+Shift+D")):
            action = self._action(view, text, QKeySequence(key), lambda on, n=name: self.set_panel_visible(n, on))
            action.setCheckable(True)
            action.setChecked(True)
            self.panel_actions[name] = action
        view.addSeparator()
        self._action(view, "What-if over &context length", QKeySequence("Ctrl+1"), lambda: self.set_whatif_axis("context"))
        self._action(view, "What-if over &batch size", QKeySequence("Ctrl+2"), lambda: self.set_whatif_axis("batch"))
        appearance = view.addMenu("&Appearance")
        group = QActionGroup(self)
        self.appearance_actions = {}
        current = self._appearance()
        for mode, text in APPEARANCES:
            action = appearance.addAction(text)
            action.setCheckable(True)
            action.setChecked(mode == current)
            action.triggered.connect(lambda _=False, m=mode: self.set_appearance(m))
            group.addAction(action)
            self.appearance_actions[mode] = action
        self.tools_menu = self.menuBar().addMenu("&Tools")
        self.catalog_action = self._action(self.tools_menu, "&Catalog editor…", QKeySequence("Ctrl+K"),
                                           self.open_catalog_editor)
        self.catalog_action.setStatusTip("Edit GPUs, prices and model presets; edits are saved and used at once")
        help_menu = self.menuBar().addMenu("&Help")
        self.help_action = self._action(help_menu, "gpuadvisor &help", QKeySequence(Qt.Key.Key_F1), self.open_help)
        self._action(help_menu, "&About gpuadvisor", QKeySequence(), self.on_about)
        self._fill_recent_menu()

    # --- catalog editor ----------------------------------------------------------------------
    def open_catalog_editor(self):
        """Show the catalog editor (created on first use) and return it."""
        if self.catalog_editor is None:
            from ..core.formats.user_catalog import UserCatalog
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
        self.state.set_catalogs(gpus, models, warnings)
        if getattr(self, "measurements_dialog", None) is not None:
            self.state.flush()
            self.measurements_dialog.refresh()  # its estimates use the edited catalog too
        if warnings:
            self.statusBar().showMessage(warnings[0], 8000)

    def _stale_months(self) -> int:
        return self.state.stale_months

    def _set_stale_months(self, months: int) -> None:
        """The catalog editor's stale-price age: held by AppState, saved in the settings."""
        self.state.set_stale_months(months)
        if self.settings is not None:
            self.settings.stale_price_months = months
            self._save_settings_quietly()

    def _save_settings_quietly(self) -> None:
        from ..storage import StorageError
        from ..storage.settings import save_settings

        try:
            save_settings(self.settings)
        except StorageError as exc:
            self.statusBar().showMessage(str(exc), 8000)

    # --- view ----------------------------------------------------------------------------------
    def show_page(self, index: int) -> None:
        """Bring wizard page ``index`` (0-2) forward, showing the pages panel if it was hidden."""
        self.set_panel_visible("pages", True)
        self.page_tabs.setCurrentIndex(index)
        self.pages[index].setFocus()

    def set_panel_visible(self, name: str, visible: bool) -> None:
        """Show or hide the wizard pages, the charts or the details panel (a small screen needs room)."""
        widget = {"pages": self.left_panel, "charts": self.results.chart_tabs.parentWidget(),
                  "detail": self.results.detail}[name]
        widget.setVisible(visible)
        action = self.panel_actions.get(name)
        if action is not None and action.isChecked() != visible:
            action.setChecked(visible)

    def _appearance(self) -> str:
        mode = (getattr(self.settings, "extra", {}) or {}).get("appearance", "system") if self.settings else "system"
        return mode if mode in dict(APPEARANCES) else "system"

    def set_appearance(self, mode: str) -> None:
        """Follow the desktop's palette or force light or dark; remembered in the settings."""
        app = QApplication.instance()
        if app is not None:
            apply_appearance(app, mode)
        if self.settings is not None:
            self.settings.extra["appearance"] = mode
        action = self.appearance_actions.get(mode)
        if action is not None:
            action.setChecked(True)

    def open_help(self):
        """F1: the user guide, bundled with the app (works offline)."""
        from .help_dialog import HelpDialog

        if getattr(self, "help_dialog", None) is None:
            self.help_dialog = HelpDialog(self)
        self.help_dialog.show()
        self.help_dialog.raise_()
        return self.help_dialog

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
            self._page_errors.clear()
            for page in self.pages:
                if hasattr(page, "show_error"):
                    page.show_error("")
            self._fill_pages(scenario)
            self.state.set_error("")

    def _on_page_edited(self) -> None:
        """The page the user edited writes its fields into the scenario; the others show the result.

        An invalid input is said in the user's words (the field's label and page); the results stay
        those of the last valid input, marked stale, until every page is valid again."""
        page = self.sender()
        if page not in self.pages:
            return
        index = self.pages.index(page)
        before = self.state.scenario
        try:
            scenario = page.apply(before)
        except (InputError, ValueError) as exc:
            self._page_errors[index] = user_message(exc)
            if page is self.model_page:
                self.model_page.show_error(self._page_errors[index])
            self.state.discard_pending()  # never compute the half-typed value before the invalid one
            self.state.set_error(self._page_errors[index])
            return
        self._page_errors.pop(index, None)
        if page is self.model_page:
            self.model_page.show_error("")
        force = bool(getattr(page, "file_chosen", False))
        if force:
            page.file_chosen = False
        self._applying = True
        try:
            self.state.set_scenario(scenario, force=force)
        finally:
            self._applying = False
        # Every other (valid) page shows the scenario as it now is; the edited one too when its
        # workload kind changed (the core reset what changed meaning, such as the batch).
        for i, other in enumerate(self.pages):
            if i in self._page_errors:
                continue
            if other is not page or scenario.workload.kind != before.workload.kind:
                other.set_scenario(scenario)
        self.state.set_error(next(iter(self._page_errors.values()), ""))

    def _on_page_changed(self, index: int) -> None:
        self.back_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(self.pages) - 1)

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

        from ..core.presentation.report import build_report
        from .report_pdf import chart_images, check_target

        est = self.state.estimate
        if est is None:
            return None
        if self.state.error:
            QMessageBox.warning(self, "Cannot export the report", "An input is invalid, so the results on display "
                                f"are stale:\n\n{self.state.error}\n\nFix it, then export again.")
            return None
        try:
            check_target(path)
        except InputError as exc:
            QMessageBox.warning(self, "Cannot export the report", str(exc))
            return None
        report = build_report(est, self.state.gpus.meta, datetime.date.today(),
                              stale_after_months=self.state.stale_months)
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
        gm, mm = self.state.gpus.meta, self.state.models.meta
        QMessageBox.about(self, "About gpuadvisor",
                          f"<h3>gpuadvisor {__version__}</h3><p>Will it fit, how fast, and what will it cost: "
                          f"GPU sizing for AI workloads, offline.</p>"
                          f"<p>GPU catalog: schema {gm.schema_version}, updated {gm.updated}, {len(self.state.gpus)} "
                          f"GPUs.<br>Model presets: schema {mm.schema_version}, updated {mm.updated}, "
                          f"{len(self.state.models)} models.</p><p>Formulas and sources: docs/estimation.md.</p>")

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
            for name, visible in (s.extra.get("panels") or {}).items():
                if name in self.panel_actions:
                    self.set_panel_visible(name, bool(visible))
        except (ValueError, TypeError, AttributeError) as exc:
            log.warning("ignored saved window layout: %s", exc)
        # A layout saved on a bigger screen must not push the answer off this one.
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None:
            avail = screen.availableGeometry()
            if self.width() > avail.width() or self.height() > avail.height():
                self.resize(min(self.width(), avail.width()), min(self.height(), avail.height()))
                self.move(avail.topLeft())

    def _splitters(self) -> dict[str, QSplitter]:
        return {"main": self.main_split, "right": self.results.split, "bottom": self.results.bottom_split}

    def layout_into_settings(self) -> None:
        if self.settings is None:
            return
        self.settings.window_geometry = base64.b64encode(bytes(self.saveGeometry())).decode("ascii")
        self.settings.splitter_sizes = {n: list(s.sizes()) for n, s in self._splitters().items()}
        self.settings.extra["panels"] = {n: a.isChecked() for n, a in self.panel_actions.items()}

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
