"""The window at the sizes people use: laptops at 1366 x 768 and 1280 x 800, and at 150% scaling
(a 1920 x 1080 screen gives 1280 x 720 of layout, a 1366 x 768 one 910 x 512). The answer, the
recommended row and the decision's columns must be readable without scrolling, and nothing the
user reads may be cut off."""

from __future__ import annotations

from pathlib import Path

import pytest
from gui_helpers import settle
from PySide6.QtWidgets import QApplication

from gpuadvisor.gui.ranking.model import (
    COL_BUDGET,
    COL_COST,
    COL_DEADLINE,
    COL_GPU,
    COL_PICK,
    COL_RANGE,
    COL_SETUP,
    COL_TIME,
    COL_VERDICT,
    HEADERS,
)
from gpuadvisor.gui.results_view import RECOMMENDED_HEADING, RECOMMENDED_HEADING_NOBREAK

SERVING_EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "serving-20-replicas.json"
LAPTOP = (1366, 768)
SMALL_LAPTOP = (1280, 800)
HIDPI_1080 = (1280, 720)  # 1920 x 1080 at 150%
HIDPI_768 = (910, 512)  # 1366 x 768 at 150%

#: The decision's columns, in the order shown: the mark, what to rent, what it costs and takes,
#: whether it meets the limits and whether it fits.
DECISION_COLUMNS = [COL_PICK, COL_GPU, COL_SETUP, COL_COST, COL_RANGE, COL_TIME, COL_DEADLINE, COL_BUDGET]


def _at(window, qtbot, size) -> None:
    window.resize(*size)
    settle(window)
    QApplication.processEvents()
    qtbot.waitUntil(lambda: window.results.detail.viewport().width() > 0)


def _first_heading_line(detail) -> str:
    block = detail.document().begin()
    layout = block.layout()
    return block.text()[: layout.lineAt(0).textLength()]


@pytest.mark.parametrize("size", [LAPTOP, SMALL_LAPTOP, HIDPI_1080, HIDPI_768])
def test_the_detail_heading_keeps_the_recommended_mark_on_one_line(window, qtbot, size):
    """At 150% the panel was so narrow that "★" and "Recommended:" sat on two lines."""
    _at(window, qtbot, size)
    detail = window.results.detail
    assert detail.toPlainText().startswith(RECOMMENDED_HEADING)  # the core's words (plain text)
    assert _first_heading_line(detail).startswith(RECOMMENDED_HEADING_NOBREAK)


def test_the_detail_heading_stays_whole_when_the_user_narrows_the_panel(window, qtbot):
    _at(window, qtbot, HIDPI_1080)
    split = window.results.bottom_split
    total = sum(split.sizes())
    split.setSizes([total, 0])  # the handle dragged all the way right
    QApplication.processEvents()
    detail = window.results.detail
    assert detail.width() >= detail.minimumWidth() > 0
    assert _first_heading_line(detail).startswith(RECOMMENDED_HEADING_NOBREAK)


@pytest.mark.parametrize(
    ("size", "last_column"), [(LAPTOP, COL_VERDICT), (SMALL_LAPTOP, COL_BUDGET), (HIDPI_1080, COL_BUDGET)]
)
def test_the_decision_columns_fit_without_scrolling_sideways(window, qtbot, size, last_column):
    """At 1366 x 768 the budget column was cut ("Bud") and the fit was off to the right."""
    _at(window, qtbot, size)
    view = window.results.table
    header = view.horizontalHeader()
    metrics = view.fontMetrics()
    assert view.horizontalScrollBar().value() == 0
    columns = DECISION_COLUMNS + ([COL_VERDICT] if last_column == COL_VERDICT else [])
    for col in columns:
        right = view.columnViewportPosition(col) + view.columnWidth(col)
        assert right <= view.viewport().width(), f"{HEADERS[col]} is cut off at {size}"
        # its header and its figures are not elided either
        assert header.sectionSizeFromContents(col).width() <= view.columnWidth(col), HEADERS[col]
        for row in range(min(window.ranking_proxy.rowCount(), 10)):
            text = str(window.ranking_proxy.index(row, col).data() or "")
            assert metrics.horizontalAdvance(text) <= view.columnWidth(col) - 8, (HEADERS[col], text)


def test_sorting_by_a_column_gives_the_headers_room_for_the_arrow(window, qtbot):
    _at(window, qtbot, LAPTOP)
    view = window.results.table
    header = view.horizontalHeader()
    header.sectionClicked.emit(COL_COST)  # what a click on "Expected cost" sends
    view.sortByColumn(COL_COST, header.sortIndicatorOrder())
    assert header.isSortIndicatorShown()
    for col in DECISION_COLUMNS:
        assert header.sectionSizeFromContents(col).width() <= view.columnWidth(col), HEADERS[col]
    window.results.ranking.sort_in_decision_order()
    assert not header.isSortIndicatorShown()


@pytest.mark.parametrize("size", [LAPTOP, SMALL_LAPTOP, HIDPI_1080, HIDPI_768])
def test_the_recommendation_is_in_view_without_scrolling(window, qtbot, size):
    _at(window, qtbot, size)
    w = window
    est = w.state.estimate
    inside = w.rect()
    # the answer line
    summary = w.summary
    top_left = summary.mapTo(w, summary.rect().topLeft())
    assert summary.isVisible() and inside.contains(top_left)
    assert "Recommended:" in summary.text()
    # its row in the ranking, marked ★
    view = w.results.table
    row = next(r for r in range(w.ranking_proxy.rowCount()) if w.results.key_of_row(r) == est.recommended.key)
    rect = view.visualRect(w.ranking_proxy.index(row, COL_PICK))
    assert view.viewport().rect().contains(rect.topLeft())
    assert view.verticalScrollBar().value() == 0
    # and its bar in the VRAM chart
    chart = w.results.vram_chart
    assert 0 in chart.visible_rows() and chart.candidate_at(0).key == est.recommended.key


@pytest.mark.parametrize("size", [LAPTOP, SMALL_LAPTOP, HIDPI_1080])
def test_the_pages_are_never_squeezed_under_their_width(window, qtbot, size):
    """The results take what the pages leave, never more: a field cut off at the right of a page
    cannot be read (the pages do not scroll sideways)."""
    _at(window, qtbot, size)
    for i in range(window.page_tabs.count()):
        window.page_tabs.setCurrentIndex(i)
        QApplication.processEvents()
        assert _page_shown_whole(window, i)


def test_a_service_compared_on_every_gpu_names_each_row_in_full(window, qtbot):
    """A one-GPU service sized the columns for its one row; choosing every data-centre GPU then
    cut "runner-up" to "ru…" and the GPU names. The columns widen for the new rows."""
    w = window
    _at(w, qtbot, LAPTOP)
    w.open_path(str(SERVING_EXAMPLE))
    settle(w)
    page = w.workload_page
    page.gpu.setCurrentIndex(page.gpu.findData("segment:data_centre"))
    settle(w)
    assert w.ranking_proxy.rowCount() > 1
    view = w.results.table
    metrics = view.fontMetrics()
    for col in (COL_PICK, COL_GPU, COL_SETUP):
        for row in range(min(w.ranking_proxy.rowCount(), 10)):
            text = str(w.ranking_proxy.index(row, col).data() or "")
            assert metrics.horizontalAdvance(text) <= view.columnWidth(col) - 8, (HEADERS[col], text)


def test_a_long_choice_is_elided_with_its_full_text_in_the_tooltip(window, qtbot):
    """At the pages' laptop width "Serving (traffic and latency targets)" and a Mac's name
    were cut off mid-letter; they are elided, and the tooltip starts with the whole choice."""
    _at(window, qtbot, LAPTOP)
    page = window.workload_page
    page.gpu.setCurrentIndex(page.gpu.findData("apple-m3-max"))
    settle(window)
    box = page.gpu
    full = box.currentText()
    shown = box.shown_text()
    assert shown != full and shown.endswith("…")
    assert box.fontMetrics().horizontalAdvance(shown) <= box.width()
    assert box.tooltip_text().startswith(full + "\n\n")
    assert box.toolTip() in box.tooltip_text()  # the explanation follows
    # a choice that fits is drawn whole, and the tooltip is only the explanation
    page.gpu.setCurrentIndex(page.gpu.findData("h100-sxm"))
    settle(window)
    assert box.shown_text() == box.currentText()
    assert box.tooltip_text() == box.toolTip()


def test_the_workload_page_widens_when_the_advanced_layout_opens(window, qtbot):
    """Ticking "Advanced layout" shows wider rows; the fields ran under the scroll bar."""
    _at(window, qtbot, LAPTOP)
    page = window.workload_page
    page.kind.setCurrentIndex(page.kind.findData("pretrain"))
    page.count.setCurrentIndex(page.count.findData(64))
    settle(window)
    page.layout_box.setChecked(True)
    settle(window)
    # The 64-GPU layout search runs on a worker thread meanwhile; with the tests in parallel on a
    # busy machine the relayout can take longer than pytest-qt's default 5 s.
    qtbot.waitUntil(lambda: _page_shown_whole(window, 0), timeout=30_000)
    # and again when the same page then compares every data-centre GPU at 150% (1280 x 720)
    _at(window, qtbot, HIDPI_1080)
    page.gpu.setCurrentIndex(page.gpu.findData("segment:data_centre"))
    settle(window)
    qtbot.waitUntil(lambda: _page_shown_whole(window, 0), timeout=30_000)


def _page_shown_whole(window, index: int) -> bool:
    """The page's scroll area lies inside the pages panel and its viewport holds the page."""
    scroll = window.page_tabs.widget(index)
    panel = window.left_panel
    right = scroll.mapTo(panel, scroll.rect().topRight()).x()
    return (
        right < panel.width()
        and panel.width() >= panel.minimumSizeHint().width()
        and scroll.viewport().width() >= scroll.widget().minimumSizeHint().width()
    )
