"""Serving: throughput per GPU against the speed each user sees, for the top GPU types.

One curve per GPU type (its best fleet's replica, from the core's ``ServingEstimate.curve()``): as
more requests share a replica, each user's tokens/s (``1 / ITL``, x) falls and the replica's
output tokens/s per GPU (y) rises. The vertical line is the ITL target (users need at least that
many tokens/s), and a diamond marks each fleet's operating point (its concurrency per replica).
The recommended setup's curve is drawn thicker and starred in the legend. Nothing is computed
here: the points are the core's.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QWidget

from ...core.estimation.results import Candidate, Estimate
from ...core.specs.serving import ServingSpec
from ._base import ChartBase, ScaleAxis
from .labels import finite
from .palette import SERIES_COLORS, ChartColors

MAX_SERIES = len(SERIES_COLORS)
RECOMMENDED_MARK = "\u2605"
EMPTY_MESSAGE = "Choose the Serving workload to size a fleet."
CURVE_WIDTH, RECOMMENDED_WIDTH = 2.2, 3.4
#: Dash patterns per series (None: solid), so curves are told apart without colour.
DASHES: tuple[tuple[float, ...] | None, ...] = (
    None,
    (5, 2.5),
    (6, 2, 1, 2),
    (1.2, 1.8),
    (9, 2.5, 1, 2.5),
    (2.5, 2.5),
)
SYMBOLS = ("o", "s", "t", "p", "h", "t1")


def _pen(color: str, index: int, width: float) -> QPen:
    pen: QPen = pg.mkPen(color, width=width)
    dash = DASHES[index % len(DASHES)]
    if dash is not None:
        pen.setDashPattern(list(dash))
    return pen


def _targets_text(spec: ServingSpec) -> str:
    """The latency targets the service states, in words (either may be missing)."""
    if spec.ttft_s is not None:
        return f"first token within {spec.ttft_s:g} s at p{spec.percentile}"
    if spec.itl_ms is not None:
        return f"at most {spec.itl_ms:g} ms between tokens at p{spec.percentile}"
    return "no latency target stated"


def fleet_series(est: Estimate | None, selected: str | None = None) -> list[Candidate]:
    """The candidates to draw: the selected one, then each GPU type's best fleet in the decision's
    order (at most :data:`MAX_SERIES`, only those with a fleet)."""
    if est is None or est.scenario.workload.serving is None:
        return []
    chosen: list[Candidate] = []
    sel = est.candidate(selected) if selected else None
    if sel is not None and sel.serving is not None:
        chosen.append(sel)
    for c in est.best_per_gpu().values():
        if c.serving is not None and all(c.gpu.id != o.gpu.id for o in chosen):
            chosen.append(c)
        if len(chosen) >= MAX_SERIES:
            break
    return chosen


class ServingChart(ChartBase):
    """Output tokens/s per GPU versus tokens/s per user, with the ITL target and operating points."""

    def __init__(self, parent: QWidget | None = None, *, dark: bool | None = None) -> None:
        self.x_axis = ScaleAxis("bottom")
        self.y_axis = ScaleAxis("left")
        super().__init__(
            parent, legend_columns=3, axis_items={"bottom": self.x_axis, "left": self.y_axis}, dark=dark
        )
        pi = self.plot_item
        self._set_axis_title("left", "Output tokens/s per GPU")
        self._set_axis_title("bottom", "Tokens/s per user (1 / ITL)")
        pi.showGrid(x=True, y=True, alpha=0.15)
        empty = np.zeros(0)
        self.curves: list[pg.PlotCurveItem] = []
        self.legend_keys: list[pg.PlotDataItem] = []
        for _ in range(MAX_SERIES):
            curve = pg.PlotCurveItem(x=empty, y=empty)
            pi.addItem(curve)
            self.curves.append(curve)
            self.legend_keys.append(pg.PlotDataItem(x=[0, 1], y=[0, 0]))
        self.points = pg.ScatterPlotItem(x=empty, y=empty, symbol="d", size=13)
        self.points.setZValue(MAX_SERIES + 2)
        pi.addItem(self.points)
        self.target_line = pg.InfiniteLine(
            angle=90, movable=False, label="", labelOpts={"position": 0.5, "anchors": [(0, 0), (0, 0)]}
        )
        pi.addItem(self.target_line, ignoreBounds=True)
        self._target_key = pg.PlotCurveItem()
        self._point_key = pg.ScatterPlotItem(symbol="d", size=12)
        self._legend_labels: list[str] = []
        self._shown: list[Candidate] = []
        self._est: Estimate | None = None
        self._selected: str | None = None
        self._apply_colors(self.colors)
        self.show_estimate(None)

    # -- public API -----------------------------------------------------------------------
    def show_estimate(self, est: Estimate | None, selected: str | None = None) -> None:
        """Curves of the selected fleet and the best GPU types (``est=None``: the empty state)."""
        self._est, self._selected = est, selected
        cands = fleet_series(est, selected)
        self._shown = cands
        recommended = est.decision.recommended_key if est is not None and est.decision is not None else None
        series = self.colors.series
        px, py, brushes = [], [], []
        xs_all, ys_all = [], []
        for i, curve in enumerate(self.curves):
            if i >= len(cands):
                curve.setData(x=np.zeros(0), y=np.zeros(0))
                curve.hide()
                continue
            c = cands[i]
            s = c.serving
            assert s is not None  # fleet_series keeps only candidates with a fleet
            pts = [(p.tokens_per_s_per_user, p.tokens_per_s_per_gpu) for p in s.curve()]
            pts = [(x, y) for x, y in pts if finite(x, y)]
            color = series[i % len(series)]
            curve.setPen(_pen(color, i, RECOMMENDED_WIDTH if c.key == recommended else CURVE_WIDTH))
            curve.setData(x=np.array([p[0] for p in pts], float), y=np.array([p[1] for p in pts], float))
            curve.show()
            xs_all += [p[0] for p in pts]
            ys_all += [p[1] for p in pts]
            x_op, y_op = 1000.0 / s.itl_ms, s.tokens_per_s_per_replica / c.gpu_count
            if finite(x_op, y_op):
                px.append(x_op)
                py.append(y_op)
                brushes.append(pg.mkBrush(color))
        self.points.setData(x=np.array(px, float), y=np.array(py, float), brush=brushes)
        spec = est.scenario.workload.serving if est is not None else None
        if spec is not None and spec.itl_ms is not None:  # the targets are optional
            target = 1000.0 / spec.itl_ms
            self.target_line.show()
            self.target_line.setValue(target)
            self.target_line.label.setFormat(f"ITL target: ≥ {target:.0f} tokens/s per user")
            xs_all.append(target)
        else:
            self.target_line.hide()
        self._update_legend(cands, recommended)
        if not cands:
            self._show_message(EMPTY_MESSAGE if spec is None else "No GPU fits a replica.")
            return
        self._hide_message()
        met = [c for c in cands if c.serving is not None and c.serving.meets_slo]
        self._set_notice(
            "" if met or spec is None else f"No fleet shown meets the targets ({_targets_text(spec)}).",
            warning=not met,
        )
        x_lo, x_hi = min(xs_all), max(xs_all)
        pad = (x_hi - x_lo) * 0.04 or 1.0
        y_hi = max(ys_all, default=1.0)
        self.view_box.setRange(xRange=(max(0.0, x_lo - pad), x_hi + pad), yRange=(0, y_hi * 1.08), padding=0)

    def shown_keys(self) -> list[str]:
        """The candidate keys of the curves on show, in order."""
        return [c.key for c in self._shown]

    def legend_labels(self) -> list[str]:
        return [label.text for _, label in self.legend.items]

    # -- helpers ---------------------------------------------------------------------------
    def _label(self, c: Candidate, recommended: str | None) -> str:
        s = c.serving
        assert s is not None  # fleet_series keeps only candidates with a fleet
        per = "" if c.gpu_count == 1 else f" ({c.gpu_count}, {c.parallelism})"
        d = s.disaggregated
        count = f"{d.prefill_instances}P + {d.decode_instances}D" if d is not None else f"{s.replicas}"
        text = f"{count} \u00d7 {c.gpu.name.replace('NVIDIA ', '')}{per}"
        return f"{RECOMMENDED_MARK} {text}" if c.key == recommended else text

    def _update_legend(self, cands: list[Candidate], recommended: str | None) -> None:
        labels = [self._label(c, recommended) for c in cands]
        wanted = labels + (["ITL target", "Operating point"] if cands else [])
        if wanted == self._legend_labels:
            return
        self.legend.clear()
        series = self.colors.series
        for i, (key, label, c) in enumerate(zip(self.legend_keys, labels, cands)):
            color = series[i % len(series)]
            key.setPen(_pen(color, i, RECOMMENDED_WIDTH if c.key == recommended else CURVE_WIDTH))
            self.legend.addItem(key, label)
        if cands:
            self.legend.addItem(self._target_key, "ITL target")
            self.legend.addItem(self._point_key, "Operating point")
        self._legend_labels = wanted
        self._fit_legend()

    def _apply_colors(self, colors: ChartColors) -> None:
        muted = colors.muted_text
        pen = pg.mkPen(colors.text, width=1.6, style=Qt.PenStyle.DashLine)
        self.target_line.setPen(pen)
        self._target_key.setPen(pen)
        self._point_key.setBrush(pg.mkBrush(muted))
        self._point_key.setPen(pg.mkPen(colors.background, width=1))
        self.points.setPen(pg.mkPen(colors.background, width=1))
        fill = QColor(colors.background)
        fill.setAlpha(210)
        self.target_line.label.setColor(muted)
        self.target_line.label.fill = pg.mkBrush(fill)
        self.target_line.label.update()
        if getattr(self, "_shown", None):
            self._legend_labels = []
            self.show_estimate(self._est, self._selected)


def _preview_widget(est: Estimate) -> ServingChart:
    chart = ServingChart()
    chart.show(est, est.decision.recommended_key if est.decision else None)
    return chart


if __name__ == "__main__":
    from gpuadvisor.views.charts._preview import preview

    preview(_preview_widget)
