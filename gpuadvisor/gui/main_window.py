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
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QGuiApplication, QKeySequence, QShowEvent
from PySide6.QtWidgets import (
    QApplication,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ..core.errors import InputError
from ..core.estimation.results import Estimate
from ..core.formats.scenario import Scenario
from ..core.formats.user_catalog import UserCatalog
from ..core.presentation.titles import default_title
from ..core.presentation.wording import model_line
from ..core.specs.hardware import GpuCatalog
from ..core.specs.presets import ModelCatalog
from ..storage.settings import Settings
from .messages import user_message
from .pages.budget_page import BudgetPage
from .pages.model_page import ModelPage
from .pages.workload_page import WorkloadPage
from .ranking.model import RankingModel, RankingProxy
from .ranking.view import RankingView
from .results_view import ResultsView
from .scenario_name import ScenarioNameField
from .state import AppState
from .theme import APPEARANCES, apply_appearance
from .window_files import FileActions
from .window_tools import ToolWindows

if TYPE_CHECKING:
    from .help_dialog import HelpDialog  # imported when F1 first opens it

log = logging.getLogger(__name__)
MAX_RECENT = 10

#: A wizard page: each has a ``title``, an ``edited`` signal, ``set_scenario`` and ``apply``.
Page = WorkloadPage | ModelPage | BudgetPage


class MainWindow(FileActions, ToolWindows, QMainWindow):
    """The application window."""

    def __init__(
        self,
        state: AppState,
        settings: Settings | None = None,
        default_scenario: Scenario | None = None,
        deferred_charts: bool = True,
        user_catalog: UserCatalog | None = None,
        catalog_warnings: Sequence[str] = (),
        catalog_set_aside: bool = False,
    ) -> None:
        super().__init__()
        self.state = state
        self.settings = settings
        self.user_catalog = user_catalog  # the edits loaded at start; the editor owns them afterwards
        self.catalog_warnings = list(catalog_warnings)
        self._catalog_notice = list(catalog_warnings) if catalog_set_aside else []
        self.catalog_editor = None
        self.catalog_warning_box: QMessageBox | None = None
        self.help_dialog: HelpDialog | None = None
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
        pages: list[Page] = [self.workload_page, self.model_page, self.budget_page]
        self.pages = tuple(pages)
        self.page_tabs = QTabWidget()
        for i, page in enumerate(pages):
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            scroll.setWidget(page)
            page.installEventFilter(self)  # rows shown or hidden: the page's width may change
            self.page_tabs.addTab(scroll, f"&{i + 1}. {page.title}")  # Alt+1/2/3
            page.edited.connect(self._on_page_edited)
        self.back_button = QPushButton("Back")
        self.next_button = QPushButton("Next")
        self.back_button.clicked.connect(
            lambda: self.page_tabs.setCurrentIndex(self.page_tabs.currentIndex() - 1)
        )
        self.next_button.clicked.connect(
            lambda: self.page_tabs.setCurrentIndex(self.page_tabs.currentIndex() + 1)
        )
        self.page_tabs.currentChanged.connect(self._on_page_changed)
        self.name_field = ScenarioNameField()
        self.name_field.edited.connect(self._on_name_edited)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.setContentsMargins(6, 6, 0, 6)  # the splitter's handle separates the results
        left_layout.addWidget(self.name_field)
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
        self.setCentralWidget(self.main_split)

        self._build_menus()
        if self._appearance() != "system":
            self.set_appearance(self._appearance())
        self.statusBar().showMessage("Ready")

        state.estimateChanged.connect(self._on_estimate_changed)
        state.errorChanged.connect(self._on_error_changed)
        state.computingChanged.connect(self._on_computing_changed)
        state.dirtyChanged.connect(self._update_title)
        state.pathChanged.connect(self._update_title)
        state.scenarioChanged.connect(self._on_scenario_loaded)
        state.catalogsChanged.connect(self._on_catalogs_changed)
        state.instancesChanged.connect(lambda snap: self.budget_page.set_providers(snap.providers()))
        self.budget_page.set_providers(state.instances.providers())
        self.results.chartsCreated.connect(lambda: setattr(self, "charts_ready", True))

        self._fill_pages(state.scenario)
        self._left_width_chosen = False  # True once a saved layout or the first fit chose it
        self._page_width_pending = False
        self._fit_page_width()
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
        box = QMessageBox(
            QMessageBox.Icon.Warning,
            "Your catalog edits were set aside",
            "\n\n".join(self._catalog_notice),
            QMessageBox.StandardButton.Ok,
            self,
        )
        box.setInformativeText(
            "The bundled catalog is in use. Tools > Catalog editor > Restore backup… brings "
            "back a saved copy of your edits."
        )
        box.setModal(False)
        box.show()
        self.catalog_warning_box = box

    # --- the results side, for callers and tests ---------------------------------------------------
    def create_charts(self) -> None:
        self.results.create_charts()

    @property
    def summary(self) -> QLabel:
        return self.results.summary

    @property
    def ranking_model(self) -> RankingModel:
        return self.results.ranking_model

    @property
    def ranking_proxy(self) -> RankingProxy:
        return self.results.ranking_proxy

    @property
    def table(self) -> RankingView:
        return self.results.table

    @property
    def detail(self) -> QTextBrowser:
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
        self.model_page.show_model(model_line(est))
        self.name_field.show_default(default_title(est))
        self.statusBar().showMessage(
            f"{len(est.candidates)} setup{'' if len(est.candidates) == 1 else 's'} compared "
            f"in {self.state.last_compute_ms:.0f} ms"
        )

    def _on_error_changed(self, message: str) -> None:
        if message:
            self.statusBar().showMessage("An input is invalid: the results are stale until it is fixed.")

    def _on_computing_changed(self, message: str) -> None:
        if message:
            self.statusBar().showMessage(message + "\u2026")

    def _on_catalogs_changed(self, gpus: GpuCatalog, models: ModelCatalog) -> None:
        """A catalog edit or import: the pages list the new GPUs and models."""
        self.workload_page.set_gpus(gpus)
        self.model_page.set_models(models)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        QTimer.singleShot(0, self._fit_page_width)  # once the pages are polished (their true size)
        if self._deferred_charts and not self.charts_ready:
            QTimer.singleShot(60, self.create_charts)  # after the first frame is painted

    # --- menus -------------------------------------------------------------------------------
    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self.new_action = self._action(file_menu, "&New", QKeySequence.StandardKey.New, self.on_new)
        self.open_action = self._action(file_menu, "&Open…", QKeySequence.StandardKey.Open, self.on_open)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self.save_action = self._action(file_menu, "&Save", QKeySequence.StandardKey.Save, self.on_save)
        self.save_as_action = self._action(
            file_menu, "Save &as…", QKeySequence.StandardKey.SaveAs, self.on_save_as
        )
        file_menu.addSeparator()
        self.report_action = self._action(
            file_menu, "Export &report (PDF)…", QKeySequence("Ctrl+P"), self.on_export_report
        )
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
        self.export_action = self._action(
            file_menu, "&Export comparison (JSON)…", QKeySequence("Ctrl+E"), self.on_export_json
        )
        self.export_csv_action = self._action(
            file_menu,
            "Export ranking (&CSV)…",
            QKeySequence(),
            lambda: self.results.ranking.export_csv_dialog(),
        )
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QKeySequence.StandardKey.Quit, self.close)
        view = self.menuBar().addMenu("&View")
        for i, page in enumerate(self.pages):
            self._action(
                view,
                f"Page {i + 1}: {page.title}",
                QKeySequence(f"Alt+{i + 1}"),
                lambda _=False, n=i: self.show_page(n),
            )
        view.addSeparator()
        self.panel_actions = {}
        for name, text, key in (
            ("pages", "Show the &wizard pages", "Ctrl+Shift+W"),
            ("charts", "Show the c&harts", "Ctrl+Shift+H"),
            ("detail", "Show the &details panel", "Ctrl+Shift+D"),
        ):
            action = self._action(
                view, text, QKeySequence(key), lambda on, n=name: self.set_panel_visible(n, on)
            )
            action.setCheckable(True)
            action.setChecked(True)
            self.panel_actions[name] = action
        view.addSeparator()
        self._action(
            view,
            "What-if over &context length",
            QKeySequence("Ctrl+1"),
            lambda: self.set_whatif_axis("context"),
        )
        self._action(
            view, "What-if over &batch size", QKeySequence("Ctrl+2"), lambda: self.set_whatif_axis("batch")
        )
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
        self.catalog_action = self._action(
            self.tools_menu, "&Catalog editor…", QKeySequence("Ctrl+K"), self.open_catalog_editor
        )
        self.catalog_action.setStatusTip(
            "Edit GPUs, prices and model presets; edits are saved and used at once"
        )
        help_menu = self.menuBar().addMenu("&Help")
        self.help_action = self._action(
            help_menu, "gpuadvisor &help", QKeySequence(Qt.Key.Key_F1), self.open_help
        )
        self._action(help_menu, "&About gpuadvisor", QKeySequence(), self.on_about)
        self._fill_recent_menu()

    # --- view ----------------------------------------------------------------------------------
    def show_page(self, index: int) -> None:
        """Bring wizard page ``index`` (0-2) forward, showing the pages panel if it was hidden."""
        self.set_panel_visible("pages", True)
        self.page_tabs.setCurrentIndex(index)
        self.pages[index].setFocus()

    def set_panel_visible(self, name: str, visible: bool) -> None:
        """Show or hide the wizard pages, the charts or the details panel (a small screen needs room)."""
        widget = {
            "pages": self.left_panel,
            "charts": self.results.chart_tabs.parentWidget(),
            "detail": self.results.detail,
        }[name]
        if widget is not None:
            widget.setVisible(visible)
        action = self.panel_actions.get(name)
        if action is not None and action.isChecked() != visible:
            action.setChecked(visible)

    def _appearance(self) -> str:
        mode = (
            (getattr(self.settings, "extra", {}) or {}).get("appearance", "system")
            if self.settings
            else "system"
        )
        return mode if mode in dict(APPEARANCES) else "system"

    def set_appearance(self, mode: str) -> None:
        """Follow the desktop's palette or force light or dark; remembered in the settings."""
        app = QApplication.instance()
        if isinstance(app, QApplication):
            apply_appearance(app, mode)
        if self.settings is not None:
            self.settings.extra["appearance"] = mode
        action = self.appearance_actions.get(mode)
        if action is not None:
            action.setChecked(True)

    def open_help(self) -> HelpDialog:
        """F1: the user guide, bundled with the app (works offline)."""
        from .help_dialog import HelpDialog

        if self.help_dialog is None:
            self.help_dialog = HelpDialog(self)
        self.help_dialog.show()
        self.help_dialog.raise_()
        return self.help_dialog

    def _action(
        self,
        menu: QMenu,
        text: str,
        shortcut: QKeySequence | QKeySequence.StandardKey,
        slot: Callable[..., object],
    ) -> QAction:
        action = QAction(text, self)
        action.setShortcut(shortcut)
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    # --- page <-> state --------------------------------------------------------------------
    def _fill_pages(self, scenario: Scenario) -> None:
        for page in self.pages:
            page.set_scenario(scenario)
        self.name_field.set_scenario(scenario)

    def _on_name_edited(self) -> None:
        """The name typed (or cleared): the scenario takes it; nothing is estimated anew for a name
        except the title, which the results show."""
        self._applying = True
        try:
            self.state.set_scenario(self.name_field.apply(self.state.scenario))
        finally:
            self._applying = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # Qt override
        if event.type() == QEvent.Type.LayoutRequest and watched in getattr(self, "pages", ()):
            # A group shown or hidden (the advanced layout, the serving targets, a Mac's memory)
            # can make a page wider: fit the pages' width again once the layout has settled.
            if not getattr(self, "_page_width_pending", False):
                self._page_width_pending = True
                QTimer.singleShot(0, self._fit_page_width)
        return super().eventFilter(watched, event)

    def _fit_page_width(self) -> None:
        """Give the pages their width and their scroll bar's: without it, on a laptop at 150%, the
        fields ran under the scroll bar, cut off at the right (the pages never scroll sideways)."""
        self._page_width_pending = False
        for i in range(self.page_tabs.count()):
            scroll = self.page_tabs.widget(i)
            if not isinstance(scroll, QScrollArea):
                continue
            content = scroll.widget()
            if content is None:
                continue
            width = (
                content.minimumSizeHint().width()
                + scroll.verticalScrollBar().sizeHint().width()
                + 2 * scroll.frameWidth()
            )
            if width != scroll.minimumWidth():
                scroll.setMinimumWidth(width)
        if self.isVisible():
            # After the layouts above the pages have taken the new minimum (posted events).
            QTimer.singleShot(0, self._fit_left_panel)

    def _fit_left_panel(self) -> None:
        """The pages at their narrowest when the window first shows (the results get the rest: on
        a laptop the ranking's decision columns, mark to fit, then fit without scrolling
        sideways), and never narrower than that: a field cut off at the right cannot be read."""
        # Let every pending layout request run first, so the panel's minimum includes the pages'
        # new one (a zero timer can come before them).
        QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)
        need = self.left_panel.minimumSizeHint().width()
        sizes = self.main_split.sizes()
        if not self.left_panel.isVisible() or len(sizes) != 2:
            return
        if not self._left_width_chosen or sizes[0] < need:
            self.main_split.setSizes([need, max(sum(sizes) - need, 1)])
            self._left_width_chosen = True

    def _on_scenario_loaded(self, scenario: Scenario) -> None:
        if not getattr(self, "_applying", False):
            self._page_errors.clear()
            for page in self.pages:
                if hasattr(page, "show_error"):
                    page.show_error("")
            self._fill_pages(scenario)
            self._fit_page_width()
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
            # Never compute this page's half-typed value before the invalid one (another page's
            # edits still pending are kept).
            self.state.discard_pending(origin=f"page {index}")
            self.state.set_error(self._page_errors[index])
            return
        self._page_errors.pop(index, None)
        if page is self.model_page:
            self.model_page.show_error("")
        force = isinstance(page, ModelPage) and page.file_chosen
        if isinstance(page, ModelPage):
            page.file_chosen = False
        self._applying = True
        try:
            self.state.set_scenario(scenario, force=force, origin=f"page {index}")
        finally:
            self._applying = False
        # Every other (valid) page shows the scenario as it now is; the edited one too when its
        # workload kind changed (the core reset what changed meaning, such as the batch).
        for i, other in enumerate(self.pages):
            if i in self._page_errors:
                continue
            if other is not page or scenario.workload.kind != before.workload.kind:
                other.set_scenario(scenario)
        if scenario.workload.kind != before.workload.kind or (scenario.workload.serving is None) != (
            before.workload.serving is None
        ):
            self._fit_page_width()  # other rows shown (the serving targets, the layout group)
        self.state.set_error(next(iter(self._page_errors.values()), ""))

    def _on_page_changed(self, index: int) -> None:
        self.back_button.setEnabled(index > 0)
        self.next_button.setEnabled(index < len(self.pages) - 1)

    def on_about(self) -> None:
        from .about_dialog import show_about

        show_about(self, self.state.gpus, self.state.models)

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
                    if split is self.main_split:
                        self._left_width_chosen = True
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
        self.settings.window_geometry = base64.b64encode(self.saveGeometry().data()).decode("ascii")
        self.settings.splitter_sizes = {n: list(s.sizes()) for n, s in self._splitters().items()}
        self.settings.extra["panels"] = {n: a.isChecked() for n, a in self.panel_actions.items()}

    def closeEvent(self, event: QCloseEvent) -> None:
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
        self.state.shutdown()
        event.accept()
