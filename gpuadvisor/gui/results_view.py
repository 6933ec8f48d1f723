"""The results side of the window: the answer, the charts, the ranking and the selected setup.

Everything here displays the core's :class:`~gpuadvisor.core.estimation.results.Estimate`; the
answer line is :func:`~gpuadvisor.core.presentation.report.summary_line`, the warnings are the
report's :func:`~gpuadvisor.core.presentation.report.decision_warnings` and the detail panel's
words come from :mod:`gpuadvisor.core.presentation.detail`, so the window, the CLI and the PDF
say the same thing. Nothing here computes memory, speed, cost or the recommendation.
"""

from __future__ import annotations

import datetime
import html
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QFont, QFontMetrics, QResizeEvent, QStandardItemModel, QTextDocument
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ..core.estimation.results import Estimate
from ..core.presentation import detail as _detail
from ..core.presentation.prices import pick_price_warnings, price_date
from ..core.presentation.report import decision_warnings
from ..core.presentation.wording import calibration_note, change_lines, summary_line, workload_line
from .ranking import ROLE_KEY, RankingTable
from .state import AppState
from .theme import colors

if TYPE_CHECKING:  # the charts are imported when they are created (pyqtgraph is slow to import)
    from ..views.charts import CostTimeChart, VramChart, WhatIfChart
    from ..views.charts.latency_chart import LatencyPanel
    from ..views.charts.serving_chart import ServingChart
    from .weights_view import WeightsView

CHART_NAMES = ("VRAM across GPUs", "Cost vs time", "What-if", "Serving", "Latency vs load", "Weight types")
COST_TAB, SERVING_TAB, LATENCY_TAB, WEIGHTS_TAB = 1, 3, 4, 5
#: The most lines the summary grows to before it clips (its tooltip always holds the whole answer).
SUMMARY_MAX_LINES = 5
#: How the detail panel's heading starts for the recommended setup (the core's words), and the
#: same words joined by a no-break space: the mark and its word never part across two lines.
RECOMMENDED_HEADING = "\u2605 Recommended:"
RECOMMENDED_HEADING_NOBREAK = RECOMMENDED_HEADING.replace(" ", "\u00a0")


class ResultsView(QWidget):
    """Summary, banners, chart tabs, ranking table and detail panel, fed by :class:`AppState`."""

    chartsCreated = Signal()

    def __init__(self, state: AppState, parent: QWidget | None = None):
        super().__init__(parent)
        self.state = state
        self.charts_ready = False
        # Created by create_charts (pyqtgraph is the slowest import); None until then.
        self.vram_chart: VramChart | None = None
        self.cost_chart: CostTimeChart | None = None
        self.whatif_chart: WhatIfChart | None = None
        self.serving_chart: ServingChart | None = None
        self.latency_panel: LatencyPanel | None = None
        self.weights_view: WeightsView | None = None
        self.whatif_axis = "context"
        self._stale_charts: set[int] = set()

        # Always three lines (the job, the answer, the first warning), so the layout below never
        # moves while the user types: a label that grows re-lays out and repaints the whole window.
        # Without a warning the answer may wrap onto the third line (a service's answer is long).
        self.summary = QLabel("Computing…")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.summary.setMinimumWidth(
            1
        )  # long lines are clipped (the tooltip has them), never widen the window
        self._fix_summary_height()
        self.summary.installEventFilter(self)  # a new width may let the answer keep one line, or not
        self.banner = QLabel()  # input errors: results are stale until the input is valid again
        self.banner.setWordWrap(True)
        self.banner.hide()
        self.catalog_banner = QLabel()  # catalog rows left out of the comparison
        self.catalog_banner.setWordWrap(True)
        self.catalog_banner.hide()

        self.chart_tabs = QTabWidget()
        for name in CHART_NAMES:
            placeholder = QLabel("Loading charts…")
            placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
            self.chart_tabs.addTab(placeholder, name)
        self.chart_tabs.setMinimumHeight(160)

        self.ranking = RankingTable(stale_months=state.stale_months)
        self.ranking.keySelected.connect(state.select)
        self.table = self.ranking.view
        self.ranking_model, self.ranking_proxy = self.ranking.model, self.ranking.proxy
        # Header and three rows stay visible at the smallest window size.
        self.table.setMinimumHeight(
            self.table.verticalHeader().defaultSectionSize() * 3
            + self.table.horizontalHeader().sizeHint().height()
            + 6
        )
        self.detail = QTextBrowser()
        self.detail.setOpenLinks(False)
        self.detail.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self._fix_detail_width()

        table_box = QWidget()
        tb = QVBoxLayout(table_box)
        tb.setContentsMargins(0, 0, 0, 0)
        tb.setSpacing(2)
        self.ranking_title = QLabel("<b>Ranking</b>: one row per GPU type, its best setup; ★ recommended")
        tb.addWidget(self.ranking_title)
        tb.addWidget(self.ranking, 1)
        self.bottom_split = QSplitter(Qt.Orientation.Horizontal)
        self.bottom_split.addWidget(table_box)
        self.bottom_split.addWidget(self.detail)
        self.bottom_split.setStretchFactor(0, 3)
        self.bottom_split.setStretchFactor(1, 1)
        self.bottom_split.setCollapsible(0, False)

        top = QWidget()
        top_layout = QVBoxLayout(top)
        top_layout.setContentsMargins(0, 0, 0, 0)
        top_layout.addWidget(self.chart_tabs, 1)
        self.split = QSplitter(Qt.Orientation.Vertical)
        self.split.addWidget(top)
        self.split.addWidget(self.bottom_split)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 2)
        self.split.setCollapsible(1, False)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(self.banner)
        layout.addWidget(self.catalog_banner)
        layout.addWidget(self.split, 1)
        self._apply_colors()

        state.estimateChanged.connect(self._on_estimate_changed)
        state.errorChanged.connect(self._on_error_changed)
        state.computingChanged.connect(self._on_computing_changed)
        state.selectionChanged.connect(self._on_selection_changed)
        state.catalogWarningsChanged.connect(self._on_catalog_warnings)
        state.staleMonthsChanged.connect(self._on_stale_months)

    # --- appearance ---------------------------------------------------------------------------
    def _fix_summary_height(self) -> None:
        """Three lines (the head and two of answer, so the panes below keep their place), more when
        the text needs them at the present width, up to SUMMARY_MAX_LINES: at 150% on a laptop a
        service's answer takes three lines of its own and its end ("at p90") was clipped."""
        margins = self.summary.contentsMargins()
        line = self.summary.fontMetrics().lineSpacing()
        frame = 4 + margins.top() + margins.bottom()
        need = 0
        room = self.summary.width() - margins.left() - margins.right() - 2 * self.summary.margin()
        if room > 0:
            # Laid out as the label lays it out (QLabel's heightForWidth answers from its present
            # height once that is fixed, so it cannot tell that a wider pane needs fewer lines).
            doc = QTextDocument()
            doc.setDefaultFont(self.summary.font())
            doc.setDocumentMargin(0)
            doc.setHtml(self.summary.text())
            doc.setTextWidth(room)
            need = math.ceil(doc.size().height()) + frame
        height = min(max(line * 3 + frame, need), line * SUMMARY_MAX_LINES + frame)
        if height != self.summary.height() or self.summary.minimumHeight() != height:
            self.summary.setFixedHeight(height)

    def _fix_detail_width(self) -> None:
        """The detail panel is never narrower than its heading's "★ Recommended:" on one line.

        Measured in the panel's own font and heading style, so it holds at any scale factor and
        desktop font: at 150% on a laptop the splitter gave the panel so little width that the
        mark and its word wrapped onto two lines.
        """
        doc = QTextDocument()
        doc.setDefaultFont(self.detail.font())
        doc.setDocumentMargin(self.detail.document().documentMargin())
        doc.setHtml(f"<h3>{RECOMMENDED_HEADING_NOBREAK}</h3>")
        text = math.ceil(doc.idealWidth())
        frame = 2 * self.detail.frameWidth() + self.detail.verticalScrollBar().sizeHint().width()
        self.detail.setMinimumWidth(text + frame + 2)

    def _apply_colors(self) -> None:
        c = colors(self.palette())
        # An input error in the problem colours; an update running in the background as a notice.
        bg, fg = (
            (c.notice_bg, c.notice_fg)
            if self.state.computing and not self.state.error
            else (c.banner_bg, c.banner_fg)
        )
        self.banner.setStyleSheet(f"background: {bg}; color: {fg}; padding: 6px; border-radius: 3px;")
        self.catalog_banner.setStyleSheet(
            f"background: {c.notice_bg}; color: {c.notice_fg}; padding: 6px; border-radius: 3px;"
        )

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.summary and event.type() == QEvent.Type.Resize and isinstance(event, QResizeEvent):
            est = self.state.estimate
            if est is not None and not self.state.stale and self.warnings(est):
                text = self.summary_html(est)
                if text != self.summary.text():
                    self.summary.setText(text)
            if event.size().width() != event.oldSize().width():
                self._fix_summary_height()
        return super().eventFilter(watched, event)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.FontChange):
            self._apply_colors()
            self._fix_summary_height()
            self._fix_detail_width()
            if self.state.estimate is not None:
                self._on_estimate_changed(self.state.estimate)
        super().changeEvent(event)

    # --- charts (created after the window shows: pyqtgraph is the slowest import) ---------------
    def create_charts(self) -> None:
        if self.charts_ready:
            return
        from ..views.charts import CostTimeChart, VramChart, WhatIfChart  # deferred: ~0.6 s of imports
        from ..views.charts.latency_chart import LatencyPanel
        from ..views.charts.serving_chart import ServingChart

        self.vram_chart = vram_chart = VramChart()
        self.cost_chart = cost_chart = CostTimeChart()
        self.whatif_chart = whatif_chart = WhatIfChart()
        self.serving_chart = serving_chart = ServingChart()
        self.latency_panel = latency_panel = LatencyPanel()
        whatif_box = QWidget()
        box_layout = QVBoxLayout(whatif_box)
        box_layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        row.addWidget(QLabel("Memory per GPU as"))
        self.whatif_axis_box = QComboBox()
        self.whatif_axis_box.addItem("the context length grows", "context")
        self.whatif_axis_box.addItem("the batch (or concurrent users) grows", "batch")
        self.whatif_axis_box.addItem("the weight type changes (one GPU compared)", "weights")
        self.whatif_axis_box.setToolTip(
            "Where does each card stop fitting? The selected setup's GPU and the "
            "cheapest ones that fit are drawn, each with its capacity."
        )
        self.whatif_axis_box.currentIndexChanged.connect(
            lambda _i: self.set_whatif_axis(self.whatif_axis_box.currentData())
        )
        row.addWidget(self.whatif_axis_box)
        row.addStretch(1)
        box_layout.addLayout(row)
        box_layout.addWidget(whatif_chart, 1)
        from .weights_view import WeightsView

        self.weights_view = weights_view = WeightsView()
        tabs: tuple[QWidget, ...] = (
            vram_chart,
            cost_chart,
            whatif_box,
            serving_chart,
            latency_panel,
            weights_view,
        )
        for i, chart in enumerate(tabs):
            old = self.chart_tabs.widget(i)
            self.chart_tabs.removeTab(i)
            self.chart_tabs.insertTab(i, chart, CHART_NAMES[i])
            if old is not None:
                old.deleteLater()
        self.chart_tabs.setCurrentIndex(0)
        self.chart_tabs.currentChanged.connect(self._on_chart_tab_changed)
        whatif_chart.set_axis(self.whatif_axis)
        vram_chart.candidateSelected.connect(self.state.select)
        cost_chart.candidateSelected.connect(self.state.select)
        self.charts_ready = True
        if self.state.estimate is not None:
            self._update_charts(self.state.estimate)
        self.chartsCreated.emit()

    def _update_charts(self, est: Estimate) -> None:
        """Redraw the visible chart now; the hidden ones when their tab is opened."""
        if not self.charts_ready:
            return
        self._stale_charts = {0, 1, 2, SERVING_TAB, LATENCY_TAB, WEIGHTS_TAB}
        # The Serving and Latency tabs are offered only for a service (workload.serving), the weight types only
        # with one GPU type compared, the cost-time chart only with a job to time and price.
        serving = est.scenario.workload.serving is not None
        for tab, shown in (
            (SERVING_TAB, serving),
            (LATENCY_TAB, serving),
            (WEIGHTS_TAB, bool(est.weights_table)),
            (COST_TAB, not est.session),
        ):
            if self.chart_tabs.isTabVisible(tab) != shown:
                self.chart_tabs.setTabVisible(tab, shown)
        axes = self.whatif_axis_box.model()  # a combo box's own model
        weights_item = (
            axes.item(self.whatif_axis_box.findData("weights"))
            if isinstance(axes, QStandardItemModel)
            else None
        )
        if weights_item is not None:
            weights_item.setEnabled(bool(est.weights_table))
        if self.whatif_axis == "weights" and not est.weights_table:
            self.set_whatif_axis("context", show_tab=False)
        if not self.chart_tabs.isTabVisible(self.chart_tabs.currentIndex()):
            self.chart_tabs.setCurrentIndex(0)
        self._draw_chart(self.chart_tabs.currentIndex(), est)

    def _draw_chart(self, index: int, est: Estimate) -> None:
        if index not in self._stale_charts:
            return
        self._stale_charts.discard(index)
        chart = (
            self.vram_chart,
            self.cost_chart,
            self.whatif_chart,
            self.serving_chart,
            self.latency_panel,
            self.weights_view,
        )[index]
        if chart is not None:
            chart.show_estimate(est, self.state.selected)

    def _on_chart_tab_changed(self, index: int) -> None:
        if self.charts_ready and self.state.estimate is not None:
            self._draw_chart(index, self.state.estimate)

    def set_whatif_axis(self, axis: str, show_tab: bool = True) -> None:
        self.whatif_axis = axis
        if self.charts_ready:
            self.whatif_axis_box.blockSignals(True)
            self.whatif_axis_box.setCurrentIndex(max(0, self.whatif_axis_box.findData(axis)))
            self.whatif_axis_box.blockSignals(False)
            if self.whatif_chart is not None:
                self.whatif_chart.set_axis(axis)
        if show_tab:
            self.chart_tabs.setCurrentIndex(2)

    # --- estimate -> views -------------------------------------------------------------------
    def _on_estimate_changed(self, est: Estimate) -> None:
        self._render_summary(est)
        self.summary.setToolTip(self._summary_tooltip(est))
        self.ranking.show(est, self.state.selected)
        self._update_charts(est)
        self.show_detail(self.state.selected)
        self._show_banner()

    def warnings(self, est: Estimate) -> list[str]:
        """The decision's warnings, as the report lists them (stale prices, assumed profiles, ...);
        worked out once per estimate and stale-price age."""
        cached = getattr(self, "_warnings_for", None)
        if cached is None or cached[0] is not est or cached[1] != self.state.stale_months:
            self._warnings_for = (
                est,
                self.state.stale_months,
                decision_warnings(est, datetime.date.today(), self.state.stale_months),
            )
        return self._warnings_for[2]

    def summary_html(self, est: Estimate) -> str:
        c = colors(self.palette())
        head = f"<b>{html.escape(est.model.name)}</b> · {html.escape(workload_line(est))}"
        answer = html.escape(summary_line(est))
        if est.decision is not None and est.decision.recommended_key:
            answer = "★ " + answer.replace("Recommended:", "<b>Recommended:</b>", 1)
        else:
            answer = f"<span style='color:{c.problem}'>{answer}</span>"
        stale = self.stale_pick(est)
        if stale:
            # Flagged at the pick itself, not only among the warnings behind "hover here".
            answer += f" <span style='color:{c.caution}'><b>⚠ {html.escape(stale)}</b></span>"
        note = calibration_note(est)
        if note:
            answer += f" <span style='color:{c.ok}'>{html.escape(note)}</span>"
        notes = ""
        warnings = self.warnings(est)
        # Qt's rich text honours white-space only on blocks: one <div> per line.
        one_line = "<div style='white-space:nowrap'>{}</div>"
        if warnings and not self._answer_fits_one_line(est, note):
            # The answer comes first: it wraps onto the third line, and the warnings are counted at
            # the end of the first (the tooltip and the detail panel have them in full).
            count = f"{len(warnings)} warning{'s' if len(warnings) != 1 else ''}"
            head += f" · <span style='color:{c.caution}'>⚠ {count}: hover here</span>"
            answer = f"<div>{answer}</div>"
        elif warnings:
            more = f" (+{len(warnings) - 1} more: hover here)" if len(warnings) > 1 else ""
            notes = one_line.format(
                f"<span style='color:{c.caution}'>⚠ {html.escape(warnings[0])}{more}</span>"
            )
            answer = one_line.format(answer)  # the warning keeps the third line
        else:
            answer = f"<div>{answer}</div>"
        return f"<div>{head}</div>{answer}{notes}"  # the head wraps too: the summary grows to show all

    def stale_pick(self, est: Estimate) -> str:
        """``price of 2025-06-30: stale`` when the recommendation's price is stale or undated ("" else)."""
        if not pick_price_warnings(est, datetime.date.today(), self.state.stale_months):
            return ""
        rec = est.recommended
        day = price_date(est, rec) if rec is not None else None
        return f"price of {day}: stale" if day else "undated price"

    def _answer_fits_one_line(self, est: Estimate, note: str) -> bool:
        """Whether the answer line is shown whole on one line at the summary's present width."""
        bold = QFont(self.summary.font())
        bold.setBold(True)  # measured bold: an upper bound for the partly bold line
        stale = self.stale_pick(est)
        text = "★ " + summary_line(est) + (f" ⚠ {stale}" if stale else "") + (f" {note}" if note else "")
        room = self.summary.contentsRect().width() - 2 * self.summary.margin() - 8
        return QFontMetrics(bold).horizontalAdvance(text) <= room

    def _summary_tooltip(self, est: Estimate) -> str:
        """The whole answer (a narrow window clips it) and every warning."""
        lines = [html.escape(summary_line(est))]
        lines += [f"⚠ {html.escape(w)}" for w in self.warnings(est)]
        return "<br>".join(lines)

    def _on_error_changed(self, message: str) -> None:
        self._show_banner()

    def _on_computing_changed(self, message: str) -> None:
        self._show_banner()

    def _show_banner(self) -> None:
        """An invalid input first, else an update running in the background: either way the results
        below belong to earlier inputs and are greyed until they are current again."""
        error, computing = self.state.error, self.state.computing
        if error:
            self.banner.setText(
                f"<b>Fix this input:</b> {html.escape(error)}<br>The results below are for the "
                "last valid input and are marked stale until it is fixed."
            )
        elif computing:
            self.banner.setText(
                f"<b>{html.escape(computing)}\u2026</b><br>The window stays usable; the results below "
                "are for the previous input until the new ones arrive."
            )
        self._apply_colors()
        self.banner.setVisible(bool(error or computing))
        self._set_stale("input" if error else "computing" if computing else "")

    def _set_stale(self, why: str) -> None:
        """Grey the results while an input is invalid (``why`` "input") or an update runs in the
        background ("computing"): they belong to earlier inputs."""
        if getattr(self, "_stale", "") == why:
            return
        self._stale = why
        for widget in (self.chart_tabs, self.table, self.detail):
            widget.setEnabled(not why)
        title = {
            "input": " (stale: fix the input above)",
            "computing": " (updating\u2026)",
        }.get(why, ": one row per GPU type, its best setup; ★ recommended")
        self.ranking_title.setText("<b>Ranking</b>" + title)
        if self.state.estimate is not None:
            self._render_summary(self.state.estimate)

    def _render_summary(self, est: Estimate) -> None:
        if getattr(self, "_stale", "") == "computing" and not self.state.stale:
            c = colors(self.palette())
            self.summary.setText(
                f"<span style='color:{c.muted}'>Updating\u2026 until then, for the previous input: "
                f"{html.escape(summary_line(est))}</span>"
            )
        elif self.state.stale:
            c = colors(self.palette())
            self.summary.setText(
                f"<span style='color:{c.muted}'>Stale (an input is invalid): "
                f"{html.escape(summary_line(est))}</span><br>"
                f"<span style='color:{c.problem}'>Fix the input named above to update the "
                "results.</span>"
            )
        else:
            self.summary.setText(self.summary_html(est))
        self._fix_summary_height()

    def _on_catalog_warnings(self, warnings: Sequence[str]) -> None:
        if warnings:
            shown = "<br>".join(html.escape(w) for w in list(warnings)[:3])
            more = f"<br>(+{len(warnings) - 3} more)" if len(warnings) > 3 else ""
            self.catalog_banner.setText(
                f"<b>Left out of the comparison (catalog rows with errors):</b><br>{shown}"
                f"{more}<br>Fix them in Tools &gt; Catalog editor."
            )
        self.catalog_banner.setVisible(bool(warnings))

    def _on_stale_months(self, months: int) -> None:
        self.ranking.set_stale_months(months)
        if self.state.estimate is not None:
            self._on_estimate_changed(self.state.estimate)

    # --- selection ---------------------------------------------------------------------------
    def _on_selection_changed(self, key: str) -> None:
        self.ranking.select_key(key)
        self.show_detail(key)
        if self.charts_ready and self.state.estimate is not None:
            self._update_charts(self.state.estimate)  # every chart marks the selected setup

    def key_of_row(self, row: int) -> str | None:
        """The candidate key shown in ``row`` of the ranking as displayed (None past the end)."""
        index = self.table.model().index(row, 0)
        return index.data(ROLE_KEY) if index.isValid() else None

    def show_detail(self, key: str) -> None:
        est = self.state.estimate
        if est is None:
            self.detail.setHtml("")
            return
        c = colors(self.palette())
        style = {
            _detail.TEXT: "",
            _detail.CAUTION: f" style='color:{c.caution}'",
            _detail.PROBLEM: f" style='color:{c.problem}'",
        }
        parts = []
        for kind, text in _detail.candidate_detail(est, key, datetime.date.today(), self.state.stale_months):
            if kind == _detail.TITLE:
                text = text.replace(RECOMMENDED_HEADING, RECOMMENDED_HEADING_NOBREAK, 1)
                parts.append(f"<h3>{html.escape(text)}</h3>")
            else:
                parts.append(f"<p{style[kind]}>{html.escape(text)}</p>")
        changes = change_lines(est)
        if changes:
            parts.append("<h4>Cheapest changes that make it work</h4><ul>")
            parts += [f"<li>{html.escape(line)}</li>" for line in changes]
            parts.append("</ul>")
        self.detail.setHtml("".join(parts) or "<p>Select a setup in the table or a chart.</p>")
