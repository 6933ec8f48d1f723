"""Which weight type fits my card: the core's ``Estimate.weights_table`` as a table in the window.

One row per weight type the engine runs on the one GPU type compared (the question people ask LM
Studio): whether it fits whole, with some layers in system RAM or not at all, the layers on the GPU,
the speed and the longest context. The cells are the report's (:func:`~gpuadvisor.core.presentation.
report.weights_cells`), so the window and the PDF read the same; the scenario's own weights are bold.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ..core.estimation.results import Estimate
from ..core.presentation.report import WEIGHTS_HEADER, weights_cells, weights_title
from .theme import colors

EMPTY_TEXT = "Compare one GPU type (Workload page, GPU) for inference to see which weight type fits it."


class WeightsView(QWidget):
    """The weight types of the one GPU compared, as a read-only table with a title."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.title = QLabel(EMPTY_TEXT)
        self.title.setWordWrap(True)
        self.table = QTableWidget(0, len(WEIGHTS_HEADER), self)
        self.table.setHorizontalHeaderLabels([h.replace(" (", "\n(") for h in WEIGHTS_HEADER])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.title)
        layout.addWidget(self.table, 1)

    def show_estimate(self, est: Estimate | None, _selected: str | None = None) -> None:
        """Fill the table from ``est.weights_table`` (empty: say how to get one)."""
        rows = est.weights_table if est is not None else ()
        self.table.setRowCount(len(rows))
        if not rows or est is None:
            self.title.setText(EMPTY_TEXT)
            return
        self.title.setText(f"<b>{weights_title(est)}</b> · bold: the weights chosen on the Model page")
        problem = colors(self.palette()).problem
        for r, row in enumerate(rows):
            for c, text in enumerate(weights_cells(row)):
                item = QTableWidgetItem(text)
                align = Qt.AlignmentFlag.AlignLeft if c == 0 else Qt.AlignmentFlag.AlignRight
                item.setTextAlignment(align | Qt.AlignmentFlag.AlignVCenter)
                if row.current:
                    font = QFont(item.font())
                    font.setBold(True)
                    item.setFont(font)
                if c == 2 and row.fit == "no":
                    item.setForeground(QColor(problem))
                self.table.setItem(r, c, item)

    def row_texts(self) -> list[list[str]]:
        """The table's texts, row by row (for tests and the screenshot check)."""
        return [
            [_item_text(self.table.item(r, c)) for c in range(self.table.columnCount())]
            for r in range(self.table.rowCount())
        ]


def _item_text(item: QTableWidgetItem | None) -> str:
    return item.text() if item is not None else ""
