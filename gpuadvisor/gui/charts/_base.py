"""What the charts share: the widget frame (legend row above a plot), the empty-state message,
a static legend and an axis that labels a log10 scale in plain numbers.

Log axes: the charts transform their data to log10 themselves and :class:`ScaleAxis` writes the
ticks back as plain values. pyqtgraph's own ``setLogMode`` only transforms ``PlotDataItem``s;
``ErrorBarItem``, ``BarGraphItem`` and ``InfiniteLine`` would land in the wrong place.
"""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtCore import QLineF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QVBoxLayout, QWidget

from .labels import fmt_linear_tick, fmt_tick
from .palette import BACKGROUND_COLOR, MUTED_TEXT_COLOR, TEXT_COLOR

LABEL_STYLE = {"color": TEXT_COLOR, "font-size": "10pt"}
TICK_POINT_SIZE = 9


def tick_font() -> QFont:
    """The font of tick labels (also used to measure them)."""
    font = QFont()
    font.setPointSize(TICK_POINT_SIZE)
    return font


class StaticSample(pg.ItemSample):
    """A legend sample that is only a key: clicking it does not hide the plot item."""

    def mouseClickEvent(self, event) -> None:  # Qt/pyqtgraph override
        event.accept()


class DirectAxis(pg.AxisItem):
    """An axis that paints straight into the item cache instead of through a QPicture.

    pyqtgraph records an axis into a QPicture and plays it back on every paint. The charts cache
    their axes as pixmaps (DeviceCoordinateCache), so ``paint`` only runs when the axis changed,
    and the recording is pure overhead: replaying the tick texts cost more than laying them
    out (about 4 ms per axis here).
    """

    def drawPicture(self, p, axisSpec, tickSpecs, textSpecs):  # pyqtgraph override
        # Grid lines are tick lines with a translucent pen; blending them costs about 0.1 ms per
        # line here. Drawn opaque in the colour they would have over the white background (the
        # charts put their axes behind the data), in one call per pen, they cost a tenth of that.
        opaque = []
        cache: dict[int, QPen] = {}
        for pen, p1, p2 in tickSpecs:
            color = pen.color()
            if color.alpha() < 255:
                key = color.rgba()
                solid = cache.get(key)
                if solid is None:
                    solid = QPen(pen)
                    solid.setColor(_over_background(color))
                    cache[key] = solid
                pen = solid
            opaque.append((pen, p1, p2))
        super().drawPicture(p, axisSpec, [], textSpecs)
        groups: dict[int, tuple[QPen, list[QLineF]]] = {}
        for pen, p1, p2 in opaque:
            groups.setdefault(id(pen), (pen, []))[1].append(QLineF(p1, p2))
        p.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        for pen, lines in groups.values():
            p.setPen(pen)
            p.drawLines(lines)

    def paint(self, p, opt, widget):  # pyqtgraph override
        p.save()  # drawPicture changes render hints and the clip
        try:
            if self.style["tickFont"]:
                p.setFont(self.style["tickFont"])
            specs = self.generateDrawSpecs(p)
            if specs is not None:
                self.drawPicture(p, *specs)
        finally:
            p.restore()


def _over_background(color: QColor) -> QColor:
    """The opaque colour a translucent ``color`` shows over the chart background."""
    bg = QColor(BACKGROUND_COLOR)
    a = color.alphaF()
    return QColor(round(color.red() * a + bg.red() * (1 - a)), round(color.green() * a + bg.green() * (1 - a)),
                  round(color.blue() * a + bg.blue() * (1 - a)))


class ScaleAxis(DirectAxis):
    """An axis with readable tick labels, linear or log10 (the data is already in log10)."""

    def __init__(self, orientation: str, **kwargs) -> None:
        super().__init__(orientation, pen=pg.mkPen(MUTED_TEXT_COLOR), textPen=pg.mkPen(TEXT_COLOR), **kwargs)
        self.enableAutoSIPrefix(False)
        self.setStyle(tickFont=tick_font())
        self._log = False

    @property
    def is_log(self) -> bool:
        return self._log

    def set_log(self, log: bool) -> None:
        if log != self._log:
            self._log = log
            self.picture = None
            self.update()

    def tickValues(self, minVal: float, maxVal: float, size: float):  # pyqtgraph override
        if not self._log:
            return super().tickValues(minVal, maxVal, size)
        if not (math.isfinite(minVal) and math.isfinite(maxVal)) or maxVal <= minVal or size <= 0:
            return []
        px_per_decade = size / (maxVal - minVal)
        if px_per_decade > 300:
            mantissas: tuple[int, ...] = (1, 2, 3, 5, 7)
        elif px_per_decade > 140:
            mantissas = (1, 2, 5)
        elif px_per_decade > 70:
            mantissas = (1, 3)
        else:
            mantissas = (1,)
        step = max(1, math.ceil(45 / px_per_decade))  # decades between labels on a very long axis
        lo, hi = math.floor(minVal), math.ceil(maxVal)
        if hi - lo > 60:  # a degenerate range: do not loop over hundreds of decades
            return []
        major = [d + math.log10(m) for d in range(lo, hi + 1) if d % step == 0 for m in mantissas]
        major = [v for v in major if minVal <= v <= maxVal]
        minor = []
        if px_per_decade > 40:
            minor = [d + math.log10(m) for d in range(lo, hi + 1) for m in range(2, 10) if m not in mantissas]
            minor = [v for v in minor if minVal <= v <= maxVal]
        if len(major) < 2:  # about a decade or less: nice linear values, placed at their log10
            linear = super().tickValues(10 ** minVal, 10 ** maxVal, size)
            return [(1.0, [math.log10(v) for v in values if v > 0]) for _, values in linear[:2]]
        return [(1.0, major), (None, minor)]

    def tickStrings(self, values, scale, spacing):  # pyqtgraph override
        if spacing is None:
            return [None] * len(values)
        if self._log:
            return [fmt_tick(10 ** v) for v in values]
        return [fmt_linear_tick(v * scale, spacing * scale) for v in values]


class CategoryAxis(DirectAxis):
    """A vertical axis of named rows (``setTicks``) laid out directly.

    pyqtgraph's generic layout measures every label with ``QPainter.boundingRect`` and works out
    tick spacing levels, which for 27 GPU names took about 3 ms per repaint. Rows need none of
    that: each label sits at its row, right-aligned against the axis. Other uses (a grid, another
    orientation, no explicit ticks) fall back to pyqtgraph's layout.
    """

    def generateDrawSpecs(self, p):  # pyqtgraph override
        levels = self._tickLevels
        if self.orientation != "left" or not levels or self.grid is not False:
            return super().generateDrawSpecs(p)
        bounds = self.mapRectFromParent(self.geometry())
        lo, hi = self.range
        if hi == lo:
            return None
        scale = -bounds.height() / (hi - lo)  # the same mapping as pyqtgraph's (inverted views too)
        offset = lo * scale - bounds.height()
        axis_spec = (self.pen(), pg.Point(bounds.right() - 1, bounds.top() - 1),
                     pg.Point(bounds.right() - 1, bounds.bottom() + 1))
        if not self.style["showValues"]:
            return axis_spec, [], []
        height = QFontMetrics(self.style["tickFont"] or QFont()).height()
        right = bounds.right() - max(0, self.style["tickLength"]) - self.style["tickTextOffset"][0]
        flags = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextDontClip)
        texts = []
        for value, label in levels[0]:
            y = value * scale - offset
            if bounds.top() - height / 2 <= y <= bounds.bottom() + height / 2:
                texts.append((QRectF(bounds.left(), y - height / 2, right - bounds.left(), height), flags, label))
        return axis_spec, [], texts


def category_axis(orientation: str) -> DirectAxis:
    """An axis for named rows; the chart sets its ticks."""
    axis = CategoryAxis(orientation, pen=pg.mkPen(MUTED_TEXT_COLOR), textPen=pg.mkPen(TEXT_COLOR))
    axis.enableAutoSIPrefix(False)
    axis.setStyle(tickFont=tick_font())
    return axis


class ChartBase(QWidget):
    """A legend row above one plot, on a white background, with a centred message for empty states.

    ``self.plot`` is the pyqtgraph view (a ``GraphicsLayoutWidget``), ``self.plot_item`` the
    ``PlotItem``; render ``self.plot.scene()`` for a report image.
    """

    def __init__(self, parent: QWidget | None = None, *, legend_columns: int = 4,
                 axis_items: dict[str, pg.AxisItem] | None = None) -> None:
        super().__init__(parent)
        self.plot = pg.GraphicsLayoutWidget()
        self.plot.setBackground(BACKGROUND_COLOR)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.plot)
        self.legend = pg.LegendItem(colCount=legend_columns, sampleType=StaticSample,
                                    labelTextColor=TEXT_COLOR, labelTextSize="9pt", frame=False,
                                    horSpacing=14, verSpacing=-4)
        self.plot.addItem(self.legend, row=0, col=0)
        self.plot_item: pg.PlotItem = self.plot.addPlot(row=1, col=0, axisItems=axis_items or {})
        self.plot.ci.layout.setRowStretchFactor(1, 1)
        self.plot_item.setMenuEnabled(False)
        self.plot_item.hideButtons()
        self.view_box: pg.ViewBox = self.plot_item.getViewBox()
        # Axes redraw their tick text on every repaint; cache them as pixmaps until they change
        # (pyqtgraph calls update() when ticks or range change, which refreshes the cache).
        for name in ("left", "bottom", "right", "top"):
            axis = self.plot_item.getAxis(name)
            axis.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
            axis.setZValue(-1)  # behind the data, so grid lines never cross bars or points
        self.legend.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self._message = pg.TextItem("", color=TEXT_COLOR, anchor=(0.5, 0.5))
        font = QFont()
        font.setPointSize(11)
        self._message.setFont(font)
        self._message.setZValue(100)
        self._message.hide()
        self.plot_item.addItem(self._message, ignoreBounds=True)
        self._notice = ""

    # -- export ---------------------------------------------------------------------------
    def render_image(self, dpr: float = 3.0) -> QImage:
        """The chart (legend included) as a sharp raster for a report.

        Renders the scene into an image whose device pixel ratio is ``dpr`` with the target in
        logical coordinates, so the legend and the markers keep their proportions
        (STACK-NOTES, pitfall P2). For vectors, render ``self.plot.scene()`` over
        ``self.plot.ci.sceneBoundingRect()`` into a ``QPdfWriter`` at 96 dpi (pitfall P1).
        """
        src = self.plot.ci.sceneBoundingRect()
        image = QImage(max(1, int(src.width() * dpr)), max(1, int(src.height() * dpr)),
                       QImage.Format.Format_ARGB32_Premultiplied)
        image.setDevicePixelRatio(dpr)
        image.fill(QColor(BACKGROUND_COLOR))
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        self.plot.scene().render(painter, QRectF(0, 0, src.width(), src.height()), src)
        painter.end()
        return image

    # -- legend -----------------------------------------------------------------------------
    def _fit_legend(self) -> None:
        """As many legend columns as the width allows (the legend never widens the chart)."""
        if not self.legend.items:
            return
        metrics = QFontMetrics(tick_font())
        entry = max(metrics.horizontalAdvance(label.text) for _, label in self.legend.items) + 20 + 24
        columns = max(1, min(len(self.legend.items), (max(self.width(), 200) - 40) // entry))
        self.legend.setColumnCount(int(columns))

    def resizeEvent(self, event) -> None:  # Qt override
        self._fit_legend()
        super().resizeEvent(event)

    # -- empty state --------------------------------------------------------------------
    def message(self) -> str:
        """The explanatory text on show (empty-state message or notice), ``""`` when there is none."""
        return self._message.toPlainText() if self._message.isVisible() else self._notice

    def _show_message(self, text: str) -> None:
        """Replace the plot by a centred message (the caller hides its data items)."""
        self._set_notice("")
        self._message.setText(text)
        self._message.setPos(0.5, 0.5)
        self._message.show()
        self.legend.hide()
        for name in ("left", "bottom"):
            self.plot_item.getAxis(name).setVisible(False)
        self.view_box.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)

    def _hide_message(self) -> None:
        if not self._message.isVisible() and self.legend.isVisible():
            return  # already showing the plot: touching the items would re-lay out the chart
        self._message.hide()
        self.legend.show()
        for name in ("left", "bottom"):
            self.plot_item.getAxis(name).setVisible(True)

    def _set_notice(self, text: str, color: str = TEXT_COLOR) -> None:
        """A one-line notice above the plot (shown while the data stays visible)."""
        if (text, color) == getattr(self, "_notice_shown", None):
            return  # setTitle re-lays out the whole plot, even for the same text
        self._notice_shown = (text, color)
        self._notice = text
        self.plot_item.setTitle(text or None, color=color, size="10pt")
