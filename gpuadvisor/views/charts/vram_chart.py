"""Per-GPU memory as horizontal stacked bars: one row per GPU type, one colour per component.

:meth:`VramChart.show` draws each GPU type's best setup (``Estimate.best_per_gpu()``) in the
decision's order, so the rows read like the ranking: the recommended setup first, its name
starred and its bar outlined. The selected setup's row is highlighted (when the selection is
another setup of a GPU type, that row shows the selected setup).

Each row stacks the candidate's memory components (``MemoryBreakdown.gib()``) in
:data:`~.palette.COMPONENT_ORDER` over a light track as long as the usable capacity, which
ends in a capacity mark; a column on the right marks the verdict (circle: fits, triangle:
tight, cross: does not fit). For a service the components are one replica's at its operating
point, the KV cache being that of the requests in flight (its legend entry says so), and a
hatched segment after them is the part of the KV pool the engine preallocates that no request
uses (``serving.memory.pool_reserved``). Hovering a row shows the exact numbers; clicking it emits
:attr:`VramChart.gpuClicked` with the GPU id and :attr:`VramChart.candidateSelected` with the
setup's key.

The chart needs little height: rows keep a readable pitch (one line of the application font)
and, when they do not all fit, a scroll bar (and the mouse wheel over the chart) scrolls them
while the GPU names stay beside their bars. A report image (:meth:`render_image`) always shows
every row.

The chart computes nothing: the bar lengths are the core's numbers, stacked.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, QObject, QPointF, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QCursor, QFontMetrics, QKeyEvent, QPen, QWheelEvent
from PySide6.QtWidgets import QScrollBar, QToolTip, QWidget

from ...core.estimation.results import Candidate, Estimate
from ._base import ChartBase, ScaleAxis, category_axis, tick_font
from .labels import finite, fmt_gib, short_gpu_name
from .palette import COMPONENT_LABELS, COMPONENT_ORDER, COMPONENT_SHORT_LABELS, LIGHT, ChartColors

BAR_HEIGHT = 0.62
HOST_BAR_HEIGHT = 0.4
HOST_LABEL = "Host RAM (offloaded)"
#: The KV cache's legend entry for a service, and the hatched segment of the engine's unused KV pool.
KV_IN_FLIGHT_LABEL = "KV cache in flight"
POOL_LABEL = "KV pool (reserved)"
TRACK_HEIGHT = 0.78
OUTLINE_HEIGHT = 0.8
ROW_GAP_PX = 3  # between two names: the row pitch is one text line plus this
MIN_HEIGHT_PX = 200
HINT_ROWS = 8  # rows the preferred height shows
WHEEL_ROWS = 3  # rows per mouse-wheel notch
RECOMMENDED_MARK = "\u2605"  # ★ before the recommended GPU's name
VERDICTS = ("fits", "tight", "does not fit")
_VERDICT_STYLE = {
    "fits": ("o", "Fits"),
    "tight": ("t1", "Tight (>95%)"),
    "does not fit": ("x", "Does not fit"),
}
NOTHING_FITS_NOTICE = "Nothing fits: the bars show how far each GPU is over its capacity."
EMPTY_MESSAGE = "No GPU to show.\nPick GPUs or widen the comparison."


def row_pitch_px() -> int:
    """Pixels per row: one line of the tick font plus a small gap, so names never overlap."""
    return QFontMetrics(tick_font()).height() + ROW_GAP_PX


class VramChart(ChartBase):
    """Memory per GPU type, one row per GPU type, in the decision's order."""

    #: The GPU id of a clicked row.
    gpuClicked = Signal(str)
    #: The candidate key of a clicked row.
    candidateSelected = Signal(str)

    def __init__(self, parent: QWidget | None = None, *, dark: bool | None = None) -> None:
        self.x_axis = ScaleAxis("bottom")
        self.y_axis = category_axis("left")
        super().__init__(
            parent, legend_columns=6, axis_items={"bottom": self.x_axis, "left": self.y_axis}, dark=dark
        )
        pi = self.plot_item
        self._set_axis_title("bottom", "GiB per GPU")
        pi.invertY(True)
        pi.setMouseEnabled(x=False, y=False)
        pi.showGrid(x=True, y=False, alpha=0.18)
        self.y_axis.setStyle(tickLength=0)

        empty = np.zeros(0)
        colors = self.colors
        #: The band behind the selected row.
        self.highlight = pg.BarGraphItem(
            x0=empty, y=empty, width=empty, height=1.0, brush=colors.highlight, pen=pg.mkPen(None)
        )
        self.highlight.setZValue(-0.5)
        pi.addItem(self.highlight)
        self.track = pg.BarGraphItem(
            x0=empty, y=empty, width=empty, height=TRACK_HEIGHT, brush=colors.track, pen=pg.mkPen(None)
        )
        pi.addItem(self.track)
        #: One bar item per component, keyed by component name; segments are updated in place.
        self.segments: dict[str, pg.BarGraphItem] = {}
        for name in COMPONENT_ORDER:
            bar = pg.BarGraphItem(
                x0=empty,
                y=empty,
                width=empty,
                height=BAR_HEIGHT,
                brush=colors.components[name],
                pen=pg.mkPen(colors.background, width=1),
            )
            pi.addItem(bar)
            self.segments[name] = bar
            self.legend.addItem(bar, COMPONENT_SHORT_LABELS[name])
        #: A service's unused KV pool (what the engine preallocates beyond the requests in flight),
        #: hatched after the stack; in the legend only while some row has it.
        self.pool_bar = pg.BarGraphItem(
            x0=empty,
            y=empty,
            width=empty,
            height=BAR_HEIGHT,
            brush=_pool_brush(colors),
            pen=_pool_pen(colors),
        )
        pi.addItem(self.pool_bar)
        #: The outline around the recommended setup's bar.
        self.recommended_outline = pg.BarGraphItem(
            x0=empty,
            y=empty,
            width=empty,
            height=OUTLINE_HEIGHT,
            brush=pg.mkBrush(None),
            pen=pg.mkPen(colors.text, width=2),
        )
        pi.addItem(self.recommended_outline)
        self.capacity = pg.PlotCurveItem(
            x=empty, y=empty, connect="pairs", pen=pg.mkPen(colors.capacity, width=3)
        )
        pi.addItem(self.capacity)
        self.legend.addItem(self.capacity, "Capacity")
        #: Host RAM the setup needs per GPU (offloaded training state, layers kept off the GPU),
        #: drawn right of the capacity mark; in the legend only while some row has it.
        self.host_bar = pg.BarGraphItem(
            x0=empty,
            y=empty,
            width=empty,
            height=HOST_BAR_HEIGHT,
            brush=pg.mkBrush(colors.other),
            pen=pg.mkPen(colors.other_edge, width=1, style=Qt.PenStyle.DashLine),
        )
        pi.addItem(self.host_bar)
        self._outline_key = pg.BarGraphItem(
            x0=[0], y=[0], width=[1], height=1, brush=pg.mkBrush(None), pen=pg.mkPen(colors.text, width=2)
        )  # legend key only
        #: Verdict markers in a column right of the bars, one scatter item per verdict.
        self.markers: dict[str, pg.ScatterPlotItem] = {}
        for verdict in VERDICTS:
            symbol, label = _VERDICT_STYLE[verdict]
            color = colors.verdict(verdict)
            item = pg.ScatterPlotItem(
                x=empty,
                y=empty,
                symbol=symbol,
                size=11,
                brush=pg.mkBrush(color),
                pen=pg.mkPen(color, width=1.5),
            )
            pi.addItem(item)
            self.markers[verdict] = item
            self.legend.addItem(item, label)
        #: The entries always in the legend; the optional ones (KV pool, host RAM, recommended) are
        #: created on first use and parked, hidden, while not shown (see :meth:`_sync_legend`).
        self._base_legend = list(self.legend.items)
        self._optional_legend: dict[object, tuple[Any, Any]] = {}  # pyqtgraph (sample, label)

        #: Scrolls the rows when they do not all fit; its value is the top row.
        self.scroll_bar = QScrollBar(Qt.Orientation.Vertical)
        self.scroll_bar.setEnabled(False)
        self.scroll_bar.valueChanged.connect(self._on_scrolled)
        self.frame_layout.addWidget(self.scroll_bar)
        self.setMinimumHeight(MIN_HEIGHT_PX)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)  # the keyboard scrolls the rows too
        # A click on the plot gives the focus to the chart (Qt looks up the parents for a widget
        # that takes it). Not ``plot.setFocusProxy(self)``: PySide keeps the proxy alive from the
        # plot, a reference cycle that left every chart to the cyclic garbage collector (see
        # ``_base.weak_callback``).
        self.plot.setFocusPolicy(Qt.FocusPolicy.NoFocus)

        self._rows: list[Candidate] = []
        self._labels: list[str] = []
        self._tooltips: dict[int, str] = {}
        self._recommended_row: int | None = None
        self._selected_row: int | None = None
        self._x_max = 1.0
        self._axis_width = -1
        #: (x range, top row, rows shown, y range) of the last layout, to skip an unchanged one.
        self._view: tuple[float, int, int, tuple[float, float]] | None = None
        self._ticks: list[list[tuple[float, str]]] | None = None
        scene = self.plot.scene()
        scene.sigMouseMoved.connect(self._on_mouse_moved)
        scene.sigMouseClicked.connect(self._on_mouse_clicked)
        self.view_box.sigResized.connect(self._update_rows_view)
        self._wheel_filter = _WheelToScroll(self.scroll_bar)
        self.plot.viewport().installEventFilter(self._wheel_filter)
        self.set_candidates([])

    # -- public API -----------------------------------------------------------------------
    def show_estimate(self, est: Estimate | None, selected: str | None = None) -> None:
        """One row per GPU type, best first (``est.best_per_gpu()``), the recommendation starred
        and outlined, ``selected``'s row highlighted (``est=None``: the empty state)."""
        if est is None:
            self.set_candidates([])
            return
        rows = list(est.best_per_gpu().values())
        chosen = est.candidate(selected) if selected else None
        if chosen is not None:  # the row of the selected setup's GPU shows that setup
            rows = [chosen if c.gpu.id == chosen.gpu.id else c for c in rows]
        decision = est.decision
        self.set_candidates(
            rows, recommended_key=decision.recommended_key if decision else None, selected_key=selected
        )

    def set_candidates(
        self,
        candidates: Iterable[Candidate],
        recommended_key: str | None = None,
        selected_key: str | None = None,
    ) -> None:
        """Show one row per candidate, top to bottom in the given order; star and outline
        ``recommended_key``, highlight ``selected_key``.

        Candidates with a non-finite number are skipped (never drawn as NaN).
        """
        candidates = list(candidates)
        self._last_input = (candidates, recommended_key, selected_key)
        rows, gib = [], []
        for c in candidates:
            g = c.memory.gib()
            if finite(c.capacity_gib, c.headroom_gib, *g.values()):
                rows.append(c)
                gib.append(g)
        self._rows = rows
        self._tooltips = {}  # built on hover: most updates are never hovered
        keys = [c.key for c in rows]
        self._recommended_row = keys.index(recommended_key) if recommended_key in keys else None
        previous_selected = self._selected_row
        self._selected_row = keys.index(selected_key) if selected_key in keys else None
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

        # A service: the unused part of the engine's KV pool, after the stack (0 for a batch job).
        pool = np.array([_pool_gib(c) for c in rows], dtype=float)
        has_pool = bool(n and np.max(pool) > 0)
        if has_pool:
            self.pool_bar.setOpts(x0=x0.copy(), y=ys, width=pool, height=BAR_HEIGHT)
        else:
            self.pool_bar.setOpts(x0=np.zeros(0), y=np.zeros(0), width=np.zeros(0))
        self._set_kv_label(any(c.serving is not None for c in rows))
        x0 = x0 + pool
        host = np.array([c.memory.host / 2**30 for c in rows], dtype=float)
        gap = float(max(np.max(x0), np.max(caps))) * 0.02 if n else 0.0
        host_x0 = np.maximum(x0, caps) + gap
        has_host = bool(n and np.max(host) > 0)
        if has_host:
            self.host_bar.setOpts(x0=host_x0, y=ys, width=host, height=HOST_BAR_HEIGHT)
        else:
            self.host_bar.setOpts(x0=np.zeros(0), y=np.zeros(0), width=np.zeros(0))
        # Round the axis end up to a 1-1.5-2-3-5-7.5 step: small input changes then keep the
        # same range, so the cached axis and grid are reused instead of re-laid out.
        ends = np.maximum(x0, caps) + (host + gap if has_host else 0.0)
        x_max = _nice_ceiling(float(np.max(ends)) * 1.04) if n else 1.0
        self._x_max = x_max
        marker_x = x_max * 1.035
        for verdict, item in self.markers.items():
            idx = [i for i, c in enumerate(rows) if c.verdict == verdict]
            item.setData(x=np.full(len(idx), marker_x), y=ys[idx] if idx else np.zeros(0))
        r = self._recommended_row
        if r is None:
            self.recommended_outline.setOpts(x0=np.zeros(0), y=np.zeros(0), width=np.zeros(0))
        else:
            pad = x_max * 0.004
            self.recommended_outline.setOpts(
                x0=np.array([-pad]),
                y=np.array([float(r)]),
                width=np.array([max(x0[r], caps[r]) + 2 * pad]),
                height=OUTLINE_HEIGHT,
            )
        s = self._selected_row
        if s is None:
            self.highlight.setOpts(x0=np.zeros(0), y=np.zeros(0), width=np.zeros(0))
        else:
            self.highlight.setOpts(
                x0=np.array([0.0]), y=np.array([float(s)]), width=np.array([x_max * 1.07]), height=1.0
            )

        labels = [
            (f"{RECOMMENDED_MARK} " if i == r else "") + short_gpu_name(c.gpu.name, c.gpu_count)
            for i, c in enumerate(rows)
        ]
        self._labels = labels
        ticks = [[(float(i), s) for i, s in enumerate(labels)], []]
        if ticks != self._ticks:  # re-laying out 27 tick labels is the costliest part
            self._ticks = ticks
            self.y_axis.setTicks(ticks)
        metrics = QFontMetrics(tick_font())
        axis_width = max([metrics.horizontalAdvance(s) for s in labels], default=40) + 16
        if axis_width != self._axis_width:  # a relayout repaints the whole window: only when needed
            self._axis_width = axis_width
            self.y_axis.setWidth(axis_width)

        self._sync_legend(
            [
                (self.pool_bar, POOL_LABEL, has_pool),
                (self.host_bar, HOST_LABEL, has_host),
                (self._outline_key, f"{RECOMMENDED_MARK} Recommended", r is not None),
            ]
        )
        if not rows:
            self._view = None
            self.scroll_bar.setEnabled(False)
            self._show_message(EMPTY_MESSAGE)
            return
        self._hide_message()
        self._update_rows_view()
        if self._selected_row is not None and self._selected_row != previous_selected:
            self.scroll_to_row(self._selected_row)
        self._set_notice("" if any(c.fits for c in rows) else NOTHING_FITS_NOTICE, warning=True)

    def _sync_legend(self, optional: list[tuple[object, str, bool]]) -> None:
        """Show the optional legend entries that are wanted, in the given order after the permanent
        ones (only when that changes: the legend re-lays out).

        An entry no longer wanted is taken out of the layout and hidden, never deleted: pyqtgraph's
        ``removeItem`` closes its label, and a closed label that Python later collects can still be
        sent a resize event and crash the process."""
        wanted = []
        for item, label, show in optional:
            if not show:
                continue
            entry = self._optional_legend.get(item)
            if entry is None:
                self.legend.addItem(item, label)
                entry = self._optional_legend[item] = self.legend.items.pop()
            wanted.append(entry)
        entries = self._base_legend + wanted
        if [id(e[0]) for e in self.legend.items] == [id(e[0]) for e in entries]:
            return
        layout = self.legend.layout
        for i in range(layout.count() - 1, -1, -1):
            layout.removeAt(i)
        for sample, label in self._optional_legend.values():
            sample.hide()
            label.hide()
            # Still the legend's children, owned by it (Qt deletes them with the chart, once).
            sample.setParentItem(self.legend)
            label.setParentItem(self.legend)
        self.legend.items = list(entries)
        self.legend.rowCount = math.ceil(len(entries) / self.legend.columnCount)
        for sample, label in entries:
            sample.show()
            label.show()
            self.legend._addItemToLayout(sample, label)  # pyqtgraph 0.14: places one entry in the grid
        self.legend.updateSize()
        self._fit_legend()

    def _set_kv_label(self, service: bool) -> None:
        """The KV cache's legend entry: "KV cache in flight" for a service (only when that changes)."""
        text = KV_IN_FLIGHT_LABEL if service else COMPONENT_SHORT_LABELS["kv_cache"]
        for sample, label in self.legend.items:
            if sample.item is self.segments["kv_cache"] and label.text != text:
                label.setText(text)
                self._fit_legend()

    def row_count(self) -> int:
        return len(self._rows)

    def candidate_at(self, row: int) -> Candidate:
        """The candidate drawn in ``row`` (0 = top)."""
        return self._rows[row]

    def row_labels(self) -> list[str]:
        """The GPU names on the axis, top to bottom (the recommended one starred)."""
        return list(self._labels)

    def recommended_row(self) -> int | None:
        """The row of the recommended setup (``None``: not on show)."""
        return self._recommended_row

    def selected_row(self) -> int | None:
        """The highlighted row (``None``: the selection is not on show)."""
        return self._selected_row

    def visible_rows(self) -> range:
        """The rows inside the view now (all of them when they fit)."""
        if self._view is None:
            return range(0)
        top, count = self._view[1], self._view[2]
        return range(top, min(len(self._rows), top + count))

    def rows_that_fit(self) -> int:
        """How many rows the plot's current height shows at a readable pitch."""
        return max(1, int(self.view_box.height() // row_pitch_px()))

    def scroll_to_row(self, row: int) -> None:
        """Scroll so that ``row`` is in view (nothing to do when every row fits)."""
        if not self.scroll_bar.isEnabled():
            return
        top, count = self.scroll_bar.value(), self.scroll_bar.pageStep()
        if row < top:
            self.scroll_bar.setValue(row)
        elif row >= top + count:
            self.scroll_bar.setValue(row - count + 1)

    def tooltip_for_row(self, row: int) -> str:
        """The hover text of ``row``: every component, the totals, capacity and headroom (rich text)."""
        text = self._tooltips.get(row)
        if text is None:
            text = self._tooltips[row] = _tooltip(
                self._rows[row], self.colors, recommended=row == self._recommended_row
            )
        return text

    def row_at(self, scene_pos: QPointF) -> int | None:
        """The row under a scene position (over the bars or the GPU name), else ``None``."""
        if not self._rows or self._message.isVisible():
            return None
        vb_rect = self.view_box.sceneBoundingRect()
        axis_rect = self.y_axis.sceneBoundingRect()
        if not (
            axis_rect.left() <= scene_pos.x() <= vb_rect.right()
            and vb_rect.top() <= scene_pos.y() <= vb_rect.bottom()
        ):
            return None
        y = self.view_box.mapSceneToView(scene_pos).y()
        row = round(y)
        return row if 0 <= row < len(self._rows) and abs(y - row) <= 0.5 else None

    def sizeHint(self) -> QSize:  # Qt override
        hint = super().sizeHint()
        frame = 110 + 2 * QFontMetrics(tick_font()).height()  # legend rows, x axis and its title
        hint.setHeight(frame + row_pitch_px() * min(max(len(self._rows), 3), HINT_ROWS))
        hint.setWidth(max(hint.width(), 760))
        return hint

    def minimumSizeHint(self) -> QSize:  # Qt override
        hint = super().minimumSizeHint()
        hint.setHeight(MIN_HEIGHT_PX)
        return hint

    def keyPressEvent(self, event: QKeyEvent) -> None:  # Qt override
        """Arrow keys, Page Up/Down, Home and End scroll the rows (when they do not all fit)."""
        bar = self.scroll_bar
        steps: dict[int, int] = {  # QKeyEvent.key() is an int
            Qt.Key.Key_Up: -1,
            Qt.Key.Key_Down: 1,
            Qt.Key.Key_PageUp: -bar.pageStep(),
            Qt.Key.Key_PageDown: bar.pageStep(),
        }
        step = steps.get(event.key())
        if bar.isEnabled() and step is not None:
            bar.setValue(bar.value() + step)
        elif bar.isEnabled() and event.key() in (Qt.Key.Key_Home, Qt.Key.Key_End):
            bar.setValue(bar.minimum() if event.key() == Qt.Key.Key_Home else bar.maximum())
        else:
            super().keyPressEvent(event)

    # -- rows in view ------------------------------------------------------------------------
    def _update_rows_view(self, *_args: object) -> None:
        """Show every row when they fit at a readable pitch, else a window of rows and the scroll bar."""
        n = len(self._rows)
        if not n or self._message.isVisible():
            return
        fit = self.rows_that_fit()
        if n <= fit:
            top, count = 0, n
            self.scroll_bar.setEnabled(False)
            self.scroll_bar.setRange(0, 0)
        else:
            count = fit
            self.scroll_bar.blockSignals(True)
            self.scroll_bar.setRange(0, n - count)
            self.scroll_bar.setPageStep(count)
            self.scroll_bar.setEnabled(True)
            self.scroll_bar.blockSignals(False)
            top = self.scroll_bar.value()
        if n <= fit:
            # A few rows (one GPU type) keep at most about twice the readable pitch, from the
            # top: one row stretched over the whole plot was a block, not a bar by its capacity.
            y_range = (-0.6, max(n, -(-fit // 2)) - 0.4)
        else:
            y_range = (top - 0.5, top + count - 0.5)
        view = (self._x_max, top, count, y_range)
        if view == self._view:
            return
        self._view = view
        self.view_box.setRange(xRange=(0, self._x_max * 1.07), yRange=y_range, padding=0)

    def _on_scrolled(self, _value: int) -> None:
        self._update_rows_view()

    def _render_size(self, width: int, height: int) -> tuple[int, int]:
        # A report shows every row: grow the height until they all fit at a readable pitch.
        self.layout_scene(width, height)
        missing = len(self._rows) - self.rows_that_fit()
        if missing > 0 and not self._message.isVisible():
            height += missing * row_pitch_px() + 2
        elif missing < 0 and not self._message.isVisible():
            # Few rows (one GPU type): shrink to them, keeping room for two, so a bar keeps a
            # bar's proportions instead of filling the figure (the view then draws each row at
            # most about twice the readable pitch, as in the window).
            spare = min(-missing, self.rows_that_fit() - 2)
            if spare > 0:
                height -= spare * row_pitch_px()
        return width, height

    def _after_layout(self) -> None:
        self._update_rows_view()

    def _apply_fonts(self) -> None:
        # the name axis and the row pitch follow the font: lay the same rows out again
        if not hasattr(self, "_last_input"):
            return  # still being built
        self._axis_width = -1
        self._ticks = None
        self._view = None
        self.set_candidates(*self._last_input)
        self.updateGeometry()

    # -- colours ---------------------------------------------------------------------------
    def _apply_colors(self, colors: ChartColors) -> None:
        self.highlight.setOpts(brush=colors.highlight)
        self.track.setOpts(brush=colors.track)
        for name, bar in self.segments.items():
            bar.setOpts(brush=colors.components[name], pen=pg.mkPen(colors.background, width=1))
        outline = pg.mkPen(colors.text, width=2)
        self.recommended_outline.setOpts(pen=outline)
        self._outline_key.setOpts(pen=outline)
        self.capacity.setPen(pg.mkPen(colors.capacity, width=3))
        self.pool_bar.setOpts(brush=_pool_brush(colors), pen=_pool_pen(colors))
        self.host_bar.setOpts(
            brush=pg.mkBrush(colors.other),
            pen=pg.mkPen(colors.other_edge, width=1, style=Qt.PenStyle.DashLine),
        )
        for verdict, item in self.markers.items():
            color = colors.verdict(verdict)
            item.setBrush(pg.mkBrush(color))
            item.setPen(pg.mkPen(color, width=1.5))
        self._tooltips = {}
        self.legend.update()

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

    def _on_mouse_clicked(self, event: Any) -> None:  # a pyqtgraph MouseClickEvent
        if event.button() != Qt.MouseButton.LeftButton:
            return
        row = self.row_at(event.scenePos())
        if row is not None:
            c = self._rows[row]
            self.gpuClicked.emit(c.gpu.id)
            self.candidateSelected.emit(c.key)


class _WheelToScroll(QObject):
    """Turns the mouse wheel over the chart into row scrolling (the plot itself never zooms)."""

    def __init__(self, scroll_bar: QScrollBar) -> None:
        super().__init__(scroll_bar)
        self._bar = scroll_bar
        self._partial = 0

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # Qt override
        if event.type() != QEvent.Type.Wheel or not isinstance(event, QWheelEvent):
            return False
        if not self._bar.isEnabled():
            return True  # nothing to scroll; never let the view zoom
        self._partial += event.angleDelta().y()
        notches = int(self._partial / 120)
        if notches:
            self._partial -= notches * 120
            self._bar.setValue(self._bar.value() - notches * WHEEL_ROWS)
        return True


def _pool_gib(c: Candidate) -> float:
    """The unused part of a service's preallocated KV pool, GiB (0 for a batch job)."""
    memory = c.serving.memory if c.serving is not None else None
    return memory.pool_reserved / 2**30 if memory is not None else 0.0


def _pool_brush(colors: ChartColors) -> QBrush:
    """Hatched in the KV cache's colour: memory taken but not in use."""
    return QBrush(QColor(colors.components["kv_cache"]).darker(125), Qt.BrushStyle.BDiagPattern)


def _pool_pen(colors: ChartColors) -> QPen:
    pen: QPen = pg.mkPen(colors.components["kv_cache"], width=1)
    return pen


def _tooltip(c: Candidate, colors: ChartColors = LIGHT, recommended: bool = False) -> str:
    g = c.memory.gib()
    setup = f"{c.gpu_count} × {c.gpu.name}" + (f", {c.setup_label}" if c.gpu_count > 1 else "")
    memory = c.serving.memory if c.serving is not None else None
    labels = dict(COMPONENT_LABELS)
    if memory is not None:
        labels["kv_cache"] = (
            f"{KV_IN_FLIGHT_LABEL} ({memory.concurrency:,} × {memory.tokens_per_sequence:,} tokens)"
        )
    rows = [(labels[name], fmt_gib(g[name])) for name in COMPONENT_ORDER if g[name] > 0]
    used = c.utilization * 100
    short = fmt_gib(abs(c.headroom_gib))
    rows += [
        ("<b>Total per GPU</b>", f"<b>{fmt_gib(g['device_total'])}</b>"),
        ("Tensors (PyTorch peak)", fmt_gib(g["tensors_total"])),
    ]
    if memory is not None and memory.setting:
        rows.append((f"{POOL_LABEL}, unused", fmt_gib(memory.pool_reserved / 2**30)))
        rows.append(
            (f"Engine takes ({memory.setting} {memory.fraction:g})", fmt_gib(memory.engine_total / 2**30))
        )
    if c.memory.host > 0:
        rows.append((HOST_LABEL + " per GPU", fmt_gib(c.memory.host / 2**30)))
    rows += [
        ("Usable capacity", fmt_gib(c.capacity_gib)),
        (
            "Headroom" if c.headroom_gib >= 0 else "Short by",
            f"{short} ({used:.0f}% used)" if finite(used) else short,
        ),
    ]
    if getattr(c, "misfit", ""):
        rows.append(("Does not fit", html.escape(c.misfit)))
    color = colors.verdict(c.verdict)
    if recommended:
        rows.append(("", f"{RECOMMENDED_MARK} recommended"))
    body = "".join(
        f"<tr><td>{label}</td><td align='right'>&nbsp;&nbsp;{value}</td></tr>" for label, value in rows
    )
    return (
        f"<b>{html.escape(setup)}</b><br><span style='color:{color}'>{html.escape(c.verdict)}</span>"
        f"<table cellspacing='0'>{body}</table>"
    )


def _preview_widget(est: Estimate) -> VramChart:
    chart = VramChart()
    chart.show(est, est.decision.recommended_key if est.decision else None)
    chart.gpuClicked.connect(lambda gpu_id: print("clicked", gpu_id))
    return chart


def _nice_ceiling(value: float) -> float:
    """The smallest of 1, 1.5, 2, 3, 5, 7.5 x 10^k that is at least ``value`` (value > 0)."""
    if not value > 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1.0, 1.5, 2.0, 3.0, 5.0, 7.5, 10.0):
        candidate = step * 10.0**exponent
        if candidate >= value:
            return candidate
    return 10.0 ** (exponent + 1)


if __name__ == "__main__":
    from gpuadvisor.views.charts._preview import preview

    preview(_preview_widget)
