"""The ranking table: every candidate of the estimate, sortable, cheapest fitting first.

The table is redrawn on every input change, so it is built for speed: the model filters rows
itself (no per-row Python filter callback in the proxy), caches each row's texts, updates rows
in place, and the view paints the visible cells in one pass from that cache (see
:class:`RankingView`).
"""

from __future__ import annotations

import datetime as _dt
import math

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QRect, QSortFilterProxyModel, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPalette
from PySide6.QtWidgets import QStyle, QTableView

from ..core.estimation.estimate import Candidate, Estimate
from ..core.units import format_hours, format_usd
from ..core.formats.user_catalog import stale_price

COL_GPU, COL_COUNT, COL_PAR, COL_VERDICT, COL_NEED, COL_CAP, COL_HEADROOM, COL_TPS, COL_TIME, COL_COST, \
    COL_PER_M, COL_DEADLINE, COL_BUDGET, COL_PARETO, COL_PRICE_DATE = range(15)
HEADERS = ["GPU", "GPUs", "Parallelism", "Fit", "Need/GPU (GiB)", "Capacity (GiB)", "Headroom (GiB)",
           "Tokens/s", "Job time", "Cost", "$ / 1M tokens", "Deadline", "Budget", "Pareto", "Prices as of"]
TOOLTIPS = ["GPU model", "Number of GPUs", "How the GPUs share the work",
            "fits, tight (over 95% of memory) or does not fit", "Device memory each GPU needs (nvidia-smi view)",
            "Usable memory of one GPU", "Capacity minus need", "Aggregate tokens per second (output tokens in "
            "inference, trained tokens in training)", "Expected job time (low-high range in the tooltip)",
            "Job cost range, low to high (cloud price range x speed range)", "Expected cost per million tokens",
            "Meets the deadline?", "Within the budget?", "On the cost-versus-time Pareto frontier",
            "Date of the catalog's prices for this GPU; 'stale' when older than the age set in the catalog editor"]
ROLE_SORT = Qt.ItemDataRole.UserRole + 1
ROLE_KEY = Qt.ItemDataRole.UserRole + 2
_BAD = QBrush(QColor("#b00020"))
_TIGHT = QBrush(QColor("#b36b00"))
_GOOD = QBrush(QColor("#1b7f3b"))
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_ROLES = frozenset({Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.TextAlignmentRole,
                    Qt.ItemDataRole.ToolTipRole, ROLE_SORT, ROLE_KEY})


def _yes_no(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "no")


class RankingModel(QAbstractTableModel):
    """Rows: the ranking (fitting, by cost) followed by the candidates that do not fit."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[Candidate] = []
        self.fitting_only = True
        self.stale_months = 6
        self.today = _dt.date.today()
        self._est: Estimate | None = None
        self._calibrated: frozenset[str] = frozenset()  # GPUs whose figures use the user's calibration
        self._all: list[Candidate] | None = None
        self._texts: dict[int, list[str]] = {}
        self._row_of: dict[str, int] | None = None

    def set_estimate(self, est: Estimate | None) -> None:
        self._est = est
        self._calibrated = frozenset(est.calibrated_gpus) if est is not None else frozenset()
        self._all = None  # every candidate, built only when "only setups that fit" is off
        self._refill()

    def set_fitting_only(self, value: bool) -> None:
        """Show only the setups that fit (the default) or every candidate."""
        if value != self.fitting_only:
            self.fitting_only = value
            self._refill()

    def _refill(self) -> None:
        # Rows are updated in place (dataChanged plus rows inserted or removed at the end) rather
        # than by a model reset, which would also repaint the header and reset the scroll bars.
        rows = self._rows_to_show()
        old, new = len(self.rows), len(rows)
        if new < old:
            self.beginRemoveRows(QModelIndex(), new, old - 1)
            self.rows = self.rows[:new]
            self.endRemoveRows()
        self._texts = {}
        self._row_of = None
        if new > old:
            self.beginInsertRows(QModelIndex(), old, new - 1)
            self.rows = rows
            self.endInsertRows()
        self.rows = rows
        if min(old, new):
            self.dataChanged.emit(self.index(0, 0), self.index(min(old, new) - 1, len(HEADERS) - 1))

    def _rows_to_show(self) -> list[Candidate]:
        """The ranking (fitting setups, cheapest first), then, when every setup is shown, the rest."""
        est = self._est
        if est is None:
            return []
        if self.fitting_only:
            return list(est.ranking)
        if self._all is None:
            ranked = list(est.ranking)
            seen = {id(c) for c in ranked}
            rest = sorted((c for c in est.candidates if id(c) not in seen), key=lambda c: (not c.fits, c.utilization))
            self._all = ranked + rest
        return list(self._all)

    def row_of(self, key: str) -> int | None:
        """The row showing the candidate with this key, or ``None`` (filtered out or unknown)."""
        if self._row_of is None:
            self._row_of = {c.key: i for i, c in enumerate(self.rows)}
        return self._row_of.get(key)

    def texts(self, row: int) -> list[str]:
        """The display texts of one row (cached until the next estimate)."""
        texts = self._texts.get(row)
        if texts is None:
            c = self.rows[row]
            texts = self._texts[row] = [self._text(c, k) for k in range(len(HEADERS))]
        return texts

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if orientation == Qt.Orientation.Horizontal:
            if role == Qt.ItemDataRole.DisplayRole:
                return HEADERS[section]
            if role == Qt.ItemDataRole.ToolTipRole:
                return TOOLTIPS[section]
        elif role == Qt.ItemDataRole.DisplayRole:
            return str(section + 1)
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        # Views ask for a dozen roles per cell on every paint: answer the common case from a
        # per-row cache and return early for roles this model does not provide.
        if role not in _ROLES or not index.isValid():
            return None
        row, col = index.row(), index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self.texts(row)[col]
        c = self.rows[row]
        if role == ROLE_KEY:
            return c.key
        if role == ROLE_SORT:
            return self._sort_value(c, col)
        if role == Qt.ItemDataRole.ForegroundRole:
            if col == COL_PRICE_DATE:
                return _TIGHT if self.is_stale(c) else None
            return verdict_brush(c) if col == COL_VERDICT else None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return alignment(col)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(c, col)
        return None

    def _text(self, c: Candidate, col: int) -> str:
        perf, cost = c.performance, c.cost
        if col == COL_GPU:
            calibrated = self._calibrated
            return f"{c.gpu.name} (calibrated)" if calibrated and c.gpu.id in calibrated else c.gpu.name
        if col == COL_COUNT:
            return str(c.gpu_count)
        if col == COL_PAR:
            return "single GPU" if c.gpu_count == 1 else c.parallelism
        if col == COL_VERDICT:
            return c.verdict
        if col == COL_PRICE_DATE:
            date = c.gpu.price_as_of or "undated"
            return f"{date} (stale)" if self.is_stale(c) else date
        if col == COL_NEED:
            return f"{c.memory.device_total / 2**30:,.1f}"
        if col == COL_CAP:
            return f"{c.capacity_gib:,.1f}"
        if col == COL_HEADROOM:
            return f"{c.headroom_gib:+,.1f}"
        if perf is None or cost is None:
            return "-"
        if col == COL_TPS:
            return f"{perf.tokens_per_s.expected:,.0f}"
        if col == COL_TIME:
            return format_hours(cost.job_hours.expected)
        if col == COL_COST:
            return "-" if cost.cost_usd is None else \
                f"{format_usd(cost.cost_usd.low)} – {format_usd(cost.cost_usd.high)}"
        if col == COL_PER_M:
            return "-" if cost.usd_per_million_tokens is None else format_usd(cost.usd_per_million_tokens)
        if col == COL_DEADLINE:
            return _yes_no(cost.meets_deadline)
        if col == COL_BUDGET:
            return _yes_no(cost.within_budget)
        if col == COL_PARETO:
            return "yes" if c.pareto else ""
        return ""

    def is_stale(self, c: Candidate) -> bool:
        """Are the GPU's prices older than ``stale_months`` (or undated)? The catalog editor's rule."""
        return stale_price(c.gpu, self.today, self.stale_months)

    def _sort_value(self, c: Candidate, col: int):
        inf = math.inf
        perf, cost = c.performance, c.cost
        values = {
            COL_GPU: c.gpu.name, COL_COUNT: c.gpu_count, COL_PAR: c.parallelism,
            COL_VERDICT: {"fits": 0, "tight": 1}.get(c.verdict, 2), COL_NEED: c.memory.device_total,
            COL_CAP: c.capacity_gib, COL_HEADROOM: c.headroom_gib,
            COL_TPS: perf.tokens_per_s.expected if perf else -inf,
            COL_TIME: cost.job_hours.expected if cost else inf,
            COL_COST: cost.cost_usd.expected if cost and cost.cost_usd else inf,
            COL_PER_M: cost.usd_per_million_tokens if cost and cost.usd_per_million_tokens is not None else inf,
            COL_DEADLINE: {True: 0, None: 1, False: 2}[cost.meets_deadline] if cost else 3,
            COL_BUDGET: {True: 0, None: 1, False: 2}[cost.within_budget] if cost else 3,
            COL_PARETO: 0 if c.pareto else 1,
            COL_PRICE_DATE: c.gpu.price_as_of or "",
        }
        return values[col]

    def _tooltip(self, c: Candidate, col: int) -> str:
        g = c.memory.gib()
        lines = [f"{c.gpu_count} x {c.gpu.name} ({c.parallelism}): {c.verdict}",
                 "Per GPU: " + ", ".join(f"{k.replace('_', ' ')} {g[k]:.2f}" for k in
                                         ("weights", "gradients", "optimizer", "activations", "kv_cache",
                                          "adapters", "overhead")) + " GiB",
                 f"Device total {g['device_total']:.2f} GiB of {c.capacity_gib:.1f} GiB"]
        if c.cost is not None:
            h = c.cost.job_hours
            lines.append(f"Job time {format_hours(h.low)} – {format_hours(h.high)}")
        if c.performance is not None:
            lines.append(f"Bound by {c.performance.bound}; compute in {c.performance.precision_used}")
        return "\n".join(lines)


def verdict_brush(c: Candidate) -> QBrush:
    return {"fits": _GOOD, "tight": _TIGHT}.get(c.verdict, _BAD)


def alignment(col: int) -> int:
    return _LEFT if col in (COL_GPU, COL_PAR, COL_VERDICT) else _RIGHT


class RankingProxy(QSortFilterProxyModel):
    """Sorts by the numeric sort role when the user clicks a column (the model filters)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setSortRole(ROLE_SORT)

    def lessThan(self, left, right) -> bool:  # noqa: N802
        a, b = left.data(ROLE_SORT), right.data(ROLE_SORT)
        try:
            return a < b
        except TypeError:
            return str(a) < str(b)


class RankingView(QTableView):
    """The ranking table view; it paints its visible cells itself, in one pass.

    A delegate is called from C++ once per cell with a copied style option, and on this class of
    machine that call alone cost more than drawing the cell (about 0.1 ms each, 6-7 ms per
    update). Painting the visible rows in one Python call from the model's cached texts looks the
    same: alternating rows, the selection, the grid, the verdict and stale-price colours, and
    text elided to the column. Selection, scrolling, sorting and tooltips stay Qt's.
    """

    def __init__(self, model: RankingModel, proxy: RankingProxy, parent=None) -> None:
        super().__init__(parent)
        self._model, self._proxy = model, proxy

    def paintEvent(self, event) -> None:  # noqa: N802 - Qt override
        model, proxy = self._model, self._proxy
        viewport = self.viewport()
        painter = QPainter(viewport)
        try:
            palette = self.palette()
            group = _ACTIVE if self.isActiveWindow() else _INACTIVE
            area = event.rect()
            painter.fillRect(area, palette.brush(group, QPalette.ColorRole.Base))
            rows = proxy.rowCount()
            if not rows:
                return
            first = max(self.rowAt(area.top()), 0)
            last = self.rowAt(area.bottom())
            last = rows - 1 if last < 0 else last
            columns = [(c, self.columnViewportPosition(c), self.columnWidth(c)) for c in range(len(HEADERS))
                       if not self.isColumnHidden(c)]
            columns = [(c, x, w) for c, x, w in columns if x + w > area.left() and x < area.right() + 1]
            selection = self.selectionModel()
            metrics = self.fontMetrics()
            max_char = metrics.maxWidth()
            text_color = palette.color(group, QPalette.ColorRole.Text)
            selected_color = palette.color(group, QPalette.ColorRole.HighlightedText)
            highlight = palette.brush(group, QPalette.ColorRole.Highlight)
            alternate = palette.brush(group, QPalette.ColorRole.AlternateBase)
            grid = QColor(self.style().styleHint(QStyle.StyleHint.SH_Table_GridLineColor, None, self) & 0xFFFFFFFF)
            width = viewport.width()
            for r in range(first, last + 1):
                y, h = self.rowViewportPosition(r), self.rowHeight(r)
                index = proxy.index(r, 0)
                source_row = proxy.mapToSource(index).row()
                if not 0 <= source_row < len(model.rows):
                    continue
                texts = model.texts(source_row)
                selected = selection is not None and selection.isRowSelected(r, QModelIndex())
                if selected:
                    painter.fillRect(0, y, width, h, highlight)
                elif r % 2 and self.alternatingRowColors():
                    painter.fillRect(0, y, width, h, alternate)
                candidate = model.rows[source_row]
                for c, x, w in columns:
                    text = texts[c]
                    if not text:
                        continue
                    if selected:
                        painter.setPen(selected_color)
                    elif c == COL_VERDICT:
                        painter.setPen(verdict_brush(candidate).color())
                    elif c == COL_PRICE_DATE and text.endswith("(stale)"):
                        painter.setPen(_TIGHT.color())
                    else:
                        painter.setPen(text_color)
                    inner = w - 8
                    if len(text) * max_char > inner and metrics.horizontalAdvance(text) > inner:
                        text = metrics.elidedText(text, Qt.TextElideMode.ElideRight, inner)
                    painter.drawText(QRect(x + 4, y, inner, h), alignment(c), text)
            if self.showGrid():
                painter.setPen(grid)
                bottom = self.rowViewportPosition(last) + self.rowHeight(last) - 1
                for r in range(first, last + 1):
                    y = self.rowViewportPosition(r) + self.rowHeight(r) - 1
                    painter.drawLine(0, y, width, y)
                for _c, x, w in columns:
                    painter.drawLine(x + w - 1, 0, x + w - 1, bottom)
        finally:
            painter.end()


_ACTIVE = QPalette.ColorGroup.Active
_INACTIVE = QPalette.ColorGroup.Inactive
