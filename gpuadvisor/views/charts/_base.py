"""What the charts share: the widget frame (legend row above a plot), the empty-state message,
a static legend, an axis that labels a log10 scale in plain numbers, the chart colours (light or
dark, following the application palette) and off-screen rendering for the report.

Log axes: the charts transform their data to log10 themselves and :class:`ScaleAxis` writes the
ticks back as plain values. pyqtgraph's own ``setLogMode`` only transforms ``PlotDataItem``s;
``ErrorBarItem``, ``BarGraphItem`` and ``InfiniteLine`` would land in the wrong place.

Fonts follow the application font (tick labels at its size, axis titles one point larger), so the
charts scale with the desktop's font and with ``QT_SCALE_FACTOR``.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import Any

import pyqtgraph as pg
from PySide6.QtCore import QEvent, QLineF, QRectF, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QPen, QResizeEvent
from PySide6.QtWidgets import QApplication, QGraphicsItem, QGraphicsView, QHBoxLayout, QWidget

from ...core.estimation.results import Estimate
from .labels import fmt_linear_tick, fmt_tick
from .palette import LIGHT, ChartColors, chart_colors, is_dark_palette

#: The message over an empty chart is this many points larger than the tick labels.
MESSAGE_EXTRA_PT = 2.0


def app_font() -> QFont:
    """The application's font (a default font before a QApplication exists)."""
    return QFont(QApplication.font()) if QApplication.instance() is not None else QFont()


def point_size(font: QFont) -> float:
    """A font's size in points, also for fonts sized in pixels (assuming 96 dpi)."""
    pt = font.pointSizeF()
    if pt <= 0 and font.pixelSize() > 0:
        pt = font.pixelSize() * 0.75
    return pt if pt > 0 else 9.0


def tick_font() -> QFont:
    """The font of tick labels, legends and point labels: the application font (also used to measure them)."""
    font = app_font()
    font.setPointSizeF(point_size(font))
    return font


def label_style(colors: ChartColors) -> dict[str, str]:
    """CSS for axis titles: the text colour, one point larger than the application font."""
    return {"color": colors.text, "font-size": f"{point_size(app_font()) + 1:g}pt"}


def weak_callback(method: Callable[..., str]) -> Callable[..., str]:
    """A chart's bound method (a tooltip callback) for an item to keep, without keeping the chart.

    An item that held the chart's bound method (``ScatterPlotItem(tip=self._tip)``) made a
    reference cycle chart -> plot -> item -> method -> chart, so the chart was freed by the
    cyclic garbage collector instead of when its owner let go. The collector breaks a cycle in
    any order: it could drop the last reference to a Python-owned pyqtgraph item first, whose
    C++ destructor then freed the chart (and its scene) while that item was still being
    destroyed inside the scene: a segmentation fault at garbage collection, at a random moment
    of a later test or while the app runs. With a weak reference every chart is freed at once, in
    Qt's own order. An item that outlives its chart calls this and gets ``""``.
    """
    ref = weakref.WeakMethod(method)

    def call(*args: Any, **kwargs: Any) -> str:
        bound = ref()
        return bound(*args, **kwargs) if bound is not None else ""

    return call


class StaticSample(pg.ItemSample):
    """A legend sample that is only a key: clicking it does not hide the plot item."""

    def mouseClickEvent(self, event: Any) -> None:  # pyqtgraph override (a MouseClickEvent)
        event.accept()


class DirectAxis(pg.AxisItem):
    """An axis that paints straight into the item cache instead of through a QPicture.

    pyqtgraph records an axis into a QPicture and plays it back on every paint. The charts cache
    their axes as pixmaps (DeviceCoordinateCache), so ``paint`` only runs when the axis changed,
    and the recording is pure overhead: replaying the tick texts cost more than laying them
    out (about 4 ms per axis here).
    """

    #: The chart background, to turn translucent grid lines into opaque ones (see drawPicture).
    background = QColor(LIGHT.background)

    def itemChange(self, change: QGraphicsItem.GraphicsItemChange, value: Any) -> Any:  # Qt override
        # pyqtgraph sizes an axis to 0 while it is hidden (``_updateWidth``/``_updateHeight``) and
        # does not size it again when it is shown: an axis hidden for an empty state, or given its
        # width before the chart was first shown, kept width 0 and drew no labels. Size it again
        # whenever it becomes visible.
        result = super().itemChange(change, value)
        if change == QGraphicsItem.GraphicsItemChange.ItemVisibleHasChanged and value:
            if self.orientation in ("left", "right"):
                self._updateWidth()
            else:
                self._updateHeight()
        return result

    def set_colors(self, colors: ChartColors) -> None:
        """Axis line, tick text and the background the grid is blended over."""
        self.background = QColor(colors.background)
        self.setPen(pg.mkPen(colors.muted_text))
        self.setTextPen(pg.mkPen(colors.text))

    def drawPicture(  # pyqtgraph override
        self, p: QPainter, axisSpec: Any, tickSpecs: Any, textSpecs: Any
    ) -> None:
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
                    solid.setColor(_over_background(color, self.background))
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

    def paint(self, p: QPainter, opt: Any, widget: QWidget | None) -> None:  # pyqtgraph override
        p.save()  # drawPicture changes render hints and the clip
        try:
            if self.style["tickFont"]:
                p.setFont(self.style["tickFont"])
            specs = self.generateDrawSpecs(p)
            if specs is not None:
                self.drawPicture(p, *specs)
        finally:
            p.restore()


def _over_background(color: QColor, bg: QColor) -> QColor:
    """The opaque colour a translucent ``color`` shows over the background ``bg``."""
    a = color.alphaF()
    return QColor(
        round(color.red() * a + bg.red() * (1 - a)),
        round(color.green() * a + bg.green() * (1 - a)),
        round(color.blue() * a + bg.blue() * (1 - a)),
    )


#: The least distance between two labels of a log axis made denser for a short axis (px).
MIN_LOG_LABEL_PX = 16


class ScaleAxis(DirectAxis):
    """An axis with readable tick labels, linear or log10 (the data is already in log10)."""

    def __init__(self, orientation: str, **kwargs: Any) -> None:
        super().__init__(orientation, pen=pg.mkPen(LIGHT.muted_text), textPen=pg.mkPen(LIGHT.text), **kwargs)
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

    def tickValues(  # pyqtgraph override
        self, minVal: float, maxVal: float, size: float
    ) -> list[tuple[float | None, list[float]]]:
        if not self._log:
            linear: list[tuple[float | None, list[float]]] = super().tickValues(minVal, maxVal, size)
            return linear
        if not (math.isfinite(minVal) and math.isfinite(maxVal)) or maxVal <= minVal or size <= 0:
            return []
        px_per_decade = size / (maxVal - minVal)
        lo, hi = math.floor(minVal), math.ceil(maxVal)
        if hi - lo > 60:  # a degenerate range: do not loop over hundreds of decades
            return []
        densities: tuple[tuple[int, ...], ...] = ((1,), (1, 3), (1, 2, 5), (1, 2, 3, 5, 7))
        if px_per_decade > 300:
            start = 3
        elif px_per_decade > 140:
            start = 2
        elif px_per_decade > 70:
            start = 1
        else:
            start = 0
        step = max(1, math.ceil(45 / px_per_decade))  # decades between labels on a very long axis

        def majors(mantissas: tuple[int, ...], every: int) -> list[float]:
            values = [d + math.log10(m) for d in range(lo, hi + 1) if d % every == 0 for m in mantissas]
            return [v for v in values if minVal <= v <= maxVal]

        mantissas = densities[start]
        major = majors(mantissas, step if start == 0 else 1)
        if len(major) < 2 and step > 1 and px_per_decade >= MIN_LOG_LABEL_PX:
            major = majors(mantissas, 1)  # every decade rather than one label on a short axis
        # A short axis (a small chart, a high scale factor) over a decade or two: denser values while
        # fewer than three are labelled and the labels stay at least MIN_LOG_LABEL_PX apart.
        for denser in densities[start + 1 :]:
            if len(major) >= 3:
                break
            trial = majors(denser, 1)
            if (
                len(trial) < 2
                or min(b - a for a, b in zip(trial, trial[1:])) * px_per_decade < MIN_LOG_LABEL_PX
            ):
                break
            mantissas, major = denser, trial
        minor = []
        if px_per_decade > 40:
            minor = [d + math.log10(m) for d in range(lo, hi + 1) for m in range(2, 10) if m not in mantissas]
            minor = [v for v in minor if minVal <= v <= maxVal]
        if len(major) < 2:  # about a decade or less: nice linear values, placed at their log10
            linear = super().tickValues(10**minVal, 10**maxVal, size)
            return [(1.0, [math.log10(v) for v in values if v > 0]) for _, values in linear[:2]]
        return [(1.0, major), (None, minor)]

    def tickStrings(  # pyqtgraph override
        self, values: list[float], scale: float, spacing: float | None
    ) -> list[str | None]:
        if spacing is None:
            return [None] * len(values)
        if self._log:
            return [fmt_tick(10**v) for v in values]
        return [fmt_linear_tick(v * scale, spacing * scale) for v in values]


class CategoryAxis(DirectAxis):
    """A vertical axis of named rows (``setTicks``) laid out directly.

    pyqtgraph's generic layout measures every label with ``QPainter.boundingRect`` and works out
    tick spacing levels, which for 27 GPU names took about 3 ms per repaint. Rows need none of
    that: each label sits at its row, right-aligned against the axis. Other uses (a grid, another
    orientation, no explicit ticks) fall back to pyqtgraph's layout.
    """

    def generateDrawSpecs(self, p: QPainter) -> Any:  # pyqtgraph override
        levels = self._tickLevels
        if self.orientation != "left" or not levels or self.grid is not False:
            return super().generateDrawSpecs(p)
        bounds = self.mapRectFromParent(self.geometry())
        lo, hi = self.range
        if hi == lo:
            return None
        scale = -bounds.height() / (hi - lo)  # the same mapping as pyqtgraph's (inverted views too)
        offset = lo * scale - bounds.height()
        axis_spec = (
            self.pen(),
            pg.Point(bounds.right() - 1, bounds.top() - 1),
            pg.Point(bounds.right() - 1, bounds.bottom() + 1),
        )
        if not self.style["showValues"]:
            return axis_spec, [], []
        height = QFontMetrics(self.style["tickFont"] or QFont()).height()
        right = bounds.right() - max(0, self.style["tickLength"]) - self.style["tickTextOffset"][0]
        flags = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter | Qt.TextFlag.TextDontClip)
        texts = []
        for value, label in levels[0]:
            y = value * scale - offset
            if bounds.top() - height / 2 <= y <= bounds.bottom() + height / 2:
                texts.append(
                    (QRectF(bounds.left(), y - height / 2, right - bounds.left(), height), flags, label)
                )
        return axis_spec, [], texts


def category_axis(orientation: str) -> DirectAxis:
    """An axis for named rows; the chart sets its ticks."""
    axis = CategoryAxis(orientation, pen=pg.mkPen(LIGHT.muted_text), textPen=pg.mkPen(LIGHT.text))
    axis.enableAutoSIPrefix(False)
    axis.setStyle(tickFont=tick_font())
    return axis


#: ``show()`` without an estimate is ``QWidget.show`` (see :meth:`ChartBase.show`).
_WIDGET_SHOW = object()


class ChartBase(QWidget):
    """A legend row above one plot, with a centred message for empty states.

    ``self.plot`` is the pyqtgraph view (a ``GraphicsLayoutWidget``), ``self.plot_item`` the
    ``PlotItem``. Every chart redraws from an estimate with ``show(est, selected)``; called with no
    argument, ``show()`` is ``QWidget.show``.

    Colours: ``dark=None`` follows the application palette (and switches when it changes),
    ``True``/``False`` pins the dark or light variant. :meth:`render_image` always draws the light
    variant (the report is printed on white).
    """

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        legend_columns: int = 4,
        axis_items: dict[str, pg.AxisItem] | None = None,
        dark: bool | None = None,
    ) -> None:
        super().__init__(parent)
        self._follow_palette = dark is None
        self.colors: ChartColors = chart_colors(_app_is_dark() if dark is None else dark)
        self.plot = pg.GraphicsLayoutWidget()
        self.plot.setBackground(self.colors.background)
        self.plot.setMinimumSize(1, 1)
        # One rectangle around everything that changed: an update moves items all over the plot
        # (points, labels, lines), and the many small rectangles of the default mode make Qt clip
        # every long path (the error bars) against a complex region, several times slower.
        self.plot.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.BoundingRectViewportUpdate)
        self.frame_layout = QHBoxLayout(self)
        self.frame_layout.setContentsMargins(0, 0, 0, 0)
        self.frame_layout.setSpacing(0)
        self.frame_layout.addWidget(self.plot, 1)
        font_pt = point_size(app_font())
        self.legend = pg.LegendItem(
            colCount=legend_columns,
            sampleType=StaticSample,
            labelTextColor=self.colors.text,
            labelTextSize=f"{font_pt:g}pt",
            frame=False,
            horSpacing=14,
            verSpacing=-4,
        )
        self.plot.addItem(self.legend, row=0, col=0)
        # Tight margins: in a laptop-sized window every pixel of height is a row of data.
        self.plot.ci.layout.setContentsMargins(6, 3, 8, 2)
        self.plot.ci.layout.setVerticalSpacing(2)
        self.legend.layout.setContentsMargins(4, 2, 4, 2)
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
            if isinstance(axis, DirectAxis):
                axis.set_colors(self.colors)
                axis.setStyle(tickFont=tick_font())
        self.legend.setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)
        self._message = pg.TextItem("", color=self.colors.text, anchor=(0.5, 0.5))
        font = app_font()
        font.setPointSizeF(font_pt + MESSAGE_EXTRA_PT)
        self._message.setFont(font)
        self._message.setZValue(100)
        self._message.hide()
        self.plot_item.addItem(self._message, ignoreBounds=True)
        self._notice = ""
        self._axis_titles: dict[str, str] = {}

    # -- redraw ---------------------------------------------------------------------------
    def show(self, est: Estimate | None | object = _WIDGET_SHOW, selected: str | None = None) -> None:
        """Redraw from ``est`` (an ``Estimate``, or ``None`` for the empty state) with the candidate
        ``selected`` (a ``Candidate.key``) highlighted. Without arguments: ``QWidget.show``."""
        if est is _WIDGET_SHOW:
            super().show()
            return
        assert est is None or isinstance(est, Estimate)
        self.show_estimate(est, selected)

    def show_estimate(self, est: Estimate | None, selected: str | None = None) -> None:
        """Redraw the chart from an estimate (``None``: the empty state); every chart defines it."""
        raise NotImplementedError(f"{type(self).__name__} must define show_estimate")

    # -- colours --------------------------------------------------------------------------
    def set_dark(self, dark: bool | None) -> None:
        """Pin the dark (``True``) or light (``False``) colours, or follow the application (``None``)."""
        self._follow_palette = dark is None
        self.apply_colors(chart_colors(_app_is_dark() if dark is None else dark))

    def apply_colors(self, colors: ChartColors) -> None:
        """Recolour the frame (background, axes, legend, messages) and the chart's own items."""
        if colors == self.colors:
            return  # the items already have these colours (the charts colour them when built)
        self.colors = colors
        self.plot.setBackground(colors.background)
        for name in ("left", "bottom", "right", "top"):
            axis = self.plot_item.getAxis(name)
            if isinstance(axis, DirectAxis):
                axis.set_colors(colors)
        for name, text in self._axis_titles.items():
            self.plot_item.setLabel(name, text, **label_style(colors))
        self.legend.setLabelTextColor(colors.text)
        for _, label in self.legend.items:
            label.setText(label.text, color=colors.text)
        self._message.setColor(colors.text)
        if getattr(self, "_notice_shown", None):
            text, warning, _colors = self._notice_shown
            self._set_notice(text, warning)
        self._apply_colors(colors)

    def _apply_colors(self, colors: ChartColors) -> None:
        """Recolour the chart's own items (charts override)."""

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        kind = event.type()
        if kind in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange) and self._follow_palette:
            dark = _app_is_dark()
            if dark != self.colors.dark:
                self.apply_colors(chart_colors(dark))
        elif kind in (QEvent.Type.FontChange, QEvent.Type.ApplicationFontChange):
            self.apply_fonts()
        super().changeEvent(event)

    def apply_fonts(self) -> None:
        """Take the application's font again (tick labels, legend, axis titles, messages)."""
        font_pt = point_size(app_font())
        for name in ("left", "bottom", "right", "top"):
            axis = self.plot_item.getAxis(name)
            if isinstance(axis, DirectAxis):
                axis.setStyle(tickFont=tick_font())
        for name, text in self._axis_titles.items():
            self.plot_item.setLabel(name, text, **label_style(self.colors))
        self.legend.setLabelTextSize(f"{font_pt:g}pt")
        for _, label in self.legend.items:
            label.setText(label.text, size=f"{font_pt:g}pt")
        font = app_font()
        font.setPointSizeF(font_pt + MESSAGE_EXTRA_PT)
        self._message.setFont(font)
        self._fit_legend()
        self._apply_fonts()

    def _apply_fonts(self) -> None:
        """Re-measure the chart's own text after a font change (charts override)."""

    def _set_axis_title(self, name: str, text: str) -> None:
        """An axis title in the chart's colours (kept for a colour change)."""
        if self._axis_titles.get(name) != text:
            self._axis_titles[name] = text
            self.plot_item.setLabel(name, text, **label_style(self.colors))

    # -- export ---------------------------------------------------------------------------
    def render_image(
        self, dpr: float = 3.0, size: QSize | tuple[int, int] | None = None, light: bool = True
    ) -> QImage:
        """The chart (legend included) as a sharp raster for a report, in the light colours.

        ``size`` (logical pixels) lays the chart out at that size first; the default is the
        widget's size. The chart need not have been shown: the scene is laid out directly.
        Renders the scene into an image whose device pixel ratio is ``dpr`` with the target in
        logical coordinates, so the legend and the markers keep their proportions
        (STACK-NOTES, pitfall P2). For vectors, render ``self.plot.scene()`` over
        ``self.plot.ci.sceneBoundingRect()`` into a ``QPdfWriter`` at 96 dpi (pitfall P1).
        """
        if size is None:
            size = self.plot.size() if self.plot.isVisible() else self.size()
        w, h = (size.width(), size.height()) if isinstance(size, QSize) else size
        old_colors = self.colors
        old_rect = QRectF(self.plot.ci.geometry())
        if light:
            self.apply_colors(LIGHT)
        try:
            w, h = self._render_size(w, h)
            self.layout_scene(w, h)
            src = self.plot.ci.sceneBoundingRect()
            image = QImage(
                max(1, int(src.width() * dpr)),
                max(1, int(src.height() * dpr)),
                QImage.Format.Format_ARGB32_Premultiplied,
            )
            image.setDevicePixelRatio(dpr)
            image.fill(QColor(self.colors.background))
            painter = QPainter(image)
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            self.plot.scene().render(painter, QRectF(0, 0, src.width(), src.height()), src)
            painter.end()
        finally:
            if old_rect.width() > 0 and old_rect.height() > 0:
                self.layout_scene(old_rect.width(), old_rect.height())
            if light:
                self.apply_colors(old_colors)
        return image

    def layout_scene(self, width: float, height: float) -> None:
        """Lay the legend and the plot out for ``width`` x ``height`` now, shown or not."""
        self._fit_legend(width)
        self.plot.ci.setGeometry(QRectF(0, 0, width, height))
        for _ in range(3):  # the legend's height, then the axes' sizes, then the plot follows
            self.plot.ci.layout.activate()
            self.plot_item.layout.activate()
        while self.plot.ci.geometry().width() > width + 0.5 and self.legend.columnCount > 1:
            self.legend.setColumnCount(self.legend.columnCount - 1)  # the legend never widens the chart
            self.plot.ci.setGeometry(QRectF(0, 0, width, height))
            self.plot.ci.layout.activate()
            self.plot_item.layout.activate()
        self._after_layout()

    def _render_size(self, width: int, height: int) -> tuple[int, int]:
        """The size to render at when asked for ``width`` x ``height`` (charts may need more)."""
        return width, height

    def _after_layout(self) -> None:
        """Called once the scene has been laid out directly (charts override)."""

    # -- legend -----------------------------------------------------------------------------
    def _fit_legend(self, width: float | None = None) -> None:
        """As many legend columns as the width allows (the legend never widens the chart).

        Entries fill the legend row by row; each column is as wide as its widest entry."""
        if not self.legend.items:
            return
        # sample, spacing and the label's own margins around its text
        entries = [label.item.boundingRect().width() + 20 + 14 + 8 for _, label in self.legend.items]
        live = width is None
        if width is None:  # the plot's share of this widget (a chart may add a scroll bar beside it)
            width = self.width() - sum(
                w.sizeHint().width() for w in self._frame_widgets() if w is not self.plot and w.isVisible()
            )
        left, _top, right, _bottom = self.plot.ci.layout.getContentsMargins()
        room = max(width, 200) - left - right
        columns = 1
        for c in range(len(entries), 1, -1):
            if sum(max(entries[i::c]) for i in range(c)) <= room - 16:
                columns = c
                break
        if columns != self.legend.columnCount:
            self.legend.setColumnCount(int(columns))
        # The estimate above misses the labels' own margins: measure the laid-out legend and
        # drop columns until it fits, or the last column's entries are cut off at the edge.
        while self.legend.columnCount > 1 and self._legend_width() > room:
            self.legend.setColumnCount(self.legend.columnCount - 1)
        if live and self.plot.ci.geometry().width() > self.plot.width() + 0.5 and self.plot.width() > 1:
            # The scene was laid out while the wider legend held it open (a geometry is never set
            # below its minimum): give it the view's width back now that the legend allows it.
            self.plot.ci.setGeometry(QRectF(0, 0, self.plot.width(), self.plot.height()))

    def _legend_width(self) -> float:
        """The width the legend asks for with its current columns."""
        self.legend.layout.invalidate()
        return float(self.legend.layout.effectiveSizeHint(Qt.SizeHint.PreferredSize).width())

    def _frame_widgets(self) -> list[QWidget]:
        """The widgets of the frame row (the plot and whatever a chart adds beside it)."""
        items = (self.frame_layout.itemAt(i) for i in range(self.frame_layout.count()))
        widgets = (item.widget() for item in items if item is not None)
        return [widget for widget in widgets if widget is not None]

    def resizeEvent(self, event: QResizeEvent) -> None:  # Qt override
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

    def _set_notice(self, text: str, warning: bool = False) -> None:
        """A one-line notice above the plot (shown while the data stays visible), in the warning
        colour when ``warning``."""
        if (text, warning, self.colors) == getattr(self, "_notice_shown", None):
            return  # setTitle re-lays out the whole plot, even for the same text
        self._notice_shown = (text, warning, self.colors)
        self._notice = text
        color = self.colors.no_fit if warning else self.colors.text
        self.plot_item.setTitle(text or None, color=color, size=f"{point_size(app_font()) + 1:g}pt")


def _app_is_dark() -> bool:
    app = QApplication.instance()
    return isinstance(app, QApplication) and is_dark_palette(app.palette())
