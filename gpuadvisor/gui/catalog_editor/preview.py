"""The preview of an import or price update: what Apply would change, value by value."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QPlainTextEdit, QVBoxLayout, QWidget

from ...core.formats.catalog_exchange import ImportReport


class PreviewDialog(QDialog):
    """Shows what an import would change; Apply or Cancel."""

    def __init__(
        self, title: str, summary_html: str, details: str, can_apply: bool, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.resize(720, 480)
        layout = QVBoxLayout(self)
        head = QLabel(summary_html, self)
        head.setWordWrap(True)
        head.setTextFormat(Qt.TextFormat.RichText)
        layout.addWidget(head)
        self.details = QPlainTextEdit(self)
        self.details.setReadOnly(True)
        self.details.setPlainText(details)
        layout.addWidget(self.details, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel, self)
        self.apply_button = buttons.addButton("Apply", QDialogButtonBox.ButtonRole.AcceptRole)
        self.apply_button.setEnabled(can_apply)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)


def import_details(report: ImportReport, before: list[dict[str, str]]) -> str:
    """The import report with every changed value spelled out (``tdp_w: 450 -> 460``), so the
    user sees what Apply would change, not only which rows (the core's wording, shared with the CLI)."""
    return report.details(before)
