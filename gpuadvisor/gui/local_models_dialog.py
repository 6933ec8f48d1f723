"""Models on this machine: a list of the models found on disk to pick one as the model source.

The scan itself is storage's (:func:`gpuadvisor.storage.local_models.scan_local_models_report`: the
Hugging Face cache, LM Studio's and Ollama's folders, read offline); :func:`scan_in_background`
runs it on a worker thread with a time limit while a cancellable progress dialog keeps the window
responsive (a slow network drive or a stuck file cannot freeze it), and this dialog shows the result
with a line about what could not be read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from PySide6.QtCore import QEventLoop, Qt, QTimer
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QProgressDialog,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..storage.local_models import SCAN_TIME_LIMIT_S, LocalModel, LocalScan, scan_local_models_report

ORIGIN_WORDS = {
    "huggingface": "Hugging Face cache",
    "lm-studio": "LM Studio",
    "ollama": "Ollama",
    "folder": "folder",
}


class LocalModelsDialog(QDialog):
    """The models found on disk; Use takes the selected one."""

    def __init__(self, models: Sequence[LocalModel], parent: QWidget | None = None, note: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Models on this machine")
        self.resize(760, 420)
        self.models = list(models)
        layout = QVBoxLayout(self)
        self.note = QLabel(note, self)
        self.note.setWordWrap(True)
        self.note.setVisible(bool(note))
        layout.addWidget(self.note)
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


def choose_local_model(
    parent: QWidget | None, models: Sequence[LocalModel], note: str = ""
) -> LocalModel | None:
    """Ask which model to use; None when cancelled or nothing was found. ``note`` says what the
    scan skipped ("3 folders or files could not be read.")."""
    dialog = LocalModelsDialog(models, parent, note)
    return dialog.chosen() if dialog.exec() == QDialog.DialogCode.Accepted else None


def scan_in_background(parent: QWidget | None, time_limit_s: float = SCAN_TIME_LIMIT_S) -> LocalScan | None:
    """Scan for local models on a worker thread; None when the user cancels.

    The GUI thread keeps handling events (a progress dialog appears after 300 ms, with Cancel).
    The scan stops itself at ``time_limit_s``; should it be stuck in one system call past that,
    the window stops waiting a second later and shows what was found.
    """
    scan = LocalScan()
    worker = threading.Thread(
        target=scan_local_models_report,
        kwargs={"time_limit_s": time_limit_s, "into": scan},
        name="local-model-scan",
        daemon=True,
    )
    worker.start()
    worker.join(0.05)  # a quick scan needs no dialog at all
    if scan.finished:
        return scan
    progress = QProgressDialog("Looking for models on this computer...", "Cancel", 0, 0, parent)
    progress.setWindowTitle("Models on this machine")
    progress.setWindowModality(Qt.WindowModality.WindowModal)
    progress.setMinimumDuration(300)
    loop = QEventLoop()
    give_up = time.monotonic() + time_limit_s + 1.0
    timer = QTimer()
    timer.setInterval(25)
    timer.timeout.connect(lambda: loop.quit() if scan.finished or time.monotonic() > give_up else None)
    cancelled: list[bool] = []

    def cancel() -> None:
        cancelled.append(True)
        loop.quit()

    progress.canceled.connect(cancel)
    timer.start()
    loop.exec()
    timer.stop()
    was_cancelled = bool(cancelled)  # closing the dialog below emits canceled() too
    progress.canceled.disconnect()
    progress.close()
    if was_cancelled:
        return None
    if not scan.finished:  # stuck past the limit: show what was found so far
        found = LocalScan(list(scan.models), scan.unreadable, True, finished=True)
        return found
    return scan
