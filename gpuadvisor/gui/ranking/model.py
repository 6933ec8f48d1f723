"""The ranking's rows and their texts: the core's decision, in words.

Rows are ``Estimate.best_per_gpu()`` (one best setup per GPU type, the recommended one first) or,
expanded, every candidate in the same order (:func:`gpuadvisor.core.estimation.recommendation.ordered`).
The marks, deadline and budget words are the core's (``Estimate.decision``,
``CostEstimate.deadline_status`` and ``budget_status``); figures are formatted with the report's
formatters, so the table, the CLI and the PDF write numbers the same way.
"""

from __future__ import annotations

import datetime as _dt
import math
from typing import Any

from PySide6.QtCore import (
    QAbstractTableModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    QSortFilterProxyModel,
    Qt,
)
from PySide6.QtGui import QBrush, QColor, QGuiApplication

from ...core.estimation.estimate import Candidate, Estimate
from ...core.estimation.memory import COMPONENTS
from ...core.estimation.recommendation import ordered
from ...core.formats.user_catalog import stale_price
from ...core.formatting import (
    NONE_MARK,
    TIMES,
    display_gpu_name,
    fmt_gib,
    fmt_hours,
    fmt_hours_range,
    fmt_rate,
    fmt_signed_gib,
    fmt_usd,
    fmt_usd_per_mtok,
    fmt_usd_range,
)
from ...core.presentation.wording import change_lines, summary_line
from .colors import TableColors, table_colors
from .serving_cells import SERVING_COLUMNS, serving_sort_value, serving_text
from .session_cells import SESSION_COLUMNS, session_sort_value, session_text

# Logical columns, in the order shown (the decision's figures first). The GPU stays column 0 and
# the price date the last one; the pick mark is moved in front of the GPU when shown.
(
    COL_GPU,
    COL_PICK,
    COL_SETUP,
    COL_COST,
    COL_RANGE,
    COL_TIME,
    COL_DEADLINE,
    COL_BUDGET,
    COL_VERDICT,
    COL_NEED,
    COL_HEADROOM,
    COL_TPS,
    COL_PER_M,
    COL_PRICE_DATE,
) = range(14)
_COLUMNS = {
    COL_GPU: ("GPU", "GPU model (the full name is in the row's tooltip)"),
    COL_PICK: (
        "Pick",
        ("★ the recommended setup; runner-up: the best setup of another GPU type that also meets the limits"),
    ),
    COL_SETUP: ("Setup", "How many GPUs and how they share the work"),
    COL_COST: ("Expected cost", "Expected job cost at the chosen price"),
    COL_RANGE: ("Cost range", "Job cost range, low to high (cloud price range x speed range)"),
    COL_TIME: ("Job time", "Expected job time, with its low-high range"),
    COL_DEADLINE: (
        "Deadline",
        (
            "meets: even the slow end of the time range meets the deadline; likely: the "
            "expected time does; at risk: it does not; — no deadline set"
        ),
    ),
    COL_BUDGET: (
        "Budget",
        (
            "within: even the expensive end of the cost range stays within the budget; likely: "
            "the expected cost does; over: it does not; — no budget set or no price"
        ),
    ),
    COL_VERDICT: ("Fit", "fits, tight (over 95% of memory) or does not fit"),
    COL_NEED: ("Need/GPU (GiB)", "Device memory each GPU needs (nvidia-smi view)"),
    COL_HEADROOM: ("Headroom (GiB)", "Usable memory of one GPU minus the need"),
    COL_TPS: (
        "Tokens/s",
        "Aggregate tokens per second (output tokens in inference, trained tokens in training)",
    ),
    COL_PER_M: ("$ / 1M tokens", "Expected cost per million tokens"),
    COL_PRICE_DATE: (
        "Prices as of",
        (
            "Date of the catalog's prices for this GPU; 'stale' when older than the "
            "age set in the catalog editor"
        ),
    ),
}
HEADERS = [_COLUMNS[c][0] for c in range(len(_COLUMNS))]
#: The columns a service (``workload.serving``) shows with the fleet's meaning (see .serving_cells).
_SERVING_NAMES = {
    COL_SETUP: "setup",
    COL_COST: "cost",
    COL_RANGE: "range",
    COL_TIME: "time",
    COL_DEADLINE: "deadline",
    COL_BUDGET: "budget",
    COL_TPS: "tps",
    COL_PER_M: "per_m",
}
TOOLTIPS = [_COLUMNS[c][1] for c in range(len(_COLUMNS))]
ROLE_SORT = Qt.ItemDataRole.UserRole + 1
ROLE_KEY = Qt.ItemDataRole.UserRole + 2
RECOMMENDED_MARK = "★"
RUNNER_UP_MARK = "runner-up"
# Short labels: the three boxes share one row, which must fit a laptop screen at 125%; the
# tooltips say the rest.
FITTING_FILTER_LABEL = "Fits only"
LIMITS_FILTER_LABEL = "Within limits only"
EXPAND_LABEL = "Every GPU count"
_NUMERIC = frozenset({COL_NEED, COL_HEADROOM, COL_TPS, COL_TIME, COL_COST, COL_RANGE, COL_PER_M})
_LEFT = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
_CENTER = int(Qt.AlignmentFlag.AlignCenter)
_ROLES = frozenset(
    {
        Qt.ItemDataRole.DisplayRole,
        Qt.ItemDataRole.ForegroundRole,
        Qt.ItemDataRole.TextAlignmentRole,
        Qt.ItemDataRole.ToolTipRole,
        ROLE_SORT,
        ROLE_KEY,
    }
)
_ROOT = QModelIndex()  # the invalid index: a table's rows have no parent
_DEADLINE_ORDER = {"meets": 0, "likely": 1, None: 2, "at risk": 3}
_BUDGET_ORDER = {"within": 0, "likely": 1, None: 2, "over": 3}


def setup_words(c: Candidate) -> str:
    """``single GPU`` or ``4 × ddp``."""
    label = c.setup_label
    if c.gpu_count == 1 and label in ("none", "1 GPU"):
        return "single GPU"
    return f"{c.gpu_count} {TIMES} {label}"


def setup_name(c: Candidate) -> str:
    """The setup as a person names it: ``1 × NVIDIA H100 SXM5 80 GB`` or ``4 × AMD Instinct MI300X (ddp)``."""
    label = c.setup_label
    return (
        f"1 {TIMES} {c.gpu.name}"
        if c.gpu_count == 1 and label in ("none", "1 GPU")
        else f"{c.gpu_count} {TIMES} {c.gpu.name} ({label})"
    )


def cell_color(colors: TableColors, col: int, text: str) -> QColor | None:
    """The colour of a cell's text (None: the palette's text colour)."""
    if col in (COL_VERDICT, COL_DEADLINE, COL_BUDGET):
        return colors.tone(text)
    if col == COL_PRICE_DATE and text.endswith("(stale)"):
        return colors.stale
    return None


def alignment(col: int) -> int:
    if col == COL_PICK:
        return _CENTER
    return _RIGHT if col in _NUMERIC else _LEFT


class RankingModel(QAbstractTableModel):
    """Rows: one best setup per GPU type, or every setup when expanded, in the core's decision order.

    A bare model starts expanded (every setup, as a plain table of results); :class:`RankingTable`
    starts with one row per GPU type.
    """

    def __init__(self, parent: QObject | None = None, expanded: bool = True) -> None:
        super().__init__(parent)
        self.rows: list[Candidate] = []
        self.expanded = expanded
        self.fitting_only = True
        self.within_limits_only = False
        self.stale_months = 6
        self.today = _dt.date.today()
        self._est: Estimate | None = None
        self._calibrated: frozenset[str] = frozenset()  # GPUs whose figures use the user's calibration
        self._recommended: str | None = None
        self._runner_up: str | None = None
        self._all: list[Candidate] | None = None
        self._texts: dict[int, list[str]] = {}
        self._row_of: dict[str, int] | None = None
        self._serving = False  # a service: some columns show the fleet (see .serving_cells)
        self._session = False  # a session on the user's machine: the session's figures (.session_cells)

    @property
    def estimate(self) -> Estimate | None:
        return self._est

    def set_estimate(self, est: Estimate | None) -> None:
        self._est = est
        self._calibrated = frozenset(est.calibrated_gpus) if est is not None else frozenset()
        decision = est.decision if est is not None else None
        self._recommended = decision.recommended_key if decision is not None else None
        self._runner_up = decision.runner_up_key if decision is not None else None
        self._all = None  # every setup in decision order, built only when expanded
        serving = est is not None and est.scenario.workload.serving is not None
        session = est is not None and est.session
        if (serving, session) != (self._serving, self._session):
            self._serving, self._session = serving, session
            self.headerDataChanged.emit(Qt.Orientation.Horizontal, 0, len(HEADERS) - 1)
        self._refill()

    def set_expanded(self, value: bool) -> None:
        """One row per GPU type (False, the default) or every GPU count and parallelism (True)."""
        if value != self.expanded:
            self.expanded = value
            self._refill()

    def set_fitting_only(self, value: bool) -> None:
        """Show only the setups that fit (the default) or also those that do not."""
        if value != self.fitting_only:
            self.fitting_only = value
            self._refill()

    def set_within_limits_only(self, value: bool) -> None:
        """Hide the setups that miss the deadline or the budget (off by default)."""
        if value != self.within_limits_only:
            self.within_limits_only = value
            self._refill()

    def set_stale_months(self, months: int) -> None:
        """Prices older than this many months are flagged stale (the catalog editor's setting)."""
        if months != self.stale_months:
            self.stale_months = months
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
        est = self._est
        if est is None:
            return []
        if self.expanded:
            if self._all is None:
                self._all = ordered(est.candidates)  # the core's order, over every setup
            rows = self._all
        else:
            rows = list(est.best_per_gpu().values())
        if self.fitting_only:
            rows = [c for c in rows if c.fits]
        if self.within_limits_only:
            rows = [
                c
                for c in rows
                if c.fits
                and (c.cost is None or c.cost.workable)
                and (c.serving is None or (c.serving.meets_slo and c.serving.status != "at risk"))
            ]
        return list(rows)

    def row_of(self, key: str) -> int | None:
        """The row showing the candidate with this key, or ``None`` (filtered out or unknown)."""
        if self._row_of is None:
            self._row_of = {c.key: i for i, c in enumerate(self.rows)}
        return self._row_of.get(key)

    def mark(self, c: Candidate) -> str:
        """``★`` for the recommended setup, ``runner-up`` for the runner-up, else empty."""
        key = c.key
        return (
            RECOMMENDED_MARK if key == self._recommended else RUNNER_UP_MARK if key == self._runner_up else ""
        )

    def texts(self, row: int) -> list[str]:
        """The display texts of one row (cached until the next estimate)."""
        texts = self._texts.get(row)
        if texts is None:
            c = self.rows[row]
            texts = self._texts[row] = [self._text(c, k) for k in range(len(HEADERS))]
        return texts

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(HEADERS)

    def headerData(
        self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
        if orientation == Qt.Orientation.Horizontal:
            fleet = SERVING_COLUMNS.get(_SERVING_NAMES.get(section, "")) if self._serving else None
            if self._session:
                fleet = SESSION_COLUMNS.get(_SERVING_NAMES.get(section, ""))
            if role == Qt.ItemDataRole.DisplayRole:
                return fleet[0] if fleet else HEADERS[section]
            if role == Qt.ItemDataRole.ToolTipRole:
                return fleet[1] if fleet else TOOLTIPS[section]
        elif role == Qt.ItemDataRole.DisplayRole:
            return str(section + 1)
        return None

    def data(
        self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole
    ) -> Any:
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
            return self._sort_value(row, c, col)
        if role == Qt.ItemDataRole.ForegroundRole:
            color = cell_color(table_colors(QGuiApplication.palette()), col, self.texts(row)[col])
            return QBrush(color) if color is not None else None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return alignment(col)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(c)
        return None

    def _text(self, c: Candidate, col: int) -> str:
        if self._serving and col in _SERVING_NAMES:
            fleet = self._est.serving_of(c, simulate=False) if self._est is not None else None
            return serving_text(c, _SERVING_NAMES[col], fleet) or NONE_MARK
        if self._session and self._est is not None and _SERVING_NAMES.get(col) in SESSION_COLUMNS:
            return session_text(self._est, c, _SERVING_NAMES[col]) or NONE_MARK
        perf, cost = c.performance, c.cost
        if col == COL_GPU:
            name = display_gpu_name(c.gpu.name)
            calibrated = self._calibrated
            return f"{name} (calibrated)" if calibrated and c.gpu.id in calibrated else name
        if col == COL_PICK:
            return self.mark(c)
        if col == COL_SETUP:
            return setup_words(c)
        if col == COL_VERDICT:
            return c.verdict
        if col == COL_PRICE_DATE:
            date = c.gpu.price_as_of or "undated"
            return f"{date} (stale)" if self.is_stale(c) else date
        if col == COL_NEED:
            return fmt_gib(c.memory.device_total / 2**30)
        if col == COL_HEADROOM:
            return fmt_signed_gib(c.headroom_gib)
        if perf is None or cost is None:
            return NONE_MARK
        if col == COL_TPS:
            rate = self._est.tokens_per_s(c) if self._est is not None else perf.tokens_per_s
            return fmt_rate(rate.expected if rate is not None else None)
        if col == COL_TIME:
            h = cost.job_hours
            return f"{fmt_hours(h.expected)} ({fmt_hours_range(h.low, h.high)})"
        if col == COL_COST:
            return NONE_MARK if cost.cost_usd is None else fmt_usd(cost.cost_usd.expected)
        if col == COL_RANGE:
            return (
                NONE_MARK if cost.cost_usd is None else fmt_usd_range(cost.cost_usd.low, cost.cost_usd.high)
            )
        if col == COL_PER_M:
            return fmt_usd_per_mtok(cost.usd_per_million_tokens)
        if col == COL_DEADLINE:
            return cost.deadline_status or NONE_MARK
        if col == COL_BUDGET:
            return cost.budget_status or NONE_MARK
        return ""

    def is_stale(self, c: Candidate) -> bool:
        """Are the GPU's prices older than ``stale_months`` (or undated)? The catalog editor's rule."""
        return stale_price(c.gpu, self.today, self.stale_months)

    def _sort_value(self, row: int, c: Candidate, col: int) -> object:  # a number, text or tuple
        """What a click on a column header sorts by: numbers, not the texts."""
        inf = math.inf
        perf, cost = c.performance, c.cost
        usd = cost.cost_usd if cost is not None else None
        if col == COL_PICK:
            return row  # the decision order
        if self._serving and col in _SERVING_NAMES:
            return serving_sort_value(c, _SERVING_NAMES[col])
        if self._session and self._est is not None and _SERVING_NAMES.get(col) in SESSION_COLUMNS:
            return session_sort_value(self._est, c, _SERVING_NAMES[col])
        if col == COL_GPU:
            return c.gpu.name
        if col == COL_SETUP:
            return (c.gpu_count, c.setup_label)
        if col == COL_VERDICT:
            return {"fits": 0, "tight": 1}.get(c.verdict, 2)
        if col == COL_NEED:
            return c.memory.device_total
        if col == COL_HEADROOM:
            return c.headroom_gib
        if col == COL_TPS:
            return perf.tokens_per_s.expected if perf else -inf
        if col == COL_TIME:
            return cost.job_hours.expected if cost else inf
        if col == COL_COST:
            return usd.expected if usd else inf
        if col == COL_RANGE:
            return (usd.low, usd.high) if usd else (inf, inf)
        if col == COL_PER_M:
            return cost.usd_per_million_tokens if cost and cost.usd_per_million_tokens is not None else inf
        if col == COL_DEADLINE:
            return _DEADLINE_ORDER[cost.deadline_status] if cost else 4
        if col == COL_BUDGET:
            return _BUDGET_ORDER[cost.budget_status] if cost else 4
        return c.gpu.price_as_of or ""

    def _tooltip(self, c: Candidate) -> str:
        g = c.memory.gib()
        mark = self.mark(c)
        lines = [
            f"{setup_name(c)}: {c.verdict}"
            + (" (recommended)" if mark == RECOMMENDED_MARK else " (runner-up)" if mark else ""),
            "Per GPU: " + ", ".join(f"{k.replace('_', ' ')} {g[k]:.2f}" for k in COMPONENTS) + " GiB",
            f"Device total {g['device_total']:.2f} GiB of {c.capacity_gib:.1f} GiB",
        ]
        if c.performance is not None:
            lines.append(f"Bound by {c.performance.bound}; compute in {c.performance.precision_used}")
        return "\n".join(lines)

    def empty_message(self) -> tuple[str, list[str]]:
        """Why no row is shown, as (heading, lines); ("", []) while rows are shown."""
        est = self._est
        if self.rows:
            return "", []
        if est is None:
            return "No estimate yet.", ["Describe the model and the workload to compare GPUs."]
        if not est.candidates:
            return "No setup was compared.", ["Choose at least one GPU to compare."]
        if not est.ranking:
            fixes = change_lines(est, limit=3)
            lines = (
                ["Cheapest fixes:", *(f"• {f}" for f in fixes)]
                if fixes
                else ["No standard change makes it fit."]
            )
            if self.fitting_only:
                lines.append(f"Untick '{FITTING_FILTER_LABEL}' to see how close each GPU comes.")
            return "Nothing fits on any GPU compared.", lines
        decision = est.decision
        if self.within_limits_only and decision is not None and decision.status == "limits missed":
            # The core's sentence: the limit missed, the closest setup and the cheapest change.
            return summary_line(est), [f"Untick '{LIMITS_FILTER_LABEL}' to see every setup that fits."]
        label = LIMITS_FILTER_LABEL if self.within_limits_only else FITTING_FILTER_LABEL
        return f"All setups are hidden by the filter: untick '{label}'.", []


class RankingProxy(QSortFilterProxyModel):
    """Sorts by the numeric sort role when the user clicks a column (the model filters)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.setSortRole(ROLE_SORT)

    def lessThan(
        self, left: QModelIndex | QPersistentModelIndex, right: QModelIndex | QPersistentModelIndex
    ) -> bool:
        a, b = left.data(ROLE_SORT), right.data(ROLE_SORT)
        try:
            return bool(a < b)
        except TypeError:
            return str(a) < str(b)
