"""The charts as the window and the report use them: one ``show(est, selected)`` per chart,
GPU names drawn from the first paint (also never shown, rendered for the PDF), the VRAM chart
in little height and in the decision's order, labels and the recommendation on every chart,
curves told apart without colour, and dark mode that follows the application palette."""

from __future__ import annotations

from dataclasses import replace

import pytest
from PySide6.QtCore import QLineF, QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPalette, QWheelEvent
from PySide6.QtWidgets import QApplication

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.scenario import ModelSource, default_scenario
from gpuadvisor.core.specs.workload import Hardware, Workload
from gpuadvisor.views.charts import CostTimeChart, VramChart, WhatIfChart
from gpuadvisor.views.charts.cost_time_chart import point_label
from gpuadvisor.views.charts.labels import short_gpu_name
from gpuadvisor.views.charts.palette import DARK, LIGHT, chart_colors, is_dark_palette
from gpuadvisor.views.charts.vram_chart import MIN_HEIGHT_PX, RECOMMENDED_MARK, row_pitch_px
from gpuadvisor.views.charts.whatif_chart import SERIES_STYLES
from gpuadvisor.views.charts.whatif_data import whatif_gpu_ids

PDF_CHART_SIZE = (820, 460)  # views/report_pdf.py: VRAM_CHART_SIZE and COST_CHART_SIZE


@pytest.fixture(scope="module")
def est(catalogs):
    return estimate(default_scenario(), *catalogs)


def _drawn_pixels(image, rect: QRectF, background: QColor) -> int:
    """Pixels in ``rect`` (logical coordinates) that differ from the background."""
    dpr = image.devicePixelRatio()
    bg = background.rgb() & 0xFFFFFF
    count = 0
    x0, x1 = int(rect.left() * dpr), int(rect.right() * dpr)
    y0, y1 = int(rect.top() * dpr), int(rect.bottom() * dpr)
    for y in range(max(0, y0), min(image.height(), y1)):
        for x in range(max(0, x0), min(image.width(), x1), 2):
            if image.pixel(x, y) & 0xFFFFFF != bg:
                count += 1
    return count


# -- names from the first paint -----------------------------------------------------------------
@pytest.mark.parametrize("size", [(900, 500), PDF_CHART_SIZE, (900, 250)])
def test_vram_names_drawn_on_a_chart_never_shown(qtbot, est_limits, size):
    chart = VramChart(dark=False)
    qtbot.addWidget(chart)
    chart.show(est_limits, est_limits.decision.recommended_key)
    assert not chart.isVisible()
    image = chart.render_image(dpr=1.0, size=size)
    assert image.width() == size[0] and image.height() >= size[1]
    chart.layout_scene(image.width(), image.height())  # the layout the image was drawn with
    axis = chart.y_axis
    assert axis.width() > 100  # room for "★ RTX 6000 Ada Generation ×8"
    # every row is in the report image, and every name is painted: ink in each row's label band
    assert chart.visible_rows() == range(chart.row_count())
    rect = axis.sceneBoundingRect()
    assert _drawn_pixels(image, rect, QColor(LIGHT.background)) > 2000
    pitch = chart.view_box.height() / chart.row_count()
    top = chart.view_box.sceneBoundingRect().top()
    for row in range(chart.row_count()):
        band = QRectF(rect.left(), top + row * pitch + 2, rect.width() - 4, pitch - 4)
        assert _drawn_pixels(image, band, QColor(LIGHT.background)) > 20, chart.row_labels()[row]
    assert image.height() >= chart.row_count() * row_pitch_px()


def test_vram_names_at_first_paint_in_a_window(qtbot, est):
    chart = VramChart(dark=False)
    qtbot.addWidget(chart)
    chart.show(est, None)  # the estimate arrives before the chart is shown, as in the window
    chart.resize(900, 500)
    chart.show()
    qtbot.waitExposed(chart)
    assert chart.y_axis.width() > 60
    image = chart.grab().toImage()
    rect = chart.y_axis.sceneBoundingRect()
    assert _drawn_pixels(image, rect, QColor(LIGHT.background)) > 1000


def test_axis_sized_again_after_an_empty_state(qtbot, est, est_nothing_fits):
    chart = VramChart(dark=False)
    qtbot.addWidget(chart)
    chart.show(None)
    assert chart.message()
    chart.show(est, None)
    chart.layout_scene(900, 500)
    assert chart.y_axis.width() > 60 and chart.y_axis.isVisible()


@pytest.mark.parametrize("cls", [CostTimeChart, WhatIfChart])
def test_other_charts_draw_their_axes_never_shown(qtbot, est_limits, cls):
    chart = cls(dark=False)
    qtbot.addWidget(chart)
    chart.show(est_limits, est_limits.decision.recommended_key)
    image = chart.render_image(dpr=1.0, size=PDF_CHART_SIZE)
    for axis in (chart.x_axis, chart.y_axis):
        rect = axis.sceneBoundingRect()
        assert rect.width() > 20 and rect.height() > 20
        assert _drawn_pixels(image, rect, QColor(LIGHT.background)) > 200


# -- the VRAM chart --------------------------------------------------------------------------------
def test_vram_follows_the_decision_order_and_marks_the_recommendation(qtbot, est_limits):
    chart = VramChart()
    qtbot.addWidget(chart)
    best = list(est_limits.best_per_gpu().values())
    rec = est_limits.decision.recommended_key
    runner = est_limits.decision.runner_up_key
    chart.show(est_limits, runner)
    assert [chart.candidate_at(i).key for i in range(chart.row_count())] == [c.key for c in best]
    assert chart.recommended_row() == 0 and best[0].key == rec
    labels = chart.row_labels()
    assert labels[0] == f"{RECOMMENDED_MARK} {short_gpu_name(best[0].gpu.name, best[0].gpu_count)}"
    assert not any(RECOMMENDED_MARK in label for label in labels[1:])
    assert list(chart.recommended_outline.opts["y"]) == [0.0]
    runner_row = [c.key for c in best].index(runner)
    assert chart.selected_row() == runner_row
    assert list(chart.highlight.opts["y"]) == [float(runner_row)]
    assert "recommended" in chart.tooltip_for_row(0)


def test_vram_row_of_a_selected_setup_shows_that_setup(qtbot, est):
    chart = VramChart()
    qtbot.addWidget(chart)
    best = est.best_per_gpu()
    other = next(c for c in est.candidates if c.gpu.id in best and c.key != best[c.gpu.id].key)
    chart.show(est, other.key)
    row = chart.selected_row()
    assert chart.candidate_at(row).key == other.key
    assert chart.candidate_at(row).gpu.id == other.gpu.id
    assert chart.row_count() == len(best)


def test_vram_fits_a_laptop_height_and_scrolls(qtbot, est):
    chart = VramChart(dark=False)
    qtbot.addWidget(chart)
    chart.show(est, None)
    assert chart.minimumSizeHint().height() <= 220 and chart.minimumHeight() <= 220
    assert chart.minimumHeight() == MIN_HEIGHT_PX
    chart.resize(900, 250)
    chart.show()
    qtbot.waitExposed(chart)
    assert chart.height() == 250
    shown = chart.visible_rows()
    n = len(est.best_per_gpu())
    assert 3 <= len(shown) < chart.row_count() == n
    assert chart.scroll_bar.isEnabled() and chart.scroll_bar.maximum() == n - len(shown)
    assert chart.view_box.height() / len(shown) >= row_pitch_px() - 0.5  # names never overlap
    # the scroll bar scrolls the rows, the names stay beside their bars
    chart.scroll_bar.setValue(chart.scroll_bar.maximum())
    assert chart.visible_rows()[-1] == n - 1
    lo, hi = chart.view_box.viewRange()[1]
    assert lo <= n - 1 <= hi and lo > 0
    # the mouse wheel over the chart scrolls too (and never zooms)
    chart.scroll_bar.setValue(0)
    centre = chart.plot.viewport().rect().center()
    wheel = QWheelEvent(
        QPointF(centre),
        QPointF(chart.plot.viewport().mapToGlobal(centre)),
        QPoint(0, 0),
        QPoint(0, -120),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(chart.plot.viewport(), wheel)
    assert chart.scroll_bar.value() == 3
    assert chart.visible_rows()[0] == 3
    # a click on a scrolled row names that row's GPU and setup
    row = chart.visible_rows()[1]
    pos = chart.plot.mapFromScene(chart.view_box.mapViewToScene(QPointF(5.0, row)))
    gpus, keys = [], []
    chart.gpuClicked.connect(gpus.append)
    chart.candidateSelected.connect(keys.append)
    qtbot.mouseClick(chart.plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert gpus == [chart.candidate_at(row).gpu.id] and keys == [chart.candidate_at(row).key]


def test_vram_rows_scroll_with_the_keyboard(qtbot, est):
    chart = VramChart()
    qtbot.addWidget(chart)
    chart.show(est, None)
    chart.resize(900, 250)
    chart.show()
    qtbot.waitExposed(chart)
    count = len(chart.visible_rows())
    qtbot.keyClick(chart, Qt.Key.Key_Down)
    assert chart.visible_rows()[0] == 1
    qtbot.keyClick(chart, Qt.Key.Key_PageDown)
    assert chart.visible_rows()[0] == 1 + count
    qtbot.keyClick(chart, Qt.Key.Key_End)
    assert chart.visible_rows()[-1] == chart.row_count() - 1
    qtbot.keyClick(chart, Qt.Key.Key_Home)
    assert chart.visible_rows()[0] == 0


def test_vram_selecting_a_row_out_of_view_scrolls_to_it(qtbot, est):
    chart = VramChart()
    qtbot.addWidget(chart)
    chart.resize(900, 250)
    chart.show()
    qtbot.waitExposed(chart)
    best = list(est.best_per_gpu().values())
    chart.show(est, best[-1].key)
    last = len(best) - 1
    assert chart.selected_row() == last and last in chart.visible_rows()


def test_vram_shows_every_row_when_there_is_room(qtbot, est):
    chart = VramChart()
    qtbot.addWidget(chart)
    chart.show(est, None)
    chart.resize(900, 900)
    chart.show()
    qtbot.waitExposed(chart)
    assert chart.visible_rows() == range(len(est.best_per_gpu())) and not chart.scroll_bar.isEnabled()


def test_vram_one_gpu_type_is_a_bar_not_a_block(qtbot, catalogs):
    """One GPU type (a Mac, a hand-laid-out job) used to fill the whole plot height with one bar."""
    from dataclasses import replace

    from gpuadvisor.core.specs.workload import Hardware

    s = default_scenario()
    one = estimate(replace(s, hardware=Hardware(gpu="h100-sxm", gpu_count=1)), *catalogs)
    chart = VramChart()
    qtbot.addWidget(chart)
    chart.show(one, None)
    chart.resize(900, 600)
    chart.show()
    qtbot.waitExposed(chart)
    assert chart.row_count() == 1 and chart.visible_rows() == range(1)
    top = chart.view_box.mapViewToScene(QPointF(0, -0.5)).y()
    bottom = chart.view_box.mapViewToScene(QPointF(0, 0.5)).y()
    assert abs(bottom - top) <= 2.2 * row_pitch_px()  # about twice the readable pitch at most
    # the row is at the top and still answers a click on its bar
    pos = chart.plot.mapFromScene(chart.view_box.mapViewToScene(QPointF(1.0, 0)))
    keys = []
    chart.candidateSelected.connect(keys.append)
    qtbot.mouseClick(chart.plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    assert keys == [chart.candidate_at(0).key]


# -- cost versus time ------------------------------------------------------------------------------
def test_cost_time_labels_pareto_points_and_stars_the_recommendation(qtbot, est_limits):
    chart = CostTimeChart(dark=False)
    qtbot.addWidget(chart)
    rec = est_limits.decision.recommended_key
    chart.show(est_limits, None)
    assert chart.recommended_key() == rec
    rx, ry = chart.recommended_point.getData()
    assert (rx[0], ry[0]) == pytest.approx(chart.point_position(rec))
    assert chart.recommended_point.opts["symbol"] == "star"
    labels = chart.labels()
    by_key = {c.key: c for c in est_limits.candidates}
    assert labels[rec] == f"{RECOMMENDED_MARK} {point_label(by_key[rec])}"
    shown = set(chart.keys())
    frontier = [c for c in est_limits.candidates if c.key in shown and c.pareto]
    # The frontier's points are labelled where a label fits (the rest on hover), never other points.
    assert frontier and all(
        labels[c.key] == point_label(c) for c in frontier if c.key in labels and c.key != rec
    )
    assert set(labels) <= {c.key for c in frontier} | {rec}
    assert point_label(by_key[rec]).endswith(f"×{by_key[rec].gpu_count}")
    legend = [label.text for _, label in chart.legend.items]
    assert "Recommended" in legend and "Pareto frontier" in legend
    assert chart.deadline_line.label.toPlainText() == "Deadline 2.0 h"
    assert chart.budget_line.label.toPlainText() == "Budget $30"
    assert "recommended" in chart.tooltip_for_key(rec)


def test_cost_time_labels_do_not_overlap(qtbot, est, est_limits):
    for e in (est, est_limits):
        chart = CostTimeChart(dark=False)
        qtbot.addWidget(chart)
        chart.show(e, None)
        chart.resize(900, 500)
        chart.show()
        qtbot.waitExposed(chart)
        boxes = chart.label_rects()
        rects = list(boxes.values())
        assert len(rects) >= 3
        plot = QRectF(0, 0, chart.view_box.width(), chart.view_box.height())
        for i, a in enumerate(rects):
            assert plot.adjusted(-2, -2, 2, 2).contains(a)
            for b in rects[i + 1 :]:
                overlap = a.intersected(b)
                assert overlap.width() * overlap.height() < 0.15 * a.width() * a.height()
        for key, ((px, py), (ex, ey)) in chart.leader_lines().items():
            assert not any(_line_through_box(QLineF(px, py, ex, ey), b) for k, b in boxes.items() if k != key)
        chart.close()


def test_cost_time_show_rings_the_selection(qtbot, est):
    chart = CostTimeChart()
    qtbot.addWidget(chart)
    chart.show(est, None)
    key = chart.keys()[3]
    chart.show(est, key)
    x, y = chart.selected_ring.getData()
    assert (x[0], y[0]) == pytest.approx(chart.point_position(key))
    chart.show(None)
    assert "Nothing fits" in chart.message() and chart.labels() == {}


# -- what-if ----------------------------------------------------------------------------------------
def test_whatif_show_computes_its_curves_and_marks_the_recommendation(qtbot, est):
    chart = WhatIfChart(dark=False)
    qtbot.addWidget(chart)
    rec = est.recommended
    best = list(est.best_per_gpu().values())
    selected = best[5]
    chart.show(est, selected.key)
    curves = chart.shown_curves()
    assert [c.gpu_id for c in curves] == whatif_gpu_ids(est, selected.key)
    assert curves[0].gpu_id == selected.gpu.id and curves[1].gpu_id == rec.gpu.id
    assert [c.recommended for c in curves] == [False, True, False, False]
    assert chart.legend_labels()[1] == f"{RECOMMENDED_MARK} {curves[1].label} (recommended)"
    assert chart.curves[1].opts["pen"].widthF() > chart.curves[0].opts["pen"].widthF()
    chart.set_axis("batch")
    assert chart.axis() == "batch"
    assert chart.plot_item.getAxis("bottom").labelText in ("Micro-batch per GPU", "Concurrent sequences")
    assert chart.shown_curves()[0].xs[0] == 1
    with pytest.raises(ValueError):
        chart.set_axis("speed")


def test_whatif_curves_differ_without_colour(qtbot, est):
    chart = WhatIfChart(dark=False)
    qtbot.addWidget(chart)
    chart.show(est, None)
    n = len(chart.shown_curves())
    patterns = [tuple(chart.curves[i].opts["pen"].dashPattern()) for i in range(n)]
    styles = [chart.curves[i].opts["pen"].style() for i in range(n)]
    assert len(set(zip(styles, patterns))) == n  # every curve its own dash pattern
    symbols = [key.opts["symbol"] for key in chart.legend_keys[:n]]
    assert len(set(symbols)) == n == len({s for _, s in SERIES_STYLES[:n]})
    drawn = set(chart.markers.data["symbol"])
    assert set(symbols) <= drawn  # the symbols are on the curves, not only in the legend


# -- dark mode ----------------------------------------------------------------------------------------
def test_palette_variants():
    assert chart_colors(False) is LIGHT and chart_colors(True) is DARK
    assert QColor(DARK.background).lightnessF() < 0.2 and QColor(DARK.text).lightnessF() > 0.8
    assert QColor(LIGHT.background).lightnessF() > 0.9 and QColor(LIGHT.text).lightnessF() < 0.2
    assert set(DARK.components) == set(LIGHT.components)
    dark = QPalette()
    dark.setColor(QPalette.ColorRole.Window, QColor("#202020"))
    light = QPalette()
    light.setColor(QPalette.ColorRole.Window, QColor("#EFEFEF"))
    assert is_dark_palette(dark) and not is_dark_palette(light)


@pytest.fixture
def dark_app(qapp):
    """The application switched to a dark palette for one test, then back."""
    before = QPalette(qapp.palette())
    dark = QPalette(before)
    for role, colour in (
        (QPalette.ColorRole.Window, "#202124"),
        (QPalette.ColorRole.WindowText, "#E8E8E8"),
        (QPalette.ColorRole.Base, "#181818"),
        (QPalette.ColorRole.Text, "#E8E8E8"),
    ):
        dark.setColor(role, QColor(colour))
    yield lambda: qapp.setPalette(dark)
    qapp.setPalette(before)


@pytest.mark.parametrize("cls", [VramChart, CostTimeChart, WhatIfChart])
def test_charts_follow_the_application_palette(qtbot, est_limits, dark_app, cls):
    chart = cls()
    qtbot.addWidget(chart)
    chart.show(est_limits, est_limits.decision.recommended_key)
    chart.resize(900, 400)
    chart.show()
    qtbot.waitExposed(chart)
    assert not chart.colors.dark
    dark_app()
    qtbot.waitUntil(lambda: chart.colors.dark, timeout=2000)
    image = chart.grab().toImage()
    corner = QColor(image.pixel(image.width() // 2, 3))
    assert corner.lightnessF() < 0.2  # dark background
    assert chart.plot_item.getAxis("bottom").textPen().color().lightnessF() > 0.7  # light text
    legend_colour = chart.legend.items[0][1].opts["color"]
    assert QColor(legend_colour).lightnessF() > 0.7
    # a report image is always light
    report = chart.render_image(dpr=1.0, size=(820, 460))
    assert QColor(report.pixel(report.width() // 2, 3)).lightnessF() > 0.95
    assert chart.colors.dark  # and the window's chart stays dark


def test_pinned_colours_ignore_the_application_palette(qtbot, dark_app):
    chart = VramChart(dark=False)
    qtbot.addWidget(chart)
    dark_app()
    QApplication.processEvents()
    assert not chart.colors.dark
    chart.set_dark(None)
    assert chart.colors.dark


# -- scaling ----------------------------------------------------------------------------------------
def test_chart_fonts_follow_the_application_font(qtbot, qapp, est):
    before = qapp.font()
    big = qapp.font()
    big.setPointSizeF(before.pointSizeF() * 1.5)
    qapp.setFont(big)
    try:
        chart = VramChart()
        qtbot.addWidget(chart)
        chart.show(est, None)
        assert chart.y_axis.style["tickFont"].pointSizeF() == pytest.approx(big.pointSizeF())
        big_pitch = row_pitch_px()
    finally:
        qapp.setFont(before)
    small = VramChart()
    qtbot.addWidget(small)
    small.show(est, None)
    assert big_pitch > row_pitch_px()  # taller rows for a larger font
    assert chart.y_axis.fixedWidth > small.y_axis.fixedWidth  # longer names, wider axis


def test_vram_legend_names_the_recommendation_only_when_there_is_one(qtbot, est, est_nothing_fits):
    chart = VramChart()
    qtbot.addWidget(chart)

    def entries():
        return [label.text for _, label in chart.legend.items]

    chart.show(est, None)
    assert entries()[-1] == f"{RECOMMENDED_MARK} Recommended"
    chart.show(est_nothing_fits, None)
    assert est_nothing_fits.decision.recommended_key is None
    assert chart.recommended_row() is None and f"{RECOMMENDED_MARK} Recommended" not in entries()
    chart.show(est, None)
    assert entries().count(f"{RECOMMENDED_MARK} Recommended") == 1


def test_charts_take_a_new_application_font(qtbot, qapp, est):
    chart = VramChart()
    qtbot.addWidget(chart)
    chart.show(est, None)
    width_before = chart.y_axis.fixedWidth
    before = qapp.font()
    big = qapp.font()
    big.setPointSizeF(before.pointSizeF() * 1.5)
    try:
        qapp.setFont(big)
        qtbot.waitUntil(
            lambda: chart.y_axis.style["tickFont"].pointSizeF() == pytest.approx(big.pointSizeF()),
            timeout=2000,
        )
        assert chart.y_axis.fixedWidth > width_before
        assert chart.row_labels()[0].startswith(RECOMMENDED_MARK)
    finally:
        qapp.setFont(before)


def test_chart_benchmark_runs(qapp, capsys):
    from gpuadvisor.views.charts._bench import main

    main(["--runs", "2", "--width", "600", "--height", "300"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["VramChart", "CostTimeChart", "WhatIfChart"]
    assert all("CPU median" in line for line in lines)


def test_report_figure_one_names_every_bar(qtbot, est_limits):
    """The PDF's memory chart (a fresh chart, never shown on a screen) names every bar: as many
    lines of text left of the bars as there are bars, and no bar there."""
    from gpuadvisor.views.charts.palette import (
        COMPONENT_COLORS,
        FIT_COLOR,
        NO_FIT_COLOR,
        TEXT_COLOR,
        TIGHT_COLOR,
    )
    from gpuadvisor.views.report_pdf import chart_images

    image = chart_images(est_limits, est_limits.decision.recommended_key)[0]
    text, weights = QColor(TEXT_COLOR), QColor(COMPONENT_COLORS["weights"])

    def near(pixel: int, colour: QColor, tolerance: int) -> bool:
        c = QColor(pixel)
        return (
            abs(c.red() - colour.red()) + abs(c.green() - colour.green()) + abs(c.blue() - colour.blue())
        ) <= tolerance

    # the rows: from the first to the last verdict marker in the column right of the bars
    width, height = image.width(), image.height()
    marks = [QColor(c) for c in (FIT_COLOR, TIGHT_COLOR, NO_FIT_COLOR)]
    marker_lines = [
        y
        for y in range(0, height, 2)
        if any(near(image.pixel(x, y), m, 30) for x in range(int(width * 0.9), width, 3) for m in marks)
    ]
    top, bottom = min(marker_lines), max(marker_lines)
    # where the bars start (the first bar's weights segment), and no bar left of that
    bars_x = min(x for x in range(width) if near(image.pixel(x, top), weights, 6))
    assert bars_x > width * 0.1  # room for the names
    assert not any(
        near(image.pixel(x, y), weights, 6)
        for y in range(top, bottom, 3)
        for x in range(int(width * 0.02), bars_x - 3, 3)
    )
    # lines of text just left of the bars (names are right-aligned there): one per bar
    names = range(int(bars_x - width * 0.04), int(bars_x - width * 0.012))
    inked = [any(near(image.pixel(x, y), text, 60) for x in names) for y in range(top - 10, bottom + 10)]
    lines = sum(1 for a, b in zip([False, *inked], inked) if b and not a)
    assert lines == len(est_limits.best_per_gpu())


def _line_through_box(line: QLineF, box: QRectF) -> bool:
    """Whether ``line`` enters the inside of ``box`` (ending on its edge does not count)."""
    inner = box.adjusted(0.5, 0.5, -0.5, -0.5)
    if inner.contains(line.p1()) or inner.contains(line.p2()):
        return True
    edges = (
        QLineF(inner.topLeft(), inner.topRight()),
        QLineF(inner.topRight(), inner.bottomRight()),
        QLineF(inner.bottomRight(), inner.bottomLeft()),
        QLineF(inner.bottomLeft(), inner.topLeft()),
    )
    return any(line.intersects(e)[0] == QLineF.IntersectionType.BoundedIntersection for e in edges)


@pytest.fixture(scope="module")
def est_4096(catalogs):
    """Pre-training a 70B model on 2T tokens, layouts searched up to 4,096 GPUs: hundreds of points."""
    s = default_scenario()
    s = replace(
        s,
        model=ModelSource(preset="llama-3.1-70b"),
        workload=Workload(kind="pretrain", weights="bf16", batch_size=1, seq_len=4096, train_tokens=2e12),
        hardware=Hardware(segment="data_centre", gpu_count_max=4096),
    )
    return estimate(s, *catalogs)


@pytest.mark.parametrize("size", [(820, 460), (900, 500), (560, 340)])
def test_cost_time_labels_never_overlap_each_other_or_a_point_at_scale(qtbot, est_4096, size):
    """A 4,096-GPU search: the star and the frontier's ends are labelled; no label overlaps another,
    any point or the plot's edge; a label placed away from its point has a leader line to it, which
    runs through no other label and across no other leader line."""
    chart = CostTimeChart(dark=False)
    qtbot.addWidget(chart)
    chart.show(est_4096, None)
    chart.resize(*size)
    chart.show()
    qtbot.waitExposed(chart)
    assert len(chart.keys()) > 200
    rects = chart.label_rects()
    points = chart.point_rects()
    labels = chart.labels()
    assert set(rects) == set(labels) and len(labels) >= 3
    rec = est_4096.decision.recommended_key
    assert rec in labels and labels[rec].startswith(RECOMMENDED_MARK)
    frontier = sorted((chart.point_position(k)[0], k) for k in chart.keys() if est_4096.candidate(k).pareto)
    assert frontier[0][1] in labels and frontier[-1][1] in labels  # the frontier's two ends
    plot = QRectF(0, 0, chart.view_box.width(), chart.view_box.height())
    items = list(rects.items())
    for i, (key, a) in enumerate(items):
        assert plot.contains(a), (key, a)  # never cut by the plot's edge
        for _other, b in items[i + 1 :]:
            assert not a.intersects(b)
        for point_key, p in points.items():
            assert not a.intersects(p), (labels[key], point_key)
    leaders = chart.leader_lines()
    for key, ((px, py), (ex, ey)) in leaders.items():
        r = rects[key]
        assert r.left() <= ex <= r.right() and r.top() <= ey <= r.bottom()
        assert points[key].contains(QPointF(px, py))
        line = QLineF(px, py, ex, ey)
        # A leader line never runs through another label's box, nor across another leader line.
        for other, box in rects.items():
            if other != key:
                assert not _line_through_box(line, box), (labels[key], labels[other])
        for other, ((qx, qy), (fx, fy)) in leaders.items():
            if other != key:
                kind, _at = line.intersects(QLineF(qx, qy, fx, fy))
                assert kind != QLineF.IntersectionType.BoundedIntersection, (labels[key], labels[other])
    # Every labelled text is visible, every other label hidden (its point's tooltip names it).
    shown = [item for item in chart.point_labels if item.isVisible()]
    assert sorted(item.toPlainText() for item in shown) == sorted(labels.values())
    chart.close()
