"""What-if: memory per GPU as the context length (or batch size) grows, for a few GPUs.

One solid curve per GPU and a dashed line at its usable capacity in the same colour; a
diamond marks the largest value that still fits and a dotted vertical line the scenario's
current value. The curves come from :func:`~.whatif_data.whatif_curves` (the core's
``memory_curve``); this widget only draws them. At most :data:`MAX_SERIES` GPUs are shown.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from ._base import LABEL_STYLE, ChartBase, ScaleAxis
from .labels import finite
from .palette import MUTED_TEXT_COLOR, NO_FIT_COLOR, SERIES_COLORS
from .whatif_data import WhatIfCurve

MAX_SERIES = len(SERIES_COLORS)
LOG_SPAN = 100.0  # a log x axis above this max/min ratio (contexts: yes; a batch of 1 to 64: no)
DASH, DOT = Qt.PenStyle.DashLine, Qt.PenStyle.DotLine
EMPTY_MESSAGE = "Pick GPUs to see how memory grows."


class WhatIfChart(ChartBase):
    """Memory per GPU versus context length or batch size."""

    def __init__(self, parent: QWidget | None = None) -> None:
        self.x_axis = ScaleAxis("bottom")
        self.y_axis = ScaleAxis("left")
        super().__init__(parent, legend_columns=3, axis_items={"bottom": self.x_axis, "left": self.y_axis})
        pi = self.plot_item
        pi.setLabel("left", "GiB per GPU", **LABEL_STYLE)
        pi.setLabel("bottom", "Context length (tokens)", **LABEL_STYLE)
        pi.showGrid(x=True, y=True, alpha=0.15)
        empty = np.zeros(0)
        #: A fixed pool per series, unused ones hidden: the curve while it fits (solid), its
        #: continuation past the capacity (thin, dotted) and the capacity line (dashed).
        self.curves: list[pg.PlotCurveItem] = []
        self.over_curves: list[pg.PlotCurveItem] = []
        self.capacity_lines: list[pg.InfiniteLine] = []
        for color in SERIES_COLORS:
            curve = pg.PlotCurveItem(x=empty, y=empty, pen=pg.mkPen(color, width=2.5))
            over = pg.PlotCurveItem(x=empty, y=empty, pen=pg.mkPen(color, width=1.3, style=DOT))
            over.setZValue(-1)
            line = pg.InfiniteLine(angle=0, movable=False, pen=pg.mkPen(color, width=1.5, style=DASH))
            line.setZValue(-2)
            pi.addItem(over)
            pi.addItem(curve)
            pi.addItem(line, ignoreBounds=True)
            self.curves.append(curve)
            self.over_curves.append(over)
            self.capacity_lines.append(line)
        self.limits = pg.ScatterPlotItem(x=empty, y=empty, symbol="d", size=12, pen=pg.mkPen("w", width=1))
        pi.addItem(self.limits)
        self.current_line = pg.InfiniteLine(angle=90, movable=False,
                                            pen=pg.mkPen(MUTED_TEXT_COLOR, width=1.5, style=DOT),
                                            label="", labelOpts={"position": 0.96, "color": MUTED_TEXT_COLOR,
                                                                 "fill": (255, 255, 255, 210),
                                                                 "anchors": [(0, 0), (0, 0)]})
        pi.addItem(self.current_line, ignoreBounds=True)
        # Legend keys only (never added to the plot).
        self._capacity_key = pg.PlotCurveItem(pen=pg.mkPen(MUTED_TEXT_COLOR, width=1.5, style=DASH))
        self._limit_key = pg.ScatterPlotItem(symbol="d", size=11, brush=MUTED_TEXT_COLOR, pen=None)
        self._legend_labels: list[str] = []
        self._shown: list[WhatIfCurve] = []
        self.set_curves(AXIS_LABEL_DEFAULT, [])

    # -- public API -----------------------------------------------------------------------
    def set_curves(self, axis_label: str, curves: list[WhatIfCurve], log_x: bool | None = None) -> None:
        """Draw up to :data:`MAX_SERIES` curves against ``axis_label``.

        ``log_x=None`` picks a log axis when the x values span more than :data:`LOG_SPAN` times.
        Points that are not finite (or not positive on a log axis) are skipped.
        """
        self.plot_item.setLabel("bottom", axis_label, **LABEL_STYLE)
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
        y_top = 0.0
        # GPUs with the same setup share one memory curve: the smallest card is drawn on top, so
        # where curves coincide the one still in view is the card that still fits.
        by_capacity = sorted(range(len(usable)), key=lambda i: -usable[i].capacity_gib)
        for i, (curve, over, line) in enumerate(zip(self.curves, self.over_curves, self.capacity_lines)):
            if i >= len(usable):
                for item in (curve, over):
                    item.setData(x=np.zeros(0), y=np.zeros(0))
                    item.hide()
                line.hide()
                continue
            c = usable[i]
            pts = [(fx(x), y) for x, y in zip(c.xs, c.ys_gib) if finite(x, y) and (x > 0 or not log_x)]
            fit_x, fit_y, over_x, over_y = _split_at(pts, c.capacity_gib)
            curve.setData(x=fit_x, y=fit_y)
            over.setData(x=over_x, y=over_y)
            curve.setZValue(1 + by_capacity.index(i))
            curve.show()
            over.show()
            line.setValue(c.capacity_gib)
            line.show()
            y_top = max(y_top, c.capacity_gib)
            if c.limit_x and c.xs and c.xs[0] <= c.limit_x <= c.xs[-1] and (c.limit_x > 0 or not log_x):
                limit_x.append(fx(c.limit_x))
                limit_y.append(c.capacity_gib)
                limit_brushes.append(pg.mkBrush(SERIES_COLORS[i]))
        if limit_x:
            self.limits.setData(x=np.array(limit_x, dtype=float), y=np.array(limit_y, dtype=float),
                                brush=limit_brushes)
        else:
            self.limits.setData(x=np.zeros(0), y=np.zeros(0))
        self._update_legend([c.label for c in usable], bool(limit_x))

        current = usable[0].current_x if usable else None
        if current and finite(current) and (current > 0 or not log_x):
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
            self._set_notice(f"None of these GPUs fits, even at the smallest {what}.", NO_FIT_COLOR)
        else:
            self._set_notice("")
        xs = [fx(x) for x in all_x if x > 0 or not log_x]
        lo, hi = min(xs), max(xs)
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

    # -- helpers ---------------------------------------------------------------------------
    def _update_legend(self, labels: list[str], with_limit: bool) -> None:
        """Legend entries follow the GPUs shown; rebuilt only when the names change."""
        wanted = labels + ["Usable capacity (dashed)"] + (["Largest that fits"] if with_limit else [])
        if wanted == self._legend_labels:
            return
        self.legend.clear()
        for curve, label in zip(self.curves, labels):
            self.legend.addItem(curve, label)
        self.legend.addItem(self._capacity_key, "Usable capacity (dashed)")
        if with_limit:
            self.legend.addItem(self._limit_key, "Largest that fits")
        self._legend_labels = wanted
        self._fit_legend()


AXIS_LABEL_DEFAULT = "Context length (tokens)"


def _split_at(points: list[tuple[float, float]], capacity: float):
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


def _preview_widget(est):
    from .whatif_data import AXIS_LABELS, whatif_curves

    ids = [g for g in ("rtx-4090", "a100-40gb", "h100-sxm", "h200", "mi300x") if g in est.best_per_gpu()]
    chart = WhatIfChart()
    chart.set_curves(AXIS_LABELS["context"], whatif_curves(est, ids, "context"))
    return chart


if __name__ == "__main__":
    from gpuadvisor.gui.charts._preview import preview

    preview(_preview_widget)
