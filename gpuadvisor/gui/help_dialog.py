"""F1: the user guide, shipped in ``resources/help/`` so it works offline and in the standalone app."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from ..resources import resource_path

GUIDE = ("help", "guide.md")


def guide_text() -> str:
    """The guide's Markdown (a one-line notice if the file is missing from a broken install)."""
    path = resource_path(*GUIDE)
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return (
            "# gpuadvisor help\n\nThe user guide is missing from this installation (resources/help/guide.md)."
        )


class HelpDialog(QDialog):
    """A non-modal window with the user guide."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("gpuadvisor help")
        self.resize(720, 640)
        self.browser = QTextBrowser()
        self.browser.setOpenExternalLinks(False)
        self.browser.setMarkdown(guide_text())
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser)
        layout.addWidget(buttons)
