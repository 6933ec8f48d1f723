"""The window's File menu: new, open, save, recent files, and exporting the PDF report, the
comparison as JSON. A mixin of :class:`~gpuadvisor.gui.main_window.MainWindow`, which provides
``state`` (:class:`~gpuadvisor.gui.state.AppState`), ``settings`` and the status bar."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QFileDialog, QMessageBox

from ..core.errors import InputError
from ..core.presentation.serialize import estimate_to_dict
from .report_export import ReportExport

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QMainWindow, QMenu

    from ..core.formats.scenario import Scenario
    from ..storage.settings import Settings
    from .state import AppState

    _Window = QMainWindow  # what the mixin is mixed into, for the type checker
else:
    _Window = object


class FileActions(_Window):
    """Scenario files and exports (mixed into the main window)."""

    # Provided by MainWindow.
    state: AppState
    settings: Settings | None
    default_scenario: Scenario
    recent_menu: QMenu
    report_action: QAction

    # --- files -----------------------------------------------------------------------------
    def _update_title(self, *_args: object) -> None:
        name = self.state.path.name if self.state.path else "Untitled"
        self.setWindowTitle(f"{name}[*] — gpuadvisor")
        self.setWindowModified(self.state.dirty)

    def maybe_save(self) -> bool:
        """Ask about unsaved changes; False means the user cancelled."""
        if not self.state.dirty:
            return True
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            "The scenario has unsaved changes. Save them first?",
            QMessageBox.StandardButton.Save
            | QMessageBox.StandardButton.Discard
            | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )
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

    def export_report_to(self, path: str) -> ReportExport | None:
        """Start writing the report to ``path``; returns the running export (tests wait on it)."""
        import datetime

        from ..core.presentation.report import build_report
        from ..views.report_pdf import chart_images, check_target

        est = self.state.estimate
        if est is None:
            return None
        if self.state.error:
            QMessageBox.warning(
                self,
                "Cannot export the report",
                "An input is invalid, so the results on display "
                f"are stale:\n\n{self.state.error}\n\nFix it, then export again.",
            )
            return None
        try:
            check_target(path)
        except InputError as exc:
            QMessageBox.warning(self, "Cannot export the report", str(exc))
            return None
        report = build_report(
            est, self.state.gpus.meta, datetime.date.today(), stale_after_months=self.state.stale_months
        )
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
        self.statusBar().showMessage(
            f"Report written: {Path(path).name}, {pages} pages in {seconds:.1f} s", 8000
        )

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
