"""Cost versus job time of every candidate that fits and has a price.

One point per candidate at its expected (hours, USD), with error bars from the low to the
high estimate in both directions. The cost/time Pareto frontier (the core's ``pareto`` flags)
is drawn in :data:`~.palette.PARETO_COLOR` and joined by a staircase: everything above and to
the right of it is dominated. The deadline and the total budget are dashed lines.

Axes switch to log10 when the values shown span more than :data:`LOG_SPAN` times; the data is
transformed here (pyqtgraph's log mode does not move error bars or infinite lines) and
:class:`~._base.ScaleAxis` labels the ticks in hours and dollars.
"""

from __future__ import annotations

import html
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QWidget

from ._base import LABEL_STYLE, ChartBase, ScaleAxis
from .labels import finite, fmt_hours, fmt_usd, short_gpu_name
from .palette import BACKGROUND_COLOR, BUDGET_COLOR, DEADLINE_COLOR, PARETO_COLOR, SELECTED_COLOR, qcolor

LOG_SPAN = 20.0
NOTHING_FITS = "Nothing fits on any GPU,\nso there is no time or cost to compare."
_LABEL_FILL = (255, 255, 255, 210)
NO_PRICES = "The GPUs that fit have no known price.\nAdd prices in the catalog to compare costs."


class CostTimeChart(ChartBase):
    """Job time (x) against cost (y); click a point to select that candidate."""

    candidateSelected = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        self.x_axis = ScaleAxis("bottom")
        self.y_axis = ScaleAxis("left")
        super().__init__(parent, legend_columns=3, axis_items={"bottom": self.x_axis, "left": self.y_axis})
        pi = self.plot_item
        pi.setLabel("bottom", "Job time (hours)", **LABEL_STYLE)
        pi.setLabel("left", "Cost (USD)", **LABEL_STYLE)
        pi.showGrid(x=True, y=True, alpha=0.15)

        empty = np.zeros(0)
        #: Low-to-high ranges: light grey for all points, blue again for the frontier.
        self.error_bars = pg.ErrorBarItem(x=empty, y=empty, left=empty, right=empty, top=empty, bottom=empty,
                                          beam=0, pen=pg.mkPen(qcolor("error_bar", alpha=110), width=1))
        self.pareto_error_bars = pg.ErrorBarItem(x=empty, y=empty, left=empty, right=empty, top=empty,
                                                 bottom=empty, beam=0,
                                                 pen=pg.mkPen(qcolor("pareto", alpha=140), width=1.2))
        self.frontier = pg.PlotCurveItem(x=empty, y=empty, pen=pg.mkPen(PARETO_COLOR, width=2))
        self.other_points = pg.ScatterPlotItem(x=empty, y=empty, size=8, symbol="o",
                                               brush=pg.mkBrush(qcolor("other", alpha=170)),
                                               pen=pg.mkPen("#7A7A7A", width=0.8),
                                               hoverable=True, tip=self._tip_for_spot)
        self.pareto_points = pg.ScatterPlotItem(x=empty, y=empty, size=11, symbol="o",
                                                brush=pg.mkBrush(PARETO_COLOR),
                                                pen=pg.mkPen(BACKGROUND_COLOR, width=1.2),
                                                hoverable=True, tip=self._tip_for_spot)
        self.selected_ring = pg.ScatterPlotItem(x=empty, y=empty, size=22, symbol="o", brush=pg.mkBrush(None),
                                                pen=pg.mkPen(SELECTED_COLOR, width=2.5))
        # Labels sit right of the deadline near the top, and above the budget near the right edge.
        dash = Qt.PenStyle.DashLine
        self.deadline_line = pg.InfiniteLine(
            angle=90, movable=False, pen=pg.mkPen(DEADLINE_COLOR, width=2, style=dash), label="",
            labelOpts={"position": 0.95, "color": DEADLINE_COLOR, "fill": _LABEL_FILL,
                       "anchors": [(0, 0), (0, 0)]})
        self.budget_line = pg.InfiniteLine(
            angle=0, movable=False, pen=pg.mkPen(BUDGET_COLOR, width=2, style=dash), label="",
            labelOpts={"position": 0.97, "color": BUDGET_COLOR, "fill": _LABEL_FILL,
                       "anchors": [(1, 1), (1, 1)]})
        for item in (self.error_bars, self.pareto_error_bars, self.frontier, self.other_points,
                     self.pareto_points, self.selected_ring):
            pi.addItem(item)
        for line in (self.deadline_line, self.budget_line):
            pi.addItem(line, ignoreBounds=True)
            line.hide()
        self.legend.addItem(self.pareto_points, "Pareto frontier")
        self.legend.addItem(self.other_points, "Other setups")
        self._ring_sample = pg.ScatterPlotItem(size=13, symbol="o", brush=pg.mkBrush(None),
                                               pen=pg.mkPen(SELECTED_COLOR, width=2))  # legend key only
        self.legend.addItem(self._ring_sample, "Selected")
        self.other_points.sigClicked.connect(self._on_points_clicked)
        self.pareto_points.sigClicked.connect(self._on_points_clicked)

        self._candidates: dict[str, object] = {}
        self._positions: dict[str, tuple[float, float]] = {}
        self._tooltips: dict[str, str] = {}
        self._selected: str | None = None
        self.set_estimate(None)

    # -- public API -----------------------------------------------------------------------
    def set_estimate(self, est) -> None:
        """Show the estimate's fitting, priced candidates, its deadline and its total budget."""
        shown = [c for c in (est.candidates if est is not None else ()) if _plottable(c)]
        self._candidates = {c.key: c for c in shown}
        self._tooltips = {}  # filled on demand: building ~500 rich-text tooltips per keystroke is costly
        budget = est.scenario.budget if est is not None else None
        deadline = budget.deadline_hours if budget is not None and finite(budget.deadline_hours) else None
        max_usd = budget.max_total_usd if budget is not None and finite(budget.max_total_usd) else None

        hours = [(c.cost.job_hours.low, c.cost.job_hours.expected, c.cost.job_hours.high) for c in shown]
        usd = [(c.cost.cost_usd.low, c.cost.cost_usd.expected, c.cost.cost_usd.high) for c in shown]
        x_extent = [v for t in hours for v in t] + ([deadline] if deadline else [])
        y_extent = [v for t in usd for v in t] + ([max_usd] if max_usd else [])
        log_x, log_y = _wants_log(x_extent), _wants_log(y_extent)
        self.x_axis.set_log(log_x)
        self.y_axis.set_log(log_y)
        fx = _transform(log_x)
        fy = _transform(log_y)

        xs = np.array([fx(h[1]) for h in hours], dtype=float)
        ys = np.array([fy(u[1]) for u in usd], dtype=float)
        self._positions = {c.key: (float(x), float(y)) for c, x, y in zip(shown, xs, ys)}
        left = np.array([max(0.0, x - fx(h[0])) for x, h in zip(xs, hours)], dtype=float)
        right = np.array([max(0.0, fx(h[2]) - x) for x, h in zip(xs, hours)], dtype=float)
        bottom = np.array([max(0.0, y - fy(u[0])) for y, u in zip(ys, usd)], dtype=float)
        top = np.array([max(0.0, fy(u[2]) - y) for y, u in zip(ys, usd)], dtype=float)
        pareto = np.array([c.pareto for c in shown], dtype=bool)
        self.error_bars.setData(x=xs, y=ys, left=left, right=right, bottom=bottom, top=top)
        self.pareto_error_bars.setData(x=xs[pareto], y=ys[pareto], left=left[pareto], right=right[pareto],
                                       bottom=bottom[pareto], top=top[pareto])
        keys = np.array([c.key for c in shown], dtype=object)
        self.other_points.setData(x=xs[~pareto], y=ys[~pareto], data=keys[~pareto])
        self.pareto_points.setData(x=xs[pareto], y=ys[pareto], data=keys[pareto])
        order = np.argsort(xs[pareto], kind="stable")
        self.frontier.setData(*_staircase(xs[pareto][order], ys[pareto][order]))

        deadline_text = f"deadline {fmt_hours(deadline)}" if deadline else ""
        self._set_line(self.deadline_line, deadline, fx, deadline_text)
        self._set_line(self.budget_line, max_usd, fy, f"budget {fmt_usd(max_usd)}" if max_usd else "")
        self.set_selected(self._selected)

        if not shown:
            self.deadline_line.hide()
            self.budget_line.hide()
            fitting = est is not None and any(c.fits for c in est.candidates)
            self._show_message(NO_PRICES if fitting else NOTHING_FITS)
            return
        self._hide_message()
        self.view_box.setRange(xRange=_padded([fx(v) for v in x_extent], log_x),
                               yRange=_padded([fy(v) for v in y_extent], log_y), padding=0)

    def set_selected(self, key: str | None) -> None:
        """Ring the candidate ``key`` (``None`` or an unknown key: no ring). Emits nothing."""
        self._selected = key
        pos = self._positions.get(key) if key is not None else None
        if pos is None:
            self.selected_ring.setData(x=np.zeros(0), y=np.zeros(0))
        else:
            self.selected_ring.setData(x=np.array([pos[0]]), y=np.array([pos[1]]))

    def selected_key(self) -> str | None:
        return self._selected if self._selected in self._positions else None

    def keys(self) -> list[str]:
        """Keys of the candidates on show."""
        return list(self._candidates)

    def point_position(self, key: str) -> tuple[float, float]:
        """Where ``key`` is drawn, in view coordinates (log10 on a log axis)."""
        return self._positions[key]

    def tooltip_for_key(self, key: str) -> str:
        return self._tooltip_of(key)

    # -- helpers and slots ---------------------------------------------------------------
    def _tooltip_of(self, key: str) -> str:
        text = self._tooltips.get(key)
        if text is None:
            text = self._tooltips[key] = _tooltip(self._candidates[key])
        return text

    def _set_line(self, line: pg.InfiniteLine, value: float | None, f, text: str) -> None:
        if value is None or (value <= 0 and f is math.log10):
            line.hide()
            return
        line.show()  # before the text: a hidden label ignores new text
        line.setValue(f(value))
        line.label.setFormat(text)

    def _tip_for_spot(self, x: float, y: float, data) -> str:
        return self._tooltip_of(data) if data in self._candidates else ""

    def _on_points_clicked(self, _item, points, _event) -> None:
        if len(points) == 0:
            return
        key = points[0].data()
        if key in self._candidates:
            self.set_selected(key)
            self.candidateSelected.emit(key)


def _plottable(c) -> bool:  # noqa: D103 - see CostTimeChart.set_estimate
    if not c.fits or c.cost is None or c.cost.cost_usd is None:
        return False
    h, u = c.cost.job_hours, c.cost.cost_usd
    return finite(h.low, h.expected, h.high, u.low, u.expected, u.high)


def _wants_log(values: list[float]) -> bool:
    positive = [v for v in values if v > 0]
    if not positive or len(positive) != len(values):
        return False
    return max(positive) / min(positive) > LOG_SPAN


def _transform(log: bool):
    return math.log10 if log else float


def _padded(values: list[float], log: bool) -> tuple[float, float]:
    lo, hi = min(values), max(values)
    span = hi - lo
    if span <= 0:
        span = 0.5 if log else max(abs(hi) * 0.2, 1.0)
        lo, hi = lo - span / 2, hi + span / 2
    lo, hi = lo - 0.06 * span, hi + 0.08 * span
    if not log:
        lo = max(lo, 0.0) if min(values) >= 0 else lo  # no negative hours or dollars
    return lo, hi


def _staircase(xs: np.ndarray, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The frontier as steps: right at the previous cost, then down to the next point."""
    if len(xs) < 2:
        return xs.astype(float), ys.astype(float)
    sx, sy = [float(xs[0])], [float(ys[0])]
    for x, y in zip(xs[1:], ys[1:]):
        sx += [float(x), float(x)]
        sy += [sy[-1], float(y)]
    return np.array(sx), np.array(sy)


def _tooltip(c) -> str:
    h, u = c.cost.job_hours, c.cost.cost_usd
    name = short_gpu_name(c.gpu.name, c.gpu_count)
    rows = [("Parallelism", c.parallelism if c.gpu_count > 1 else "single GPU"),
            ("Job time", f"{fmt_hours(h.expected)} ({fmt_hours(h.low)} – {fmt_hours(h.high)})"),
            ("Cost", f"{fmt_usd(u.expected)} ({fmt_usd(u.low)} – {fmt_usd(u.high)})")]
    if finite(c.cost.usd_per_million_tokens):
        rows.append(("Per 1M tokens", fmt_usd(c.cost.usd_per_million_tokens)))
    if c.cost.meets_deadline is False:
        rows.append(("Deadline", "missed"))
    if c.cost.within_budget is False:
        rows.append(("Budget", "over"))
    if c.pareto:
        rows.append(("", "on the Pareto frontier"))
    body = "".join(f"<tr><td>{html.escape(k)}</td><td>&nbsp;&nbsp;{html.escape(v)}</td></tr>"
                   for k, v in rows)
    return f"<b>{html.escape(name)}</b><table cellspacing='0'>{body}</table>"


def _preview_widget(est):
    chart = CostTimeChart()
    chart.set_estimate(est)
    shown = set(chart.keys())
    ranking = [c for c in est.ranking if c.key in shown]
    if ranking:
        chart.set_selected(ranking[0].key)
    chart.candidateSelected.connect(lambda key: print("selected", key))
    return chart


if __name__ == "__main__":
    from gpuadvisor.gui.charts._preview import preview

    preview(_preview_widget)
