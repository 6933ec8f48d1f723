"""Charts are freed when their owner lets go, in Qt's order, never by the cyclic garbage collector.

A chart in a reference cycle (an item holding the chart's bound method as its tooltip callback,
or PySide's keep-alive reference from a focus proxy) was freed by the garbage collector, which
breaks a cycle in any order: it could free a Python-owned pyqtgraph item first, whose destructor
then freed the chart and its scene while that item was still being destroyed in the scene. The
process died with a segmentation fault inside a later test (``Garbage-collecting``, in
``QGraphicsScene::clear``), only when several GUI test files ran in one process.
"""

from __future__ import annotations

import gc
import weakref

import pytest
from PySide6.QtCore import QPointF, Qt

from gpuadvisor.views.charts import CostTimeChart, VramChart, WhatIfChart
from gpuadvisor.views.charts.serving_chart import ServingChart


@pytest.fixture
def no_cyclic_gc():
    """The cyclic garbage collector off, so that only reference counting can free a chart."""
    was_enabled = gc.isenabled()
    gc.disable()
    yield
    if was_enabled:
        gc.enable()


def _shown(qtbot, cls, est):
    chart = cls()
    chart.resize(820, 420)
    chart.show()
    qtbot.waitExposed(chart)
    chart.show(est, None)
    return chart


@pytest.mark.parametrize("cls", [VramChart, CostTimeChart, WhatIfChart, ServingChart])
def test_a_chart_is_freed_as_soon_as_it_is_let_go(qtbot, est_limits, no_cyclic_gc, cls):
    chart = _shown(qtbot, cls, est_limits)
    # hovered and clicked as a user does (the tooltips and click handlers are wired)
    qtbot.mouseMove(chart.plot.viewport(), chart.plot.viewport().rect().center())
    qtbot.mouseClick(chart.plot.viewport(), Qt.MouseButton.LeftButton)
    ref = weakref.ref(chart)
    chart.close()
    del chart
    assert ref() is None, f"a {cls.__name__} is kept alive by a reference cycle"


def test_the_cost_chart_tooltip_still_names_the_point(qtbot, est_limits):
    chart = _shown(qtbot, CostTimeChart, est_limits)
    spot = chart.pareto_points.points()[0]
    tip = chart.pareto_points.opts["tip"](spot.pos().x(), spot.pos().y(), spot.data())
    assert tip and "$" in tip  # the setup's cost, from the chart's own tooltip text
    chart.close()


def test_the_vram_chart_takes_the_focus_from_a_click_on_its_plot(qtbot, est_limits):
    chart = _shown(qtbot, VramChart, est_limits)
    chart.resize(900, 250)  # fewer rows than GPUs: the keys scroll
    qtbot.waitUntil(lambda: chart.scroll_bar.isEnabled())
    pos = chart.plot.mapFromScene(chart.view_box.mapViewToScene(QPointF(5.0, 0)))
    qtbot.mouseClick(chart.plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.waitUntil(chart.hasFocus)
    qtbot.keyClick(chart.focusWidget() or chart, Qt.Key.Key_Down)
    assert chart.visible_rows()[0] == 1
    chart.close()


def test_charts_let_go_in_a_row_then_collected_do_not_crash(qtbot, est_limits, est_nothing_fits):
    """The sequence that crashed: charts of several kinds shown, updated and dropped one after the
    other (as test files do), then a garbage collection while new charts are drawn."""
    refs = []
    for est in (est_limits, est_nothing_fits, est_limits):
        for cls in (VramChart, CostTimeChart, WhatIfChart, ServingChart):
            chart = _shown(qtbot, cls, est)
            chart.show(None, None)
            chart.show(est, None)
            refs.append(weakref.ref(chart))
            chart.close()
            del chart
    gc.collect()
    survivor = _shown(qtbot, CostTimeChart, est_limits)
    assert all(r() is None for r in refs)
    assert survivor.pareto_points.points().size > 0
    survivor.close()
