"""What-if: memory per GPU as the context length (or batch size) grows, for a few GPUs.

One curve per GPU, told apart without colour: each has its own dash pattern and its own marker
symbol (repeated along the curve and in the legend). A thin line at the GPU's usable capacity
carries the same symbol at its left end; a diamond marks the largest value that still fits and
a dotted vertical line the scenario's current value. The curve of the recommended setup's GPU
is drawn thicker and starred in the legend.

:meth:`WhatIfChart.show` picks the GPUs (:func:`~.whatif_data.whatif_gpu_ids`: the selected
setup's GPU, the recommended one, then the best GPU types) and computes the curves with
:func:`~.whatif_data.whatif_curves` (the core's ``memory_curve``); this widget only draws them.
At most :data:`MAX_SERIES` GPUs are shown.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QWidget

from ...core.estimation.results import Estimate
from ._base import ChartBase, ScaleAxis
from .labels import finite
from .palette import SERIES_COLORS, ChartColors
from .whatif_data import AXES, WhatIfCurve, axis_label, weights_curves, whatif_curves, whatif_gpu_ids

MAX_SERIES = len(SERIES_COLORS)
LOG_SPAN = 100.0  # a log x axis above this max/min ratio (contexts: yes; a batch of 1 to 64: no)
DOT = Qt.PenStyle.DotLine
EMPTY_MESSAGE = "Pick GPUs to see how memory grows."
RECOMMENDED_MARK = "\u2605"
#: Per series: the dash pattern (None: solid; else dash and gap lengths in pen widths) and the symbol.
SERIES_STYLES: tuple[tuple[tuple[float, ...] | None, str], ...] = (
    (None, "o"),
    ((5, 2.5), "s"),
    ((6, 2, 1, 2), "t"),
    ((1.2, 1.8), "p"),
    ((9, 2.5, 1, 2.5, 1, 2.5), "h"),
    ((2.5, 2.5), "t1"),
)
MARKERS_PER_CURVE = 7
CURVE_WIDTH, RECOMMENDED_WIDTH, OVER_WIDTH = 2.2, 3.4, 1.2
CAPACITY_DASH = (10, 4)


def series_pen(color: str, index: int, width: float) -> QPen:
    """The pen of series ``index``: its colour and its own dash pattern."""
    dash = SERIES_STYLES[index % len(SERIES_STYLES)][0]
    pen: QPen = pg.mkPen(color, width=width)
    if dash is not None:
        pen.setDashPattern(list(dash))
    return pen


class WhatIfChart(ChartBase):
    """Memory per GPU versus context length or batch size."""

    def __init__(self, parent: QWidget | None = None, *, dark: bool | None = None) -> None:
        self.x_axis = ScaleAxis("bottom")
        self.y_axis = ScaleAxis("left")
        super().__init__(
            parent, legend_columns=3, axis_items={"bottom": self.x_axis, "left": self.y_axis}, dark=dark
        )
        pi = self.plot_item
        self._set_axis_title("left", "GiB per GPU")
        self._set_axis_title("bottom", AXIS_LABEL_DEFAULT)
        pi.showGrid(x=True, y=True, alpha=0.15)
        empty = np.zeros(0)
        #: A fixed pool per series, unused ones hidden: the curve while it fits, its continuation
        #: past the capacity (thin) and the capacity line (thin, long dashes).
        self.curves: list[pg.PlotCurveItem] = []
        self.over_curves: list[pg.PlotCurveItem] = []
        self.capacity_lines: list[pg.InfiniteLine] = []
        #: Legend keys (never added to the plot): line style and symbol of each series.
        self.legend_keys: list[pg.PlotDataItem] = []
        for _ in range(MAX_SERIES):
            curve = pg.PlotCurveItem(x=empty, y=empty)
            over = pg.PlotCurveItem(x=empty, y=empty)
            over.setZValue(-1)
            line = pg.InfiniteLine(angle=0, movable=False)
            line.setZValue(-2)
            pi.addItem(over)
            pi.addItem(curve)
            pi.addItem(line, ignoreBounds=True)
            self.curves.append(curve)
            self.over_curves.append(over)
            self.capacity_lines.append(line)
            self.legend_keys.append(pg.PlotDataItem(x=[0, 1], y=[0, 0]))
        #: The series symbols along every curve and at the left end of each capacity line.
        self.markers = pg.ScatterPlotItem(x=empty, y=empty, size=9)
        self.markers.setZValue(MAX_SERIES + 2)
        pi.addItem(self.markers)
        self.limits = pg.ScatterPlotItem(x=empty, y=empty, symbol="d", size=12)
        self.limits.setZValue(MAX_SERIES + 3)
        pi.addItem(self.limits)
        self.current_line = pg.InfiniteLine(
            angle=90, movable=False, label="", labelOpts={"position": 0.96, "anchors": [(0, 0), (0, 0)]}
        )
        pi.addItem(self.current_line, ignoreBounds=True)
        # Legend keys only (never added to the plot).
        self._capacity_key = pg.PlotCurveItem()
        self._limit_key = pg.ScatterPlotItem(symbol="d", size=11)
        self._legend_labels: list[str] = []
        self._shown: list[WhatIfCurve] = []
        self._est: Estimate | None = None
        self._selected: str | None = None
        self._axis = "context"
        self._apply_colors(self.colors)
        self.set_curves(AXIS_LABEL_DEFAULT, [])

    # -- public API -----------------------------------------------------------------------
    def show_estimate(self, est: Estimate | None, selected: str | None = None) -> None:
        """Curves for the selected setup's GPU, the recommended one and the best GPU types
        (``est=None``: the empty state), against the current axis (:meth:`set_axis`)."""
        self._est, self._selected = est, selected
        if est is None:
            self.x_axis.setTicks(None)
            self.set_curves(AXIS_LABEL_DEFAULT, [])
            return
        if self._axis == "weights":
            # One GPU compared, each weight type of its table at a position of the axis.
            curves, labels = weights_curves(est)
            self.x_axis.setTicks([list(enumerate(labels))] if labels else None)
            self.set_curves(axis_label(est, self._axis), curves, log_x=False)
            if curves:
                self.current_line.label.setFormat(f"chosen: {labels[curves[0].current_x or 0]}")
            return
        self.x_axis.setTicks(None)
        ids = whatif_gpu_ids(est, selected)
        self.set_curves(axis_label(est, self._axis), whatif_curves(est, ids, self._axis))

    def set_axis(self, axis: str) -> None:
        """``"context"``, ``"batch"`` or ``"weights"`` (one GPU compared: each weight type of the
        estimate's table); redraws the last estimate against it."""
        if axis not in AXES:
            raise ValueError(f"axis must be one of {AXES}, not {axis!r}")
        if axis != self._axis:
            self._axis = axis
            if self._est is not None:
                self.show_estimate(self._est, self._selected)

    def axis(self) -> str:
        """The quantity on the x axis: ``"context"`` or ``"batch"``."""
        return self._axis

    def set_curves(self, axis_label: str, curves: list[WhatIfCurve], log_x: bool | None = None) -> None:
        """Draw up to :data:`MAX_SERIES` curves against ``axis_label``.

        ``log_x=None`` picks a log axis when the x values span more than :data:`LOG_SPAN` times.
        Points that are not finite (or not positive on a log axis) are skipped.
        """
        self._set_axis_title("bottom", axis_label)
        usable = [c for c in curves if len(c.xs) and finite(c.capacity_gib)][:MAX_SERIES]
        all_x = [x for c in usable for x in c.xs if finite(x)]
        if log_x is None:
            log_x = bool(all_x) and min(all_x) > 0 and max(all_x) / min(all_x) > LOG_SPAN
        if log_x and all_x and min(all_x) <= 0:
            log_x = False
        self.x_axis.set_log(log_x)
        fx = math.log10 if log_x else float

        self._shown = usable
        limit_x, limit_y, limit_brushes = [], [], []
        marker_x, marker_y, marker_symbols, marker_brushes = [], [], [], []
        xs_all = [fx(x) for x in all_x if x > 0 or not log_x]
        x_left = min(xs_all) if xs_all else 0.0
        y_top = 0.0
        # GPUs with the same setup share one memory curve: the smallest card is drawn on top, so
        # where curves coincide the one still in view is the card that still fits.
        by_capacity = sorted(range(len(usable)), key=lambda i: -usable[i].capacity_gib)
        series = self.colors.series
        for i, (curve, over, line) in enumerate(zip(self.curves, self.over_curves, self.capacity_lines)):
            if i >= len(usable):
                for item in (curve, over):
                    item.setData(x=np.zeros(0), y=np.zeros(0))
                    item.hide()
                line.hide()
                continue
            c = usable[i]
            color = series[i % len(series)]
            symbol = SERIES_STYLES[i % len(SERIES_STYLES)][1]
            pts = [(fx(x), y) for x, y in zip(c.xs, c.ys_gib) if finite(x, y) and (x > 0 or not log_x)]
            fit_x, fit_y, over_x, over_y = _split_at(pts, c.capacity_gib)
            curve.setPen(series_pen(color, i, RECOMMENDED_WIDTH if c.recommended else CURVE_WIDTH))
            over.setPen(series_pen(color, i, OVER_WIDTH))
            curve.setData(x=fit_x, y=fit_y)
            over.setData(x=over_x, y=over_y)
            curve.setZValue(1 + by_capacity.index(i))
            curve.show()
            over.show()
            line.setValue(c.capacity_gib)
            line.show()
            y_top = max(y_top, c.capacity_gib)
            # Markers along the curve, staggered per series so coinciding curves show every symbol.
            step = max(1, len(pts) // MARKERS_PER_CURVE)
            for x, y in pts[(i * step) // max(1, len(usable)) % step :: step]:
                marker_x.append(x)
                marker_y.append(y)
                marker_symbols.append(symbol)
                marker_brushes.append(color)
            marker_x.append(x_left)
            marker_y.append(c.capacity_gib)
            marker_symbols.append(symbol)
            marker_brushes.append(color)
            if c.limit_x and c.xs and c.xs[0] <= c.limit_x <= c.xs[-1] and (c.limit_x > 0 or not log_x):
                limit_x.append(fx(c.limit_x))
                limit_y.append(c.capacity_gib)
                limit_brushes.append(pg.mkBrush(color))
        self.markers.setData(
            x=np.array(marker_x, dtype=float),
            y=np.array(marker_y, dtype=float),
            symbol=marker_symbols,
            brush=[pg.mkBrush(b) for b in marker_brushes],
        )
        if limit_x:
            self.limits.setData(
                x=np.array(limit_x, dtype=float), y=np.array(limit_y, dtype=float), brush=limit_brushes
            )
        else:
            self.limits.setData(x=np.zeros(0), y=np.zeros(0))
        self._update_legend(usable, bool(limit_x))

        current = usable[0].current_x if usable else None
        if current is not None and finite(current) and (current > 0 or not log_x):
            self.current_line.show()  # before the text: a hidden label ignores new text
            self.current_line.setValue(fx(current))
            self.current_line.label.setFormat(f"current: {current:,}")
        else:
            self.current_line.hide()

        if not usable:
            self._show_message(EMPTY_MESSAGE)
            return
        self._hide_message()
        if all(c.limit_x == 0 for c in usable):
            what = axis_label.split("(")[0].strip().lower()
            self._set_notice(f"None of these GPUs fits, even at the smallest {what}.", warning=True)
        else:
            self._set_notice("")
        lo, hi = min(xs_all), max(xs_all)
        pad = (hi - lo) * 0.02 or 0.5
        # Keep the capacity lines readable: curves that shoot far past the largest card leave the
        # top, but never so far that a curve starting above every card disappears.
        ys = [y for c in usable for y in c.ys_gib if finite(y)]
        y_max_curve = max(ys, default=y_top)
        y_lowest_start = min((c.ys_gib[0] for c in usable if c.ys_gib and finite(c.ys_gib[0])), default=0.0)
        y_hi = max(y_top * 1.15, min(y_max_curve, max(y_top * 1.8, y_lowest_start * 1.5)))
        self.view_box.setRange(xRange=(lo - pad, hi + pad), yRange=(0, max(y_hi * 1.03, 1e-3)), padding=0)

    def shown_curves(self) -> list[WhatIfCurve]:
        """The curves on show (at most :data:`MAX_SERIES`)."""
        return list(self._shown)

    def legend_labels(self) -> list[str]:
        """The legend's texts in order (one per curve, then the keys)."""
        return [label.text for _, label in self.legend.items]

    # -- helpers ---------------------------------------------------------------------------
    def _update_legend(self, curves: list[WhatIfCurve], with_limit: bool) -> None:
        """Legend entries follow the GPUs shown; rebuilt only when the names change."""
        labels = [f"{RECOMMENDED_MARK} {c.label} (recommended)" if c.recommended else c.label for c in curves]
        wanted = labels + ["Usable capacity"] + (["Largest that fits"] if with_limit else [])
        if wanted == self._legend_labels:
            return
        self.legend.clear()
        series = self.colors.series
        for i, (key, label, c) in enumerate(zip(self.legend_keys, labels, curves)):
            color = series[i % len(series)]
            key.setPen(series_pen(color, i, RECOMMENDED_WIDTH if c.recommended else CURVE_WIDTH))
            key.setSymbol(SERIES_STYLES[i % len(SERIES_STYLES)][1])
            key.setSymbolBrush(pg.mkBrush(color))
            key.setSymbolPen(pg.mkPen(self.colors.background, width=0.8))
            key.setSymbolSize(9)
            self.legend.addItem(key, label)
        self.legend.addItem(self._capacity_key, "Usable capacity")
        if with_limit:
            self.legend.addItem(self._limit_key, "Largest that fits")
        self._legend_labels = wanted
        self._fit_legend()

    def _apply_colors(self, colors: ChartColors) -> None:
        muted = colors.muted_text
        capacity_pen = pg.mkPen(muted, width=1.2)
        capacity_pen.setDashPattern(list(CAPACITY_DASH))
        self._capacity_key.setPen(capacity_pen)
        self._limit_key.setBrush(pg.mkBrush(muted))
        self._limit_key.setPen(pg.mkPen(None))
        for i, line in enumerate(self.capacity_lines):
            pen = pg.mkPen(colors.series[i % len(colors.series)], width=1.2)
            pen.setDashPattern(list(CAPACITY_DASH))
            line.setPen(pen)
        self.markers.setPen(pg.mkPen(colors.background, width=0.8))
        self.limits.setPen(pg.mkPen(colors.background, width=1))
        self.current_line.setPen(pg.mkPen(muted, width=1.5, style=DOT))
        fill = QColor(colors.background)
        fill.setAlpha(210)
        self.current_line.label.setColor(muted)
        self.current_line.label.fill = pg.mkBrush(fill)
        self.current_line.label.update()
        if self._shown or getattr(self, "_legend_labels", None):
            shown = self._shown
            self._legend_labels = []
            self.set_curves(self._axis_titles.get("bottom", AXIS_LABEL_DEFAULT), shown)


AXIS_LABEL_DEFAULT = "Context length (tokens)"


def _split_at(
    points: list[tuple[float, float]], capacity: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Split a curve where it first rises past ``capacity``: the part that fits (solid) and the rest (dotted).

    Both parts end at the crossing, interpolated on screen between the two points around it,
    so the solid line stops exactly on the capacity line.
    """
    first_over = next((i for i, (_, y) in enumerate(points) if y > capacity), len(points))
    fit, over = list(points[:first_over]), list(points[first_over:])
    if fit and over:
        (x0, y0), (x1, y1) = fit[-1], over[0]
        xc = x0 + (capacity - y0) * (x1 - x0) / (y1 - y0) if y1 != y0 else x1
        fit.append((xc, capacity))
        over.insert(0, (xc, capacity))

    def column(pts: list[tuple[float, float]], k: int) -> np.ndarray:
        return np.array([p[k] for p in pts], dtype=float)

    return column(fit, 0), column(fit, 1), column(over, 0), column(over, 1)


def _preview_widget(est: Estimate) -> WhatIfChart:
    chart = WhatIfChart()
    chart.show(est, est.decision.recommended_key if est.decision else None)
    return chart


if __name__ == "__main__":
    from gpuadvisor.views.charts._preview import preview

    preview(_preview_widget)
