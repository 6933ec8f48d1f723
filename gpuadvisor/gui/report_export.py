"""Writing the PDF report from the window without blocking it.

The chart images are drawn in the GUI thread (they are widgets); the layout and the writing of
the PDF run in a worker thread. The report's content is the core's
:func:`~gpuadvisor.core.presentation.report.build_report` of the estimate on display, so the PDF
recommends exactly what the window shows.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, QThread, Signal
from PySide6.QtGui import QImage

from ..core.errors import InputError
from ..core.estimation.results import Estimate
from ..core.presentation.report import Report


class ReportExport(QThread):
    """Lays out and writes the PDF in a worker thread (the chart images are drawn beforehand)."""

    succeeded = Signal(str, int, float)
    failed = Signal(str)

    def __init__(
        self,
        report: Report,
        est: Estimate,
        path: str,
        page_size: str,
        images: tuple[QImage, ...],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.args = (report, est, path, page_size, images)

    def run(self) -> None:
        from ..views.report_pdf import export_pdf

        report, est, path, page_size, images = self.args
        try:
            stats = export_pdf(report, est, path, page_size, images=images)
        except (InputError, OSError, ValueError) as exc:
            self.failed.emit(str(exc))
            return
        self.succeeded.emit(str(path), stats.pages, stats.seconds)
