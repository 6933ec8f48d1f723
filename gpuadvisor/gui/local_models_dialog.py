"""Models on this machine: a list of the models found on disk to pick one as the model source.

The scan itself is storage's (:func:`gpuadvisor.storage.local_models.scan_local_models`: the
Hugging Face cache, LM Studio's and Ollama's folders, read offline); this dialog only shows it.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..storage.local_models import LocalModel

ORIGIN_WORDS = {
    "huggingface": "Hugging Face cache",
    "lm-studio": "LM Studio",
    "ollama": "Ollama",
    "folder": "folder",
}


class LocalModelsDialog(QDialog):
    """The models found on disk; Use takes the selected one."""

    def __init__(self, models: Sequence[LocalModel], parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Models on this machine")
        self.resize(760, 420)
        self.models = list(models)
        layout = QVBoxLayout(self)
        if not self.models:
            layout.addWidget(
                QLabel(
                    "No model was found in the Hugging Face cache (HF_HOME, HF_HUB_CACHE) or in LM Studio's "
                    "and Ollama's model folders. Choose a config.json, a model folder or a .gguf file instead."
                )
            )
        self.table = QTableWidget(len(self.models), 4, self)
        self.table.setHorizontalHeaderLabels(["Model", "Format", "Where", "Size"])
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableWidget.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        for row, m in enumerate(self.models):
            cells = (
                m.name,
                m.format,
                ORIGIN_WORDS.get(m.origin, m.origin),
                f"{m.size_bytes / 2**30:,.1f} GiB",
            )
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(str(m.path))
                self.table.setItem(row, col, item)
        self.table.resizeColumnsToContents()
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.doubleClicked.connect(lambda _i: self.accept())
        layout.addWidget(self.table, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel, self)
        self.use_button = buttons.addButton("Use this model", QDialogButtonBox.ButtonRole.AcceptRole)
        self.use_button.setEnabled(bool(self.models))
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        if self.models:
            self.table.selectRow(0)
        self.table.setFocus(Qt.FocusReason.OtherFocusReason)

    def chosen(self) -> LocalModel | None:
        rows = self.table.selectionModel().selectedRows()
        return self.models[rows[0].row()] if rows else None


def choose_local_model(parent: QWidget | None, models: Sequence[LocalModel]) -> LocalModel | None:
    """Ask which model to use; None when cancelled or nothing was found."""
    dialog = LocalModelsDialog(models, parent)
    return dialog.chosen() if dialog.exec() == QDialog.DialogCode.Accepted else None
