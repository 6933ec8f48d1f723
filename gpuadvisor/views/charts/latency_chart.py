"""Latency against load: the time to first token or between tokens, p50 and p99, as the load on
each of the top GPU types' fleets grows.

One colour per GPU type (its fleet, from the core's ``Estimate.load_curves``: the fleet's size
kept while the load runs from a quarter to twice the stated one), p50 solid and p99 dashed. The
horizontal dotted line is the target, the vertical grey line the stated load; a point past which
the fleet cannot keep up is left out. The y axis is logarithmic (p99 and p50 differ by orders of
magnitude near saturation). Nothing is computed here: the points are the core's.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPen
from PySide6.QtWidgets import QVBoxLayout, QWidget

from ...core.estimation.results import Estimate
from ...core.formatting import short_gpu_name
from ._base import ChartBase, ScaleAxis
from .palette import ChartColors

#: Fleets drawn at most (each with two lines).
MAX_SERIES = 4
RECOMMENDED_MARK = "\u2605"
EMPTY_MESSAGE = "Choose the Serving workload to see its latencies against the load."
#: What each figure plots: (axis title, target attribute of ServingSpec, p50 and p99 fields).
FIGURES = {
    "ttft": ("TTFT (s)", "ttft_s", "ttft_p50_s", "ttft_p99_s"),
    "itl": ("ITL (ms)", "itl_ms", "itl_p50_ms", "itl_p99_ms"),
}
#: A GPU's name in the legend at most this long (the count and the fleet's replicas beside it).
LEGEND_NAME_CHARS = 22
P99_DASH = (5.0, 3.0)


def latency_keys(est: Estimate | None, selected: str | None = None) -> tuple[str, ...]:
    """The fleets to draw (the core's ``Estimate.chart_fleets``)."""
    return est.chart_fleets(selected, MAX_SERIES) if est is not None else ()


def _pen(color: str, width: float, dashed: bool) -> QPen:
    pen: QPen = pg.mkPen(color, width=width)
    if dashed:
        pen.setDashPattern(list(P99_DASH))
    return pen


class LatencyChart(ChartBase):
    """One latency (``figure``: "ttft" or "itl") against the load, p50 and p99 per fleet."""

    def __init__(
        self, figure: str = "ttft", parent: QWidget | None = None, *, dark: bool | None = None
    ) -> None:
        self.figure = figure
        self.x_axis = ScaleAxis("bottom")
        self.y_axis = ScaleAxis("left")
        super().__init__(
            parent,
            legend_columns=MAX_SERIES + 3,
            axis_items={"bottom": self.x_axis, "left": self.y_axis},
            dark=dark,
        )
        self.y_axis.set_log(True)
        pi = self.plot_item
        self._set_axis_title("left", FIGURES[figure][0])
        self._set_axis_title("bottom", "Load")
        pi.showGrid(x=True, y=True, alpha=0.15)
        empty = np.zeros(0)
        self.p50: list[pg.PlotCurveItem] = []
        self.p99: list[pg.PlotCurveItem] = []
        self.legend_keys: list[pg.PlotDataItem] = []
        for _ in range(MAX_SERIES):
            for bucket in (self.p50, self.p99):
                curve = pg.PlotCurveItem(x=empty, y=empty)
                pi.addItem(curve)
                bucket.append(curve)
            self.legend_keys.append(pg.PlotDataItem(x=[0, 1], y=[0, 0]))
        self.target_line = pg.InfiniteLine(angle=0, movable=False)
        self.load_line = pg.InfiniteLine(angle=90, movable=False)
        pi.addItem(self.target_line, ignoreBounds=True)
        pi.addItem(self.load_line, ignoreBounds=True)
        self._p50_key = pg.PlotCurveItem()
        self._p99_key = pg.PlotCurveItem()
        self._target_key = pg.PlotCurveItem()
        self._legend_labels: list[str] = []
        self._keys: tuple[str, ...] = ()
        self._est: Estimate | None = None
        self._selected: str | None = None
        self._apply_colors(self.colors)
        self.show_estimate(None)

    # -- public API -----------------------------------------------------------------------
    def show_estimate(self, est: Estimate | None, selected: str | None = None) -> None:
        """The latencies of the selected fleet and the best GPU types (``est=None``: the empty state)."""
        self._est, self._selected = est, selected
        keys = latency_keys(est, selected)
        curves = est.load_curves(keys) if est is not None and keys else ()
        by_key = {c.key: c for c in curves}
        keys = tuple(k for k in keys if k in by_key and by_key[k].load)
        self._keys = keys
        recommended = est.decision.recommended_key if est is not None and est.decision is not None else None
        _title, target_attr, f50, f99 = FIGURES[self.figure]
        series = self.colors.series
        ys: list[float] = []
        xs: list[float] = []
        for i in range(MAX_SERIES):
            c50, c99 = self.p50[i], self.p99[i]
            if i >= len(keys):
                for item in (c50, c99):
                    item.setData(x=np.zeros(0), y=np.zeros(0))
                    item.hide()
                continue
            lc = by_key[keys[i]]
            color = series[i % len(series)]
            width = 3.0 if keys[i] == recommended else 2.0
            x = np.asarray(lc.load, float)
            for item, values, dashed in ((c50, getattr(lc, f50), False), (c99, getattr(lc, f99), True)):
                y = np.asarray(values, float)
                ok = np.isfinite(y) & (y > 0)
                item.setPen(_pen(color, width, dashed))
                item.setData(x=x[ok], y=np.log10(y[ok]))
                item.show()
                ys += list(y[ok])
            xs += list(x)
        spec = est.scenario.workload.serving if est is not None else None
        target = getattr(spec, target_attr, None) if spec is not None else None
        if target is not None:
            self.target_line.setValue(math.log10(target))
            self.target_line.show()
            ys.append(target)
        else:
            self.target_line.hide()
        stated = None
        if spec is not None:
            stated = (
                float(spec.concurrency) if spec.concurrency is not None else float(spec.requests_per_s or 0)
            )
            self._set_axis_title(
                "bottom", "Clients" if spec.concurrency is not None else "Requests per second"
            )
        if stated:
            self.load_line.setValue(stated)
            self.load_line.show()
        else:
            self.load_line.hide()
        self._update_legend(keys, recommended, target is not None)
        if not keys:
            self._show_message(EMPTY_MESSAGE if spec is None else "No fleet to show.")
            return
        self._hide_message()
        self._set_notice("")
        lo, hi = min(ys), max(ys)
        y0, y1 = math.log10(lo) - 0.08, math.log10(hi) + 0.08
        x1 = max(xs) if xs else 1.0
        self.view_box.setRange(xRange=(0.0, x1 * 1.04), yRange=(y0, y1), padding=0)

    def shown_keys(self) -> list[str]:
        return list(self._keys)

    def legend_labels(self) -> list[str]:
        return [label.text for _, label in self.legend.items]

    # -- helpers ---------------------------------------------------------------------------
    def _label(self, key: str, recommended: str | None) -> str:
        est = self._est
        c = est.candidate(key) if est is not None else None
        if est is None or c is None or c.serving is None:
            return key
        s = est.serving_of(c, simulate=False) or c.serving
        d = s.disaggregated
        count = f"{d.prefill_instances}P + {d.decode_instances}D" if d is not None else f"{s.replicas}"
        text = f"{count} \u00d7 {short_gpu_name(c.gpu.name, c.gpu_count, LEGEND_NAME_CHARS)}"
        return f"{RECOMMENDED_MARK} {text}" if key == recommended else text

    def _update_legend(self, keys: tuple[str, ...], recommended: str | None, target: bool) -> None:
        labels = [self._label(k, recommended) for k in keys]
        wanted = labels + (["p50", "p99"] + (["target"] if target else []) if keys else [])
        if wanted == self._legend_labels:
            return
        self.legend.clear()
        series = self.colors.series
        for i, (key_item, label, k) in enumerate(zip(self.legend_keys, labels, keys)):
            key_item.setPen(_pen(series[i % len(series)], 3.0 if k == recommended else 2.0, False))
            self.legend.addItem(key_item, label)
        if keys:
            self.legend.addItem(self._p50_key, "p50")
            self.legend.addItem(self._p99_key, "p99")
            if target:
                self.legend.addItem(self._target_key, "target")
        self._legend_labels = wanted
        self._fit_legend()

    def _apply_colors(self, colors: ChartColors) -> None:
        muted = colors.muted_text
        target_pen = pg.mkPen(colors.text, width=1.6, style=Qt.PenStyle.DotLine)
        self.target_line.setPen(target_pen)
        self._target_key.setPen(target_pen)
        self.load_line.setPen(pg.mkPen(muted, width=1.2))
        self._p50_key.setPen(_pen(muted, 2.0, False))
        self._p99_key.setPen(_pen(muted, 2.0, True))
        if getattr(self, "_keys", None):
            self._legend_labels = []
            self.show_estimate(self._est, self._selected)


class LatencyPanel(QWidget):
    """The window's tab: the time to first token above the time between tokens."""

    def __init__(self, parent: QWidget | None = None, *, dark: bool | None = None) -> None:
        super().__init__(parent)
        self.ttft = LatencyChart("ttft", dark=dark)
        self.itl = LatencyChart("itl", dark=dark)
        # One legend for both (the same fleets, colours and line styles): the lower chart's plot
        # takes the room of its own.
        self.itl.plot.ci.removeItem(self.itl.legend)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.ttft, 1)
        layout.addWidget(self.itl, 1)

    def show_estimate(self, est: Estimate | None, selected: str | None = None) -> None:
        self.ttft.show_estimate(est, selected)
        self.itl.show_estimate(est, selected)


if __name__ == "__main__":
    from gpuadvisor.views.charts._preview import preview

    def _preview_widget(est: Estimate) -> QWidget:
        panel = LatencyPanel()
        panel.show_estimate(est, est.decision.recommended_key if est.decision else None)
        return panel

    preview(_preview_widget)
