"""The window's Tools: the catalog editor and the measurements & calibration window, and how
their changes reach :class:`~gpuadvisor.gui.state.AppState`. A mixin of
:class:`~gpuadvisor.gui.main_window.MainWindow`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence

from ..core.errors import InputError
from .widgets import ToneLabel

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow, QMenu

    from ..core.formats.user_catalog import UserCatalog
    from ..core.specs.hardware import GpuCatalog
    from ..core.specs.presets import ModelCatalog
    from ..storage.settings import Settings
    from .catalog_editor import CatalogEditor
    from .measurements_dialog import MeasurementsDialog
    from .state import AppState

    _Window = QMainWindow  # what the mixin is mixed into, for the type checker
else:
    _Window = object

log = logging.getLogger(__name__)


class ToolWindows(_Window):
    """Catalog editor and measurements wiring (mixed into the main window)."""

    # Provided by MainWindow.
    state: AppState
    settings: Settings | None
    user_catalog: UserCatalog | None
    catalog_editor: CatalogEditor | None
    tools_menu: QMenu
    _catalog_notice: list[str]

    def _action(
        self,
        menu: QMenu,
        text: str,
        shortcut: QKeySequence | QKeySequence.StandardKey,
        slot: Callable[..., object],
    ) -> QAction:
        raise NotImplementedError  # MainWindow's

    # Set up here (_init_calibration).
    measurements_dialog: MeasurementsDialog | None = None

    # --- catalog editor ----------------------------------------------------------------------
    def open_catalog_editor(self) -> CatalogEditor:
        """Show the catalog editor (created on first use) and return it."""
        if self.catalog_editor is None:
            from ..core.formats.user_catalog import UserCatalog
            from .catalog_editor import CatalogEditor

            months = self._stale_months()
            self.catalog_editor = CatalogEditor(
                self.user_catalog or UserCatalog.empty(),
                parent=self,
                stale_months=months,
                on_stale_months=self._set_stale_months,
                startup_warnings=self._catalog_notice,
                current_gpus=lambda: self.state.gpus,
            )
            self.catalog_editor.catalogsChanged.connect(self._on_catalogs_edited)
            self.catalog_editor.instancesImported.connect(self.state.set_instances)
        self.catalog_editor.show()
        self.catalog_editor.raise_()
        self.catalog_editor.activateWindow()
        return self.catalog_editor

    def _on_catalogs_edited(self, gpus: GpuCatalog, models: ModelCatalog, warnings: list[str]) -> None:
        self.state.set_catalogs(gpus, models, warnings)
        if self.measurements_dialog is not None:
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

        if self.settings is None:
            return
        try:
            save_settings(self.settings)
        except StorageError as exc:
            self.statusBar().showMessage(str(exc), 8000)

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
        self.measurements_action = self._action(
            menu, "&Measurements && calibration…", QKeySequence(), self.open_measurements
        )
        self.measurements_action.setStatusTip(
            "Record measured runs, compare them with the estimate and calibrate the estimate to them"
        )
        self.measurements_dialog = None
        self.calibration_label = ToneLabel("", "ok")
        self.calibration_label.setContentsMargins(6, 0, 6, 0)
        self.statusBar().addPermanentWidget(self.calibration_label)
        self.state.calibrationChanged.connect(self._on_calibration_changed)
        self.state.estimateChanged.connect(self._show_calibration_status)
        self._show_calibration_status()

    def open_measurements(self) -> MeasurementsDialog:
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

    def _show_calibration_status(self, *_args: object) -> None:
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
