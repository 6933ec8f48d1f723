"""The ranking's table view: paints its visible cells in one pass, or why there is no row."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QModelIndex, QRect, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QGuiApplication,
    QKeyEvent,
    QKeySequence,
    QPainter,
    QPaintEvent,
    QPalette,
)
from PySide6.QtWidgets import QStyle, QTableView, QWidget

from .colors import table_colors
from .model import COL_PICK, HEADERS, RECOMMENDED_MARK, RankingModel, RankingProxy, alignment, cell_color

_ACTIVE = QPalette.ColorGroup.Active
_INACTIVE = QPalette.ColorGroup.Inactive


class RankingView(QTableView):
    """The ranking table view; it paints its visible cells itself, in one pass.

    A delegate is called from C++ once per cell with a copied style option, and on this class of
    machine that call alone cost more than drawing the cell (about 0.1 ms each, 6-7 ms per
    update). Painting the visible rows in one Python call from the model's cached texts looks the
    same: alternating rows, the selection, the grid, the recommended row's tint, the status
    colours, and text elided to the column. Selection, scrolling, sorting and tooltips stay Qt's.
    With no row to show, it paints why (:meth:`RankingModel.empty_message`) instead of nothing.
    Ctrl+C copies the selected rows as tab-separated text with a header line; Enter reports the
    current row (:attr:`enterPressed`).
    """

    #: Enter or Return on a row.
    enterPressed = Signal()

    def __init__(self, model: RankingModel, proxy: RankingProxy, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._model, self._proxy = model, proxy

    def event(self, event: QEvent) -> bool:
        # While the table has the focus its Ctrl+C wins over a window-wide Copy shortcut, as a
        # line edit's does: accepting the override turns the shortcut back into a key press.
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and event.matches(QKeySequence.StandardKey.Copy)
        ):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.matches(QKeySequence.StandardKey.Copy):
            self.copy_rows()
            event.accept()
        elif (
            event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
            and not event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
        ):
            self.enterPressed.emit()
            event.accept()
        else:
            super().keyPressEvent(event)

    def visible_columns(self) -> list[int]:
        """Logical columns in the order shown."""
        header = self.horizontalHeader()
        return [
            c
            for c in (header.logicalIndex(v) for v in range(header.count()))
            if not header.isSectionHidden(c)
        ]

    def table_rows(self, selected_only: bool) -> list[list[str]]:
        """The header and the rows (all shown rows, or the selected ones) as shown, in the table's order."""
        model, proxy = self._model, self._proxy
        cols = self.visible_columns()
        if selected_only:
            rows = sorted(i.row() for i in self.selectionModel().selectedRows())
        else:
            rows = list(range(proxy.rowCount()))
        out = [[HEADERS[c] for c in cols]]
        for r in rows:
            texts = model.texts(proxy.mapToSource(proxy.index(r, 0)).row())
            out.append([texts[c] for c in cols])
        return out

    def copy_rows(self) -> None:
        """The selected rows to the clipboard as tab-separated text with a header line (for spreadsheets)."""
        rows = self.table_rows(selected_only=True)
        if len(rows) > 1:
            QGuiApplication.clipboard().setText(
                "\n".join("\t".join(t.replace("\t", " ").replace("\n", " ") for t in row) for row in rows)
                + "\n"
            )

    def paintEvent(self, event: QPaintEvent) -> None:
        model, proxy = self._model, self._proxy
        viewport = self.viewport()
        painter = QPainter(viewport)
        try:
            palette = self.palette()
            group = _ACTIVE if self.isActiveWindow() else _INACTIVE
            area = event.rect()
            painter.fillRect(area, palette.brush(group, QPalette.ColorRole.Base))
            rows = proxy.rowCount()
            if not rows:
                self._paint_empty(painter, palette, group)
                return
            colors = table_colors(palette, group)
            first = max(self.rowAt(area.top()), 0)
            last = self.rowAt(area.bottom())
            last = rows - 1 if last < 0 else last
            columns = [
                (c, self.columnViewportPosition(c), self.columnWidth(c))
                for c in range(len(HEADERS))
                if not self.isColumnHidden(c)
            ]
            columns = [(c, x, w) for c, x, w in columns if x + w > area.left() and x < area.right() + 1]
            selection = self.selectionModel()
            metrics = self.fontMetrics()
            max_char = metrics.maxWidth()
            font = self.font()
            bold = QFont(font)
            bold.setBold(True)
            bad = colors.tones["bad"]
            text_color = colors.text
            selected_color = palette.color(group, QPalette.ColorRole.HighlightedText)
            highlight = palette.brush(group, QPalette.ColorRole.Highlight)
            alternate = palette.brush(group, QPalette.ColorRole.AlternateBase)
            grid = QColor(
                self.style().styleHint(QStyle.StyleHint.SH_Table_GridLineColor, None, self) & 0xFFFFFFFF
            )
            width = viewport.width()
            for r in range(first, last + 1):
                y, h = self.rowViewportPosition(r), self.rowHeight(r)
                source_row = proxy.mapToSource(proxy.index(r, 0)).row()
                if not 0 <= source_row < len(model.rows):
                    continue
                texts = model.texts(source_row)
                selected = selection is not None and selection.isRowSelected(r, QModelIndex())
                if selected:
                    painter.fillRect(0, y, width, h, highlight)
                elif texts[COL_PICK] == RECOMMENDED_MARK:
                    painter.fillRect(0, y, width, h, colors.recommended)
                elif r % 2 and self.alternatingRowColors():
                    painter.fillRect(0, y, width, h, alternate)
                for c, x, w in columns:
                    text = texts[c]
                    if not text:
                        continue
                    color = cell_color(colors, c, text)
                    painter.setPen(selected_color if selected else color or text_color)
                    # Words that rule a setup out ("at risk", "over", "does not fit") are bold too:
                    # colour is never the only cue.
                    alarm = color is not None and color is bad
                    if alarm:
                        painter.setFont(bold)
                    inner = w - 8
                    if len(text) * max_char > inner and metrics.horizontalAdvance(text) > inner:
                        text = metrics.elidedText(text, Qt.TextElideMode.ElideRight, inner)
                    painter.drawText(QRect(x + 4, y, inner, h), alignment(c), text)
                    if alarm:
                        painter.setFont(font)
            if self.showGrid():
                painter.setPen(grid)
                bottom = self.rowViewportPosition(last) + self.rowHeight(last) - 1
                for r in range(first, last + 1):
                    y = self.rowViewportPosition(r) + self.rowHeight(r) - 1
                    painter.drawLine(0, y, width, y)
                for _c, x, w in columns:
                    painter.drawLine(x + w - 1, 0, x + w - 1, bottom)
        finally:
            painter.end()

    def _paint_empty(self, painter: QPainter, palette: QPalette, group: QPalette.ColorGroup) -> None:
        """The reason no row is shown, in words, at the top left of the viewport."""
        heading, lines = self._model.empty_message()
        if not heading:
            return
        rect = self.viewport().rect().adjusted(12, 10, -12, -10)
        flags = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap)
        painter.setPen(palette.color(group, QPalette.ColorRole.Text))
        bold = QFont(self.font())
        bold.setBold(True)
        painter.setFont(bold)
        used = painter.boundingRect(rect, flags, heading)
        painter.drawText(rect, flags, heading)
        if lines:
            painter.setFont(self.font())
            painter.drawText(rect.adjusted(0, used.height() + 6, 0, 0), flags, "\n".join(lines))
