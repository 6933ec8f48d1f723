"""Per-GPU memory as horizontal stacked bars: one row per GPU, one colour per component.

Each row stacks the candidate's memory components (``MemoryBreakdown.gib()``) in
:data:`~.palette.COMPONENT_ORDER` over a light track as long as the usable capacity, which
ends in a black capacity mark; a column on the right marks the verdict (circle: fits,
triangle: tight, cross: does not fit). Hovering a row shows the exact numbers; clicking it
emits :attr:`VramChart.gpuClicked` with the GPU id.

The chart computes nothing: the bar lengths are the core's numbers, stacked.
"""

from __future__ import annotations

import math

import html

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QCursor, QFontMetrics
from PySide6.QtWidgets import QToolTip, QWidget

from ._base import LABEL_STYLE, ChartBase, ScaleAxis, category_axis, tick_font
from .labels import finite, fmt_gib, short_gpu_name
from .palette import (
    BACKGROUND_COLOR,
    CAPACITY_COLOR,
    COMPONENT_COLORS,
    COMPONENT_LABELS,
    COMPONENT_ORDER,
    COMPONENT_SHORT_LABELS,
    FIT_COLOR,
    NO_FIT_COLOR,
    TIGHT_COLOR,
)

BAR_HEIGHT = 0.62
TRACK_HEIGHT = 0.78
TRACK_COLOR = "#EEEEEE"
ROW_MIN_PX = 19   # below this the names on the y axis would overlap
ROW_HINT_PX = 26
FRAME_PX = 130    # legend, x axis, title and margins
VERDICTS = ("fits", "tight", "does not fit")
_VERDICT_STYLE = {"fits": ("o", FIT_COLOR, "Fits"), "tight": ("t1", TIGHT_COLOR, "Tight (>95% used)"),
                  "does not fit": ("x", NO_FIT_COLOR, "Does not fit")}
NOTHING_FITS_NOTICE = "Nothing fits: the bars show how far each GPU is over its capacity."
EMPTY_MESSAGE = "No GPU to show.\nPick GPUs or widen the comparison."


class VramChart(ChartBase):
    """Memory per GPU for one candidate per GPU (e.g. ``est.best_per_gpu().values()``)."""

    gpuClicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        self.x_axis = ScaleAxis("bottom")
        self.y_axis = category_axis("left")
        super().__init__(parent, legend_columns=6, axis_items={"bottom": self.x_axis, "left": self.y_axis})
        pi = self.plot_item
        pi.setLabel("bottom", "GiB per GPU", **LABEL_STYLE)
        pi.invertY(True)
        pi.setMouseEnabled(x=False, y=False)
        pi.showGrid(x=True, y=False, alpha=0.18)
        self.y_axis.setStyle(tickLength=0)

        empty = np.zeros(0)
        self.track = pg.BarGraphItem(x0=empty, y=empty, width=empty, height=TRACK_HEIGHT,
                                     brush=TRACK_COLOR, pen=pg.mkPen(None))
        pi.addItem(self.track)
        #: One bar item per component, keyed by component name; segments are updated in place.
        self.segments: dict[str, pg.BarGraphItem] = {}
        for name in COMPONENT_ORDER:
            bar = pg.BarGraphItem(x0=empty, y=empty, width=empty, height=BAR_HEIGHT,
                                  brush=COMPONENT_COLORS[name], pen=pg.mkPen(BACKGROUND_COLOR, width=1))
            pi.addItem(bar)
            self.segments[name] = bar
            self.legend.addItem(bar, COMPONENT_SHORT_LABELS[name])
        self.capacity = pg.PlotCurveItem(x=empty, y=empty, connect="pairs",
                                         pen=pg.mkPen(CAPACITY_COLOR, width=3))
        pi.addItem(self.capacity)
        self.legend.addItem(self.capacity, "Usable capacity")
        #: Verdict markers in a column right of the bars, one scatter item per verdict.
        self.markers: dict[str, pg.ScatterPlotItem] = {}
        for verdict in VERDICTS:
            symbol, color, label = _VERDICT_STYLE[verdict]
            item = pg.ScatterPlotItem(x=empty, y=empty, symbol=symbol, size=11, brush=pg.mkBrush(color),
                                      pen=pg.mkPen(color, width=1.5))
            pi.addItem(item)
            self.markers[verdict] = item
            self.legend.addItem(item, label)

        self._rows: list = []
        self._tooltips: dict[int, str] = {}
        scene = self.plot.scene()
        scene.sigMouseMoved.connect(self._on_mouse_moved)
        scene.sigMouseClicked.connect(self._on_mouse_clicked)
        self.set_candidates([])

    # -- public API -----------------------------------------------------------------------
    def set_candidates(self, candidates) -> None:
        """Show one row per candidate, top to bottom in the given order.

        Candidates with a non-finite number are skipped (never drawn as NaN).
        """
        rows, gib = [], []
        for c in candidates:
            g = c.memory.gib()
            if finite(c.capacity_gib, c.headroom_gib, *g.values()):
                rows.append(c)
                gib.append(g)
        self._rows = rows
        self._tooltips = {}  # built on hover: most updates are never hovered
        n = len(rows)
        ys = np.arange(n, dtype=float)
        x0 = np.zeros(n)
        for name in COMPONENT_ORDER:
            width = np.array([g[name] for g in gib], dtype=float)
            self.segments[name].setOpts(x0=x0.copy(), y=ys, width=width, height=BAR_HEIGHT)
            x0 = x0 + width
        caps = np.array([c.capacity_gib for c in rows], dtype=float)
        self.track.setOpts(x0=np.zeros(n), y=ys, width=caps, height=TRACK_HEIGHT)
        half = BAR_HEIGHT / 2 + 0.1
        self.capacity.setData(x=np.repeat(caps, 2), y=np.ravel(np.column_stack([ys - half, ys + half])))

        # Round the axis end up to a 1-1.5-2-3-5-7.5 step: small input changes then keep the
        # same range, so the cached axis and grid are reused instead of re-laid out.
        x_max = _nice_ceiling(float(max(np.max(x0), np.max(caps))) * 1.04) if n else 1.0
        marker_x = x_max * 1.035
        for verdict, item in self.markers.items():
            idx = [i for i, c in enumerate(rows) if c.verdict == verdict]
            item.setData(x=np.full(len(idx), marker_x), y=ys[idx] if idx else np.zeros(0))

        labels = [short_gpu_name(c.gpu.name, c.gpu_count) for c in rows]
        ticks = [[(float(i), s) for i, s in enumerate(labels)], []]
        if ticks != getattr(self, "_ticks", None):  # re-laying out 27 tick labels is the costliest part
            self._ticks = ticks
            self.y_axis.setTicks(ticks)
        metrics = QFontMetrics(tick_font())
        axis_width = max([metrics.horizontalAdvance(s) for s in labels], default=40) + 16
        if axis_width != self.y_axis.width():  # a relayout repaints the whole window: only when needed
            self.y_axis.setWidth(axis_width)
        min_height = FRAME_PX + ROW_MIN_PX * max(n, 3)
        if min_height != self.minimumHeight():
            self.setMinimumHeight(min_height)

        if not rows:
            self._show_message(EMPTY_MESSAGE)
            return
        self._hide_message()
        view = (x_max * 1.07, n)
        if view != getattr(self, "_view", None):
            self._view = view
            self.view_box.setRange(xRange=(0, x_max * 1.07), yRange=(-0.6, n - 0.4), padding=0)
        if not any(c.fits for c in rows):
            self._set_notice(NOTHING_FITS_NOTICE, NO_FIT_COLOR)
        else:
            self._set_notice("")

    def row_count(self) -> int:
        return len(self._rows)

    def candidate_at(self, row: int):
        """The candidate drawn in ``row`` (0 = top)."""
        return self._rows[row]

    def tooltip_for_row(self, row: int) -> str:
        """The hover text of ``row``: every component, the totals, capacity and headroom (rich text)."""
        text = self._tooltips.get(row)
        if text is None:
            text = self._tooltips[row] = _tooltip(self._rows[row])
        return text

    def row_at(self, scene_pos: QPointF) -> int | None:
        """The row under a scene position (over the bars or the GPU name), else ``None``."""
        if not self._rows or self._message.isVisible():
            return None
        vb_rect = self.view_box.sceneBoundingRect()
        axis_rect = self.y_axis.sceneBoundingRect()
        if not (axis_rect.left() <= scene_pos.x() <= vb_rect.right()
                and vb_rect.top() <= scene_pos.y() <= vb_rect.bottom()):
            return None
        y = self.view_box.mapSceneToView(scene_pos).y()
        row = round(y)
        return row if 0 <= row < len(self._rows) and abs(y - row) <= 0.5 else None

    def sizeHint(self):  # Qt override
        hint = super().sizeHint()
        hint.setHeight(FRAME_PX + ROW_HINT_PX * max(len(self._rows), 3))
        hint.setWidth(max(hint.width(), 760))
        return hint

    # -- slots ---------------------------------------------------------------------------
    def _on_mouse_moved(self, scene_pos: QPointF) -> None:
        row = self.row_at(scene_pos)
        text = "" if row is None else self.tooltip_for_row(row)
        if text != self.plot.toolTip():
            self.plot.setToolTip(text)
            if QToolTip.isVisible():
                if text:
                    QToolTip.showText(QCursor.pos(), text, self.plot)
                else:
                    QToolTip.hideText()

    def _on_mouse_clicked(self, event) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            return
        row = self.row_at(event.scenePos())
        if row is not None:
            self.gpuClicked.emit(self._rows[row].gpu.id)


def _tooltip(c) -> str:
    g = c.memory.gib()
    setup = f"{c.gpu_count} × {c.gpu.name}" + (f", {c.parallelism}" if c.gpu_count > 1 else "")
    rows = [(COMPONENT_LABELS[name], fmt_gib(g[name])) for name in COMPONENT_ORDER if g[name] > 0]
    used = c.utilization * 100
    short = fmt_gib(abs(c.headroom_gib))
    rows += [("<b>Total per GPU</b>", f"<b>{fmt_gib(g['device_total'])}</b>"),
             ("Tensors (PyTorch peak)", fmt_gib(g["tensors_total"])),
             ("Usable capacity", fmt_gib(c.capacity_gib)),
             ("Headroom" if c.headroom_gib >= 0 else "Short by",
              f"{short} ({used:.0f}% used)" if finite(used) else short)]
    color = {"fits": FIT_COLOR, "tight": TIGHT_COLOR}.get(c.verdict, NO_FIT_COLOR)
    body = "".join(f"<tr><td>{label}</td><td align='right'>&nbsp;&nbsp;{value}</td></tr>"
                   for label, value in rows)
    return (f"<b>{html.escape(setup)}</b><br><span style='color:{color}'>{html.escape(c.verdict)}</span>"
            f"<table cellspacing='0'>{body}</table>")


def _preview_widget(est):
    chart = VramChart()
    chart.set_candidates(list(est.best_per_gpu().values()))
    chart.gpuClicked.connect(lambda gpu_id: print("clicked", gpu_id))
    return chart


if __name__ == "__main__":
    from gpuadvisor.gui.charts._preview import preview

    preview(_preview_widget)


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 1.5, 2, 3, 5, 7.5 x 10^k that is at least ``value`` (value > 0)."""
    if not value > 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0):
        candidate = step * 10 ** exponent
        if candidate >= value:
            return candidate
    return 10 ** (exponent + 1)
