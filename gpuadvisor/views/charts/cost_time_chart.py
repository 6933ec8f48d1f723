"""Cost versus job time of every candidate that fits and has a price.

One point per candidate at its expected (hours, USD), with error bars from the low to the
high estimate in both directions. The cost/time Pareto frontier (the core's ``pareto`` flags)
is drawn in the Pareto colour and joined by a staircase: everything above and to the right of
it is dominated. Each frontier point is labelled "GPU × count"; the recommended setup
(``Estimate.decision``) is a star with its own label; the selected one is ringed. The deadline
and the total budget are dashed, labelled lines.

Labels are placed greedily, the star's first, then the frontier's two ends (the fastest and the
cheapest setup), then the other frontier points: each takes the first place around its point
(right, left, above, below, the diagonals) that overlaps no label already placed, no leader line,
no point of the chart and no edge of the plot; failing that, a place further out on rings around
the point, joined to it by a leader line that crosses no other label and no other leader line, of
those the one whose line passes over the fewest other points, then the nearest; a label with no
such place is left out (its point's tooltip names it). They are placed again when the plot is
resized.

Axes switch to log10 when the values shown span more than :data:`LOG_SPAN` times; the data is
transformed here (pyqtgraph's log mode does not move error bars or infinite lines) and
:class:`~._base.ScaleAxis` labels the ticks in hours and dollars.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFontMetrics
from PySide6.QtWidgets import QWidget

from ...core.estimation.cost import CostEstimate
from ...core.estimation.performance import Range
from ...core.estimation.results import Candidate, Estimate
from ._base import ChartBase, ScaleAxis, tick_font, weak_callback
from .labels import finite, fmt_hours, fmt_usd, short_gpu_name
from .palette import ChartColors

LOG_SPAN = 20.0
NOTHING_FITS = "Nothing fits on any GPU,\nso there is no time or cost to compare."
NO_PRICES = "The GPUs that fit have no known price.\nAdd prices in the catalog to compare costs."
RECOMMENDED_MARK = "\u2605"
LABEL_GAP_PX = 7  # between a point and its label
LABEL_MARGIN_PX = 1  # around a label's text, inside its background
MAX_POINT_LABELS = 12  # the recommendation, the frontier's ends and the frontier points that fit
#: Distances (px) of the places further out, joined to the point by a leader line, and how many
#: directions are tried on each ring.
LEADER_RINGS_PX = (22.0, 36.0, 54.0, 78.0, 110.0)
#: The star's and the frontier ends' labels look further out before they give up.
FAR_RINGS_PX = (150.0, 200.0, 260.0, 340.0)
LEADER_DIRECTIONS = 16
#: Half the size (px) a point takes as an obstacle: its marker and a pixel of air.
POINT_RADIUS_PX = 6.5
STAR_RADIUS_PX = 12.5
#: The grid (px) the obstacles are bucketed in, so a place is checked against its neighbours only.
GRID_PX = 48.0
#: Where a label may go around its point, in order of preference: (dx, dy) direction and anchor.
_PLACES = (
    ((1, 0), (0.0, 0.5)),
    ((-1, 0), (1.0, 0.5)),
    ((0, -1), (0.5, 1.0)),
    ((0, 1), (0.5, 0.0)),
    ((1, -1), (0.0, 1.0)),
    ((1, 1), (0.0, 0.0)),
    ((-1, -1), (1.0, 1.0)),
    ((-1, 1), (1.0, 0.0)),
)


def point_label(c: Candidate) -> str:
    """A point's label: the GPU's short name and the count, e.g. ``"H100 SXM ×4"``."""
    return f"{short_gpu_name(c.gpu.name)} ×{c.gpu_count}"


class CostTimeChart(ChartBase):
    """Job time (x) against cost (y); click a point to select that candidate."""

    #: The candidate key of a clicked point.
    candidateSelected = Signal(str)

    def __init__(self, parent: QWidget | None = None, *, dark: bool | None = None) -> None:
        self.x_axis = ScaleAxis("bottom")
        self.y_axis = ScaleAxis("left")
        super().__init__(
            parent, legend_columns=4, axis_items={"bottom": self.x_axis, "left": self.y_axis}, dark=dark
        )
        pi = self.plot_item
        self._set_axis_title("bottom", "Job time (hours)")
        self._set_axis_title("left", "Cost (USD)")
        pi.showGrid(x=True, y=True, alpha=0.15)

        empty = np.zeros(0)
        #: Low-to-high ranges: light grey for all points, the Pareto colour again for the frontier.
        self.error_bars = pg.ErrorBarItem(
            x=empty, y=empty, left=empty, right=empty, top=empty, bottom=empty, beam=0
        )
        self.pareto_error_bars = pg.ErrorBarItem(
            x=empty, y=empty, left=empty, right=empty, top=empty, bottom=empty, beam=0
        )
        self.frontier = pg.PlotCurveItem(x=empty, y=empty)
        tip = weak_callback(self._tip_for_spot)  # never a strong reference back to the chart
        self.other_points = pg.ScatterPlotItem(x=empty, y=empty, size=8, symbol="o", hoverable=True, tip=tip)
        self.pareto_points = pg.ScatterPlotItem(
            x=empty, y=empty, size=11, symbol="o", hoverable=True, tip=tip
        )
        #: The recommended setup: a star over its point.
        self.recommended_point = pg.ScatterPlotItem(
            x=empty, y=empty, size=21, symbol="star", hoverable=True, tip=tip
        )
        self.selected_ring = pg.ScatterPlotItem(x=empty, y=empty, size=24, symbol="o", brush=pg.mkBrush(None))
        dash = Qt.PenStyle.DashLine
        # Labels sit right of the deadline near the top, and above the budget near the right edge.
        self.deadline_line = pg.InfiniteLine(
            angle=90, movable=False, label="", labelOpts={"position": 0.95, "anchors": [(0, 0), (0, 0)]}
        )
        self.budget_line = pg.InfiniteLine(
            angle=0, movable=False, label="", labelOpts={"position": 0.97, "anchors": [(1, 1), (1, 1)]}
        )
        self._dash = dash
        for item in (
            self.error_bars,
            self.pareto_error_bars,
            self.frontier,
            self.other_points,
            self.pareto_points,
            self.recommended_point,
            self.selected_ring,
        ):
            pi.addItem(item)
        self.recommended_point.setZValue(5)
        for line in (self.deadline_line, self.budget_line):
            pi.addItem(line, ignoreBounds=True)
            line.hide()
        #: Leader lines from points to labels placed away from them (pairs of points, in view coordinates).
        self.leaders = pg.PlotCurveItem(x=empty, y=empty, connect="pairs")
        self.leaders.setZValue(5.5)
        pi.addItem(self.leaders, ignoreBounds=True)
        #: Point labels, a fixed pool reused between updates (unused ones hidden).
        self.point_labels: list[pg.TextItem] = []
        for _ in range(MAX_POINT_LABELS):
            item = pg.TextItem("", anchor=(0, 0.5))
            item.setFont(tick_font())
            item.textItem.document().setDocumentMargin(LABEL_MARGIN_PX)  # the box placement assumes
            item.setZValue(6)
            item.hide()
            pi.addItem(item, ignoreBounds=True)
            self.point_labels.append(item)
        self._ring_sample = pg.ScatterPlotItem(size=13, symbol="o", brush=pg.mkBrush(None))  # legend key only
        self._star_sample = pg.ScatterPlotItem(size=15, symbol="star")  # legend key only
        self.legend.addItem(self.pareto_points, "Pareto frontier")
        self.legend.addItem(self.other_points, "Other setups")
        self.legend.addItem(self._star_sample, "Recommended")
        self.legend.addItem(self._ring_sample, "Selected")
        self.other_points.sigClicked.connect(self._on_points_clicked)
        self.pareto_points.sigClicked.connect(self._on_points_clicked)
        self.recommended_point.sigClicked.connect(self._on_points_clicked)
        self.view_box.sigResized.connect(self._place_labels)
        self._apply_colors(self.colors)

        self._candidates: dict[str, Candidate] = {}
        self._positions: dict[str, tuple[float, float]] = {}
        self._tooltips: dict[str, str] = {}
        self._selected: str | None = None
        self._recommended: str | None = None
        self._labelled: list[tuple[str, str]] = []  # (key, text), placement order
        self._label_rects: dict[str, QRectF] = {}
        self._point_rects: dict[str, QRectF] = {}
        self._leaders: dict[str, tuple[tuple[float, float], tuple[float, float]]] = {}
        self._placed = False  # whether the labels were placed at the present layout
        self.set_estimate(None)

    # -- public API -----------------------------------------------------------------------
    def show_estimate(self, est: Estimate | None, selected: str | None = None) -> None:
        """Every fitting, priced setup of ``est``; the frontier labelled, the recommendation starred,
        ``selected`` ringed, the deadline and budget drawn (``est=None``: the empty state)."""
        self._selected = selected
        self.set_estimate(est)

    def set_estimate(self, est: Estimate | None) -> None:
        """Show the estimate's fitting, priced candidates, its deadline and its total budget."""
        shown = [c for c in (est.candidates if est is not None else ()) if _plottable(c)]
        self._candidates = {c.key: c for c in shown}
        self._tooltips = {}  # filled on demand: building ~500 rich-text tooltips per keystroke is costly
        budget = est.scenario.budget if est is not None else None
        deadline = budget.deadline_hours if budget is not None and finite(budget.deadline_hours) else None
        deadline_text = f"Deadline {fmt_hours(deadline)}" if deadline else ""
        if (
            deadline is None
            and budget is not None
            and est is not None
            and est.scenario.workload.serving is None
        ):
            # No deadline: the planning horizon, drawn where the setups reach it.
            horizon = budget.horizon_hours
            longest = max((_priced(c)[0].job_hours.expected for c in shown), default=0.0)
            if horizon is not None and horizon <= longest:
                deadline, deadline_text = horizon, f"Horizon {fmt_hours(horizon)} (no deadline)"
        max_usd = budget.max_total_usd if budget is not None and finite(budget.max_total_usd) else None
        decision = est.decision if est is not None else None
        recommended = decision.recommended_key if decision is not None else None
        self._recommended = recommended if recommended in self._candidates else None

        priced = [_priced(c) for c in shown]
        hours = [(cost.job_hours.low, cost.job_hours.expected, cost.job_hours.high) for cost, _ in priced]
        usd = [(u.low, u.expected, u.high) for _, u in priced]
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
        self.pareto_error_bars.setData(
            x=xs[pareto],
            y=ys[pareto],
            left=left[pareto],
            right=right[pareto],
            bottom=bottom[pareto],
            top=top[pareto],
        )
        keys = np.array([c.key for c in shown], dtype=object)
        self.other_points.setData(x=xs[~pareto], y=ys[~pareto], data=keys[~pareto])
        self.pareto_points.setData(x=xs[pareto], y=ys[pareto], data=keys[pareto])
        order = np.argsort(xs[pareto], kind="stable")
        self.frontier.setData(*_staircase(xs[pareto][order], ys[pareto][order]))
        if self._recommended is None:
            self.recommended_point.setData(x=np.zeros(0), y=np.zeros(0))
        else:
            rx, ry = self._positions[self._recommended]
            self.recommended_point.setData(
                x=np.array([rx]), y=np.array([ry]), data=np.array([self._recommended], dtype=object)
            )

        labelled = []
        if self._recommended is not None:
            c = self._candidates[self._recommended]
            labelled.append((c.key, f"{RECOMMENDED_MARK} {point_label(c)}"))
        frontier = sorted(
            (
                (self._positions[k][0], k, c)
                for k, c in self._candidates.items()
                if c.pareto and k != self._recommended
            ),
            key=lambda t: t[0],
        )
        # The frontier's ends first (the fastest and the cheapest setup), then the points between.
        ends = frontier[:1] + frontier[-1:] if len(frontier) > 1 else frontier
        middle = [f for f in frontier if f not in ends]
        labelled += [(k, point_label(c)) for _, k, c in ends + middle]
        self._labelled = labelled[:MAX_POINT_LABELS]
        self._label_rects = {}
        self._placed = False
        self._clear_leaders()
        self._set_label_texts()

        self._set_line(self.deadline_line, deadline, fx, deadline_text)
        self._set_line(self.budget_line, max_usd, fy, f"Budget {fmt_usd(max_usd)}" if max_usd else "")
        self.set_selected(self._selected)

        if not shown:
            self.deadline_line.hide()
            self.budget_line.hide()
            fitting = est is not None and any(c.fits for c in est.candidates)
            self._show_message(NO_PRICES if fitting else NOTHING_FITS)
            return
        self._hide_message()
        self.view_box.setRange(
            xRange=_padded([fx(v) for v in x_extent], log_x),
            yRange=_padded([fy(v) for v in y_extent], log_y),
            padding=0,
        )
        self._place_labels()

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

    def recommended_key(self) -> str | None:
        """The recommended setup's key when it is on show (starred), else ``None``."""
        return self._recommended

    def keys(self) -> list[str]:
        """Keys of the candidates on show."""
        return list(self._candidates)

    def labels(self) -> dict[str, str]:
        """The point labels on show: candidate key -> text (before the first layout: the ones meant
        to be shown, in their order)."""
        if not self._placed:
            return dict(self._labelled)
        return {key: text for key, text in self._labelled if key in self._label_rects}

    def label_rects(self) -> dict[str, QRectF]:
        """Where each point label was placed, in pixels of the plot area (0, 0 at its top left)."""
        return dict(self._label_rects)

    def point_rects(self) -> dict[str, QRectF]:
        """The square each plotted point takes, in pixels of the plot area (as the labels avoid it)."""
        return dict(self._point_rects)

    def leader_lines(self) -> dict[str, tuple[tuple[float, float], tuple[float, float]]]:
        """For labels placed away from their point: (point, label end) in pixels of the plot area."""
        return dict(self._leaders)

    def point_position(self, key: str) -> tuple[float, float]:
        """Where ``key`` is drawn, in view coordinates (log10 on a log axis)."""
        return self._positions[key]

    def tooltip_for_key(self, key: str) -> str:
        return self._tooltip_of(key)

    # -- labels --------------------------------------------------------------------------
    def _set_label_texts(self) -> None:
        """The labels' texts; they show once placed (:meth:`_place_labels`)."""
        for i, item in enumerate(self.point_labels):
            item.setZValue(7 if i == 0 and self._recommended is not None else 6)  # the recommendation on top
            if i < len(self._labelled):
                text = self._labelled[i][1]
                if item.toPlainText() != text:
                    item.setText(text)
            if item.isVisible():
                item.hide()

    def _place_labels(self, *_args: object) -> None:
        """Put each label where it overlaps no label, no point and no edge (see the module docstring)."""
        if not self._labelled or self._message.isVisible():
            self._clear_leaders()
            return
        view = self.view_box.viewRect()
        w, h = self.view_box.width(), self.view_box.height()
        if view.width() <= 0 or view.height() <= 0 or w <= 0 or h <= 0:
            return
        sx, sy = w / view.width(), h / view.height()

        def to_px(x: float, y: float) -> tuple[float, float]:
            return (x - view.left()) * sx, (view.bottom() - y) * sy  # y grows downwards on screen

        metrics = QFontMetrics(self.point_labels[0].textItem.font())
        bounds = QRectF(0, 0, w, h)
        grid = _Grid(GRID_PX)
        self._point_rects = {}
        for key, (x, y) in self._positions.items():
            px, py = to_px(x, y)
            r = STAR_RADIUS_PX if key == self._recommended else POINT_RADIUS_PX
            rect = QRectF(px - r, py - r, 2 * r, 2 * r)
            self._point_rects[key] = rect
            grid.add(rect)
        self._label_rects, self._leaders = {}, {}
        leaders: list[float] = []
        placed = _Placed(grid)
        first = (1 if self._recommended is not None else 0) + 2  # the star and the frontier's ends
        for n, ((key, text), item) in enumerate(zip(self._labelled, self.point_labels)):
            px, py = to_px(*self._positions[key])
            tw = metrics.horizontalAdvance(text) + 2 * LABEL_MARGIN_PX + 2
            th = metrics.height() + 2 * LABEL_MARGIN_PX
            # The star and the frontier's ends go as far as needed; the points between only where
            # they fit beside or near their point (the rest are on hover), so lines do not criss-cross.
            rings = LEADER_RINGS_PX + FAR_RINGS_PX if n < first else LEADER_RINGS_PX[:1]
            found = _free_place(px, py, tw, th, bounds, placed, rings)
            if found is None:
                item.hide()  # no free place: the point's tooltip names it
                continue
            rect, end = found
            placed.add_label(rect, None if end is None else ((px, py), end))
            self._label_rects[key] = rect
            if end is not None:
                self._leaders[key] = ((px, py), end)
                leaders += [px, py, end[0], end[1]]
            if tuple(item.anchor) != (0.0, 0.0):
                item.setAnchor((0.0, 0.0))
            item.setPos(view.left() + rect.left() / sx, view.bottom() - rect.top() / sy)
            item.show()
        self._placed = True
        xs = [view.left() + v / sx for v in leaders[0::2]]
        ys = [view.bottom() - v / sy for v in leaders[1::2]]
        self.leaders.setData(x=np.array(xs, dtype=float), y=np.array(ys, dtype=float), connect="pairs")

    def _clear_leaders(self) -> None:
        self._leaders = {}
        self.leaders.setData(x=np.zeros(0), y=np.zeros(0))

    def _after_layout(self) -> None:
        self._place_labels()

    def _apply_fonts(self) -> None:
        if not hasattr(self, "_label_rects"):
            return  # still being built
        for item in self.point_labels:
            item.setFont(tick_font())
        self._place_labels()

    # -- colours ---------------------------------------------------------------------------
    def _apply_colors(self, colors: ChartColors) -> None:
        other = QColor(colors.other)
        other.setAlpha(170)
        error = QColor(colors.error_bar)
        error.setAlpha(110)
        pareto_error = QColor(colors.pareto)
        pareto_error.setAlpha(140)
        self.error_bars.setData(pen=pg.mkPen(error, width=1))
        self.pareto_error_bars.setData(pen=pg.mkPen(pareto_error, width=1.2))
        self.frontier.setPen(pg.mkPen(colors.pareto, width=2))
        self.other_points.setBrush(pg.mkBrush(other))
        self.other_points.setPen(pg.mkPen(colors.other_edge, width=0.8))
        self.pareto_points.setBrush(pg.mkBrush(colors.pareto))
        self.pareto_points.setPen(pg.mkPen(colors.background, width=1.2))
        for star in (self.recommended_point, self._star_sample):
            star.setBrush(pg.mkBrush(colors.recommended))
            star.setPen(pg.mkPen(colors.text, width=1.2))
        for ring in (self.selected_ring, self._ring_sample):
            ring.setPen(pg.mkPen(colors.selected, width=2.5))
        fill = QColor(colors.background)
        fill.setAlpha(210)
        for line, color in ((self.deadline_line, colors.deadline), (self.budget_line, colors.budget)):
            line.setPen(pg.mkPen(color, width=2, style=self._dash))
            line.label.setColor(color)
            line.label.fill = pg.mkBrush(fill)
            line.label.update()
        leader = QColor(colors.text)
        leader.setAlpha(150)
        self.leaders.setPen(pg.mkPen(leader, width=1))
        for item in self.point_labels:
            item.setColor(colors.text)
            item.fill = self._label_fill()
            item.update()
        self._tooltips = {}
        self.legend.update()

    def _label_fill(self) -> QBrush:
        """A point label's background: the chart's, slightly see-through, so the label reads over the cloud."""
        fill = QColor(self.colors.background)
        fill.setAlpha(215)
        brush: QBrush = pg.mkBrush(fill)
        return brush

    # -- helpers and slots ---------------------------------------------------------------
    def _tooltip_of(self, key: str) -> str:
        text = self._tooltips.get(key)
        if text is None:
            text = self._tooltips[key] = _tooltip(self._candidates[key], key == self._recommended)
        return text

    def _set_line(
        self, line: pg.InfiniteLine, value: float | None, f: Callable[[float], float], text: str
    ) -> None:
        if value is None or (value <= 0 and f is math.log10):
            line.hide()
            return
        line.show()  # before the text: a hidden label ignores new text
        line.setValue(f(value))
        line.label.setFormat(text)

    def _tip_for_spot(self, x: float, y: float, data: object) -> str:
        return self._tooltip_of(data) if isinstance(data, str) and data in self._candidates else ""

    def _on_points_clicked(self, _item: Any, points: Any, _event: Any) -> None:  # pyqtgraph signal
        if len(points) == 0:
            return
        key = points[0].data()
        if key in self._candidates:
            self.set_selected(key)
            self.candidateSelected.emit(key)


class _Grid:
    """Rectangles bucketed on a square grid: which of them a rectangle may touch is a few lookups."""

    def __init__(self, cell: float) -> None:
        self.cell = cell
        self.cells: dict[tuple[int, int], list[QRectF]] = {}

    def _keys(self, r: QRectF) -> Iterator[tuple[int, int]]:
        c = self.cell
        for gx in range(math.floor(r.left() / c), math.floor(r.right() / c) + 1):
            for gy in range(math.floor(r.top() / c), math.floor(r.bottom() / c) + 1):
                yield gx, gy

    def add(self, r: QRectF) -> None:
        for k in self._keys(r):
            self.cells.setdefault(k, []).append(r)

    def hits(self, r: QRectF) -> bool:
        return any(r.intersects(o) for k in self._keys(r) for o in self.cells.get(k, ()))


class _Placed:
    """What a new label must keep clear of: every point and label (``grid``) for its box; the
    labels and leader lines placed so far for its leader line, which passes over as few points as
    it can."""

    def __init__(self, grid: _Grid) -> None:
        self.grid = grid
        self.labels: list[QRectF] = []
        self.lines: list[tuple[tuple[float, float], tuple[float, float]]] = []

    def add_label(self, rect: QRectF, line: tuple[tuple[float, float], tuple[float, float]] | None) -> None:
        self.grid.add(rect)
        self.labels.append(rect)
        if line is not None:
            self.lines.append(line)

    def box_free(self, rect: QRectF) -> bool:
        """No point, label or leader line under ``rect``."""
        return not self.grid.hits(rect) and not any(_segment_meets_rect(a, b, rect) for a, b in self.lines)

    def line_free(self, a: tuple[float, float], b: tuple[float, float]) -> bool:
        """The leader line a-b crosses no label and no other leader line."""
        return not any(_segment_meets_rect(a, b, r) for r in self.labels) and not any(
            _segments_cross(a, b, c, d) for c, d in self.lines
        )

    def points_crossed(self, a: tuple[float, float], b: tuple[float, float], limit: int) -> int:
        """How many points the leader line a-b passes over, counted up to ``limit`` (a point under
        its own marker, which any line from there starts in, does not count; labels in the grid
        were ruled out by :meth:`line_free`). Only the grid cells along the line are looked at."""
        cell = self.grid.cell
        length = math.hypot(b[0] - a[0], b[1] - a[1])
        steps = max(1, math.ceil(4 * length / cell))
        keys = dict.fromkeys(
            (
                math.floor((a[0] + (b[0] - a[0]) * i / steps) / cell),
                math.floor((a[1] + (b[1] - a[1]) * i / steps) / cell),
            )
            for i in range(steps + 1)
        )
        start, seen, count = QPointF(*a), set(), 0
        for k in keys:
            for r in self.grid.cells.get(k, ()):
                if id(r) in seen:
                    continue
                seen.add(id(r))
                if not r.contains(start) and _segment_meets_rect(a, b, r):
                    count += 1
                    if count >= limit:
                        return count
        return count


def _segment_meets_rect(a: tuple[float, float], b: tuple[float, float], rect: QRectF) -> bool:
    """Whether the segment a-b passes through the inside of ``rect`` (Liang-Barsky clipping; a
    segment that only touches the edge, as a leader line ends on its own label, does not)."""
    inner = rect.adjusted(0.5, 0.5, -0.5, -0.5)
    dx, dy = b[0] - a[0], b[1] - a[1]
    t0, t1 = 0.0, 1.0
    for p, q in (
        (-dx, a[0] - inner.left()),
        (dx, inner.right() - a[0]),
        (-dy, a[1] - inner.top()),
        (dy, inner.bottom() - a[1]),
    ):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


def _segments_cross(
    a: tuple[float, float], b: tuple[float, float], c: tuple[float, float], d: tuple[float, float]
) -> bool:
    """Whether the segments a-b and c-d cross (touching at an end does not count)."""

    def side(p: tuple[float, float], q: tuple[float, float], r: tuple[float, float]) -> float:
        return (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])

    d1, d2, d3, d4 = side(c, d, a), side(c, d, b), side(a, b, c), side(a, b, d)
    return d1 * d2 < 0 and d3 * d4 < 0


def _free_place(
    px: float,
    py: float,
    tw: float,
    th: float,
    bounds: QRectF,
    placed: _Placed,
    rings: tuple[float, ...] = LEADER_RINGS_PX,
) -> tuple[QRectF, tuple[float, float] | None] | None:
    """A place for a ``tw`` x ``th`` label of the point (px, py) inside ``bounds`` and clear of what
    is ``placed``: next to the point (no leader line) where one is free; else on the rings further
    out, with the end of its leader line (the label's nearest point to the point) and a line that
    crosses no label or line, of those the one over the fewest other points, then the nearest;
    None if none."""
    for (dx, dy), anchor in _PLACES:
        rect = QRectF(
            px + dx * LABEL_GAP_PX - anchor[0] * tw, py + dy * LABEL_GAP_PX - anchor[1] * th, tw, th
        )
        if bounds.contains(rect) and placed.box_free(rect):
            return rect, None
    best: tuple[int, QRectF, tuple[float, float]] | None = None
    for ring in rings:
        for i in range(LEADER_DIRECTIONS):
            angle = 2 * math.pi * i / LEADER_DIRECTIONS
            cx, cy = px + ring * math.cos(angle), py - ring * math.sin(angle)
            # The label's corner or edge nearest the point sits on the ring.
            ax = 0.0 if math.cos(angle) > 0.3 else 1.0 if math.cos(angle) < -0.3 else 0.5
            ay = 1.0 if math.sin(angle) > 0.3 else 0.0 if math.sin(angle) < -0.3 else 0.5
            rect = QRectF(cx - ax * tw, cy - ay * th, tw, th)
            if not bounds.contains(rect) or not placed.box_free(rect):
                continue
            end = (min(max(px, rect.left()), rect.right()), min(max(py, rect.top()), rect.bottom()))
            if not placed.line_free((px, py), end):
                continue
            crossed = placed.points_crossed((px, py), end, best[0] if best is not None else 1 << 30)
            if best is None or crossed < best[0]:
                best = (crossed, rect, end)
                if crossed == 0:
                    return rect, end  # the nearest place whose line passes over no point
    return None if best is None else (best[1], best[2])


def _plottable(c: Candidate) -> bool:
    """Fits and has finite, priced job time and cost ranges."""
    if not c.fits or c.cost is None or c.cost.cost_usd is None:
        return False
    h, u = c.cost.job_hours, c.cost.cost_usd
    return finite(h.low, h.expected, h.high, u.low, u.expected, u.high)


def _wants_log(values: list[float]) -> bool:
    positive = [v for v in values if v > 0]
    if not positive or len(positive) != len(values):
        return False
    return max(positive) / min(positive) > LOG_SPAN


def _transform(log: bool) -> Callable[[float], float]:
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


def _priced(c: Candidate) -> tuple[CostEstimate, Range]:
    """A plottable candidate's cost and its cost range (:func:`_plottable` has checked both)."""
    cost = c.cost
    assert cost is not None and cost.cost_usd is not None, "only plottable candidates are drawn"
    return cost, cost.cost_usd


def _tooltip(c: Candidate, recommended: bool = False) -> str:
    cost, u = _priced(c)
    h = cost.job_hours
    name = short_gpu_name(c.gpu.name, c.gpu_count)
    rows = [
        ("Parallelism", c.setup_label if c.gpu_count > 1 else "single GPU"),
        ("Job time", f"{fmt_hours(h.expected)} ({fmt_hours(h.low)} – {fmt_hours(h.high)})"),
        ("Cost", f"{fmt_usd(u.expected)} ({fmt_usd(u.low)} – {fmt_usd(u.high)})"),
    ]
    if finite(cost.usd_per_million_tokens):
        rows.append(("Per 1M tokens", fmt_usd(cost.usd_per_million_tokens)))
    if cost.deadline_status:
        rows.append(
            (
                "Deadline",
                {"meets": "meets it", "likely": "likely meets it", "at risk": "at risk"}.get(
                    cost.deadline_status, cost.deadline_status
                ),
            )
        )
    if cost.budget_status:
        rows.append(
            (
                "Budget",
                {"within": "within it", "likely": "likely within it", "over": "over"}.get(
                    cost.budget_status, cost.budget_status
                ),
            )
        )
    if cost.horizon_status:
        rows.append(
            (
                "Horizon",
                {"within": "finishes within it", "likely": "likely within it", "beyond": "beyond it"}.get(
                    cost.horizon_status, cost.horizon_status
                ),
            )
        )
    if c.pareto:
        rows.append(("", "on the Pareto frontier"))
    if recommended:
        rows.append(("", f"{RECOMMENDED_MARK} recommended"))
    body = "".join(
        f"<tr><td>{html.escape(k)}</td><td>&nbsp;&nbsp;{html.escape(v)}</td></tr>" for k, v in rows
    )
    return f"<b>{html.escape(name)}</b><table cellspacing='0'>{body}</table>"


def _preview_widget(est: Estimate) -> CostTimeChart:
    chart = CostTimeChart()
    chart.show(est, est.decision.recommended_key if est.decision else None)
    chart.candidateSelected.connect(lambda key: print("selected", key))
    return chart


if __name__ == "__main__":
    from gpuadvisor.views.charts._preview import preview

    preview(_preview_widget)
