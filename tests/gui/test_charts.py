"""Chart widgets: they draw the core's numbers exactly, update items in place, never draw NaN,
explain empty states, and report clicks."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.memory import COMPONENTS
from gpuadvisor.core.formats.scenario import default_scenario
from gpuadvisor.core.specs.workload import Hardware
from gpuadvisor.views.charts import (
    AXIS_LABELS,
    CostTimeChart,
    VramChart,
    WhatIfChart,
    WhatIfCurve,
    default_gpu_ids,
    whatif_curves,
)
from gpuadvisor.views.charts._base import ScaleAxis
from gpuadvisor.views.charts.labels import fmt_tick, short_gpu_name
from gpuadvisor.views.charts.palette import COMPONENT_COLORS, COMPONENT_LABELS, COMPONENT_ORDER, qcolor

WHATIF_GPUS = ["rtx-4090", "a100-40gb", "h100-sxm", "h200", "mi300x"]


# -- fixtures ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def est(catalogs):
    return estimate(replace(default_scenario(), hardware=Hardware()), *catalogs)  # the whole catalog


def _show(qtbot, widget, width=820, height=560):
    qtbot.addWidget(widget)
    widget.resize(width, max(height, widget.minimumHeight()))
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def _colours(widget) -> int:
    image = widget.grab().toImage()
    step = 3
    return len(
        {image.pixel(x, y) for x in range(0, image.width(), step) for y in range(0, image.height(), step)}
    )


def _finite_arrays(*arrays) -> bool:
    return all(np.all(np.isfinite(np.asarray(a, dtype=float))) for a in arrays if a is not None)


def _click_view_point(qtbot, chart, x: float, y: float) -> None:
    scene_pt = chart.view_box.mapViewToScene(QPointF(x, y))
    pos = chart.plot.mapFromScene(scene_pt)
    qtbot.mouseClick(chart.plot.viewport(), Qt.MouseButton.LeftButton, pos=pos)


# -- palette and labels ------------------------------------------------------------------------
def test_palette_has_seven_distinct_components_in_core_order():
    assert COMPONENT_ORDER == COMPONENTS
    assert set(COMPONENT_LABELS) == set(COMPONENT_COLORS) == set(COMPONENT_ORDER)
    assert len({qcolor(name).name() for name in COMPONENT_ORDER}) == 7
    assert qcolor("pareto", alpha=10).alpha() == 10
    with pytest.raises(KeyError):
        qcolor("no-such-colour")


@pytest.mark.parametrize(
    "name, count, expected",
    [
        ("NVIDIA H100 SXM5 80 GB", 2, "H100 SXM5 80 GB ×2"),
        ("NVIDIA GeForce RTX 4090", 1, "RTX 4090"),
        ("NVIDIA Tesla V100 SXM2 16 GB", 4, "V100 SXM2 16 GB ×4"),
        ("AMD Instinct MI300X", 8, "AMD Instinct MI300X ×8"),
    ],
)
def test_short_gpu_names(name, count, expected):
    assert short_gpu_name(name, count) == expected


def test_long_names_are_shortened():
    assert len(short_gpu_name("NVIDIA GH200 Grace Hopper Superchip (96 GB HBM3)")) <= 24


def test_log_axis_ticks_are_plain_numbers(qtbot):
    axis = ScaleAxis("bottom")
    axis.set_log(True)
    levels = axis.tickValues(-1.0, 2.0, 600)
    major = levels[0][1]
    labels = axis.tickStrings(major, 1.0, levels[0][0])
    assert {"0.1", "1", "10", "100"} <= set(labels)
    assert all(s is None for s in axis.tickStrings(levels[1][1], 1.0, None))
    assert fmt_tick(12000) == "12,000" and fmt_tick(0.05) == "0.05"


# -- VRAM chart --------------------------------------------------------------------------------
def test_vram_bars_are_the_cores_numbers(qtbot, est):
    chart = _show(qtbot, VramChart())
    candidates = list(est.best_per_gpu().values())
    chart.set_candidates(candidates)
    assert chart.row_count() == len(candidates) == len({c.gpu.id for c in est.candidates})
    assert chart.message() == ""
    for row, c in enumerate(candidates):
        gib = c.memory.gib()
        left = 0.0
        for name in COMPONENT_ORDER:
            opts = chart.segments[name].opts
            assert opts["y"][row] == row
            assert opts["x0"][row] == pytest.approx(left)
            assert opts["width"][row] == pytest.approx(gib[name])
            left += gib[name]
        assert left == pytest.approx(gib["device_total"])
    cap_x, cap_y = chart.capacity.getData()
    assert list(cap_x[::2]) == pytest.approx([c.capacity_gib for c in candidates])
    assert list(cap_x[1::2]) == pytest.approx([c.capacity_gib for c in candidates])
    assert list(np.round((cap_y[::2] + cap_y[1::2]) / 2)) == list(range(len(candidates)))
    ticks = chart.y_axis._tickLevels[0]
    assert [t[1] for t in ticks] == [short_gpu_name(c.gpu.name, c.gpu_count) for c in candidates]
    assert sum(len(item.data) for item in chart.markers.values()) == len(candidates)


def test_vram_has_room_for_every_name(qtbot, est):
    chart = _show(qtbot, VramChart())
    chart.set_candidates(list(est.best_per_gpu().values()))
    vb_height = chart.view_box.sceneBoundingRect().height()
    shown = len(chart.visible_rows())
    assert shown >= 3
    assert vb_height / shown >= 17  # font is 9 pt: no overlapping names (the rest scroll)


def test_vram_items_are_updated_in_place(qtbot, est, est_nothing_fits):
    chart = _show(qtbot, VramChart())
    items_before = list(chart.plot_item.items)

    def identities():
        return [id(chart.segments[n]) for n in COMPONENT_ORDER] + [id(chart.capacity), id(chart.track)]

    ids_before = identities()
    chart.set_candidates(list(est.best_per_gpu().values()))
    chart.set_candidates(list(est_nothing_fits.best_per_gpu().values()))
    chart.set_candidates(list(est.best_per_gpu().values())[:5])
    assert identities() == ids_before
    assert list(chart.plot_item.items) == items_before
    assert chart.row_count() == 5


def test_vram_never_draws_nan(qtbot, est, est_nothing_fits):
    chart = _show(qtbot, VramChart())
    for e in (est, est_nothing_fits):
        chart.set_candidates(list(e.best_per_gpu().values()))
        for bar in [chart.track, *chart.segments.values()]:
            assert _finite_arrays(bar.opts["x0"], bar.opts["y"], bar.opts["width"])
        assert _finite_arrays(*chart.capacity.getData())
        for item in chart.markers.values():
            assert _finite_arrays(*item.getData())
    # a candidate with a NaN is skipped, never drawn
    good = list(est.best_per_gpu().values())[:3]
    bad = good[0]._replace(capacity_gib=float("nan"))
    chart.set_candidates([bad, *good])
    assert chart.row_count() == 3


def test_vram_tooltip_has_exact_numbers(qtbot, est):
    chart = _show(qtbot, VramChart())
    candidates = list(est.best_per_gpu().values())
    chart.set_candidates(candidates)
    text = chart.tooltip_for_row(0)
    c = candidates[0]
    gib = c.memory.gib()
    for name in ("weights", "activations", "overhead"):
        assert f"{gib[name]:,.2f} GiB" in text
    assert f"{gib['device_total']:,.2f} GiB" in text
    assert f"{c.capacity_gib:,.2f} GiB" in text
    assert f"{c.headroom_gib:,.2f} GiB" in text
    assert "Headroom" in text


def test_vram_hover_sets_the_tooltip(qtbot, est):
    chart = _show(qtbot, VramChart())
    chart.set_candidates(list(est.best_per_gpu().values()))
    chart._on_mouse_moved(chart.view_box.mapViewToScene(QPointF(5.0, 3.0)))
    assert chart.plot.toolTip() == chart.tooltip_for_row(3)
    chart._on_mouse_moved(QPointF(-500, -500))
    assert chart.plot.toolTip() == ""


def test_vram_click_emits_gpu_id(qtbot, est):
    chart = _show(qtbot, VramChart())
    candidates = list(est.best_per_gpu().values())
    chart.set_candidates(candidates)
    with qtbot.waitSignal(chart.gpuClicked, timeout=1000) as blocker:
        _click_view_point(qtbot, chart, 5.0, 4.0)
    assert blocker.args == [candidates[4].gpu.id]


def test_vram_empty_and_nothing_fits(qtbot, est_nothing_fits):
    chart = _show(qtbot, VramChart())
    chart.set_candidates([])
    assert "No GPU" in chart.message()
    assert chart._message.isVisible()
    chart.set_candidates(list(est_nothing_fits.best_per_gpu().values()))
    assert not chart._message.isVisible()
    assert "Nothing fits" in chart.message()
    assert len(chart.markers["does not fit"].data) == chart.row_count() > 0
    assert len(chart.markers["fits"].data) == 0
    assert _colours(chart) > 6


def test_vram_renders(qtbot, est):
    chart = _show(qtbot, VramChart())
    chart.set_candidates(list(est.best_per_gpu().values()))
    assert _colours(chart) > 8


# -- cost/time chart ---------------------------------------------------------------------------
def _priced(e):
    return [c for c in e.candidates if c.fits and c.cost is not None and c.cost.cost_usd is not None]


def test_cost_time_points_and_pareto(qtbot, est):
    chart = _show(qtbot, CostTimeChart())
    chart.set_estimate(est)
    priced = _priced(est)
    assert len(chart.pareto_points.data) + len(chart.other_points.data) == len(priced) == len(chart.keys())
    assert len(chart.pareto_points.data) == sum(c.pareto for c in est.candidates) > 0
    assert {p for p in chart.pareto_points.data["data"]} == {c.key for c in priced if c.pareto}
    assert len(chart.error_bars.opts["x"]) == len(priced)
    assert chart.message() == ""


def test_cost_time_log_axes_place_error_bars_on_the_range(qtbot, est):
    chart = _show(qtbot, CostTimeChart())
    chart.set_estimate(est)
    assert chart.x_axis.is_log and chart.y_axis.is_log  # hours span 0.25..24, cost 8..200
    by_key = {c.key: c for c in _priced(est)}
    o = chart.error_bars.opts
    for i, key in enumerate(chart.keys()):
        c = by_key[key]
        assert o["x"][i] == pytest.approx(math.log10(c.cost.job_hours.expected))
        assert o["x"][i] - o["left"][i] == pytest.approx(math.log10(c.cost.job_hours.low))
        assert o["x"][i] + o["right"][i] == pytest.approx(math.log10(c.cost.job_hours.high))
        assert o["y"][i] - o["bottom"][i] == pytest.approx(math.log10(c.cost.cost_usd.low))
        assert o["y"][i] + o["top"][i] == pytest.approx(math.log10(c.cost.cost_usd.high))
        assert chart.point_position(key) == pytest.approx((o["x"][i], o["y"][i]))


def test_cost_time_never_draws_nan(qtbot, est, est_limits, est_nothing_fits):
    chart = _show(qtbot, CostTimeChart())
    for e in (est, est_limits, est_nothing_fits, est):
        chart.set_estimate(e)
        o = chart.error_bars.opts
        assert _finite_arrays(o["x"], o["y"], o["left"], o["right"], o["top"], o["bottom"])
        for item in (chart.pareto_points, chart.other_points, chart.selected_ring, chart.frontier):
            assert _finite_arrays(*item.getData())


def test_cost_time_deadline_and_budget_lines(qtbot, est, est_limits):
    chart = _show(qtbot, CostTimeChart())
    chart.set_estimate(est)
    assert not chart.deadline_line.isVisible() and not chart.budget_line.isVisible()
    chart.set_estimate(est_limits)
    assert chart.deadline_line.isVisible() and chart.budget_line.isVisible()
    assert chart.deadline_line.value() == pytest.approx(math.log10(2.0))
    assert chart.budget_line.value() == pytest.approx(math.log10(30.0))
    assert "2.0 h" in chart.deadline_line.label.toPlainText()
    assert "$30" in chart.budget_line.label.toPlainText()
    chart.set_estimate(est)
    assert not chart.deadline_line.isVisible() and not chart.budget_line.isVisible()


def test_cost_time_items_are_updated_in_place(qtbot, est, est_limits, est_nothing_fits):
    chart = _show(qtbot, CostTimeChart())

    def identities():
        return [
            id(x)
            for x in (
                chart.error_bars,
                chart.pareto_error_bars,
                chart.frontier,
                chart.other_points,
                chart.pareto_points,
                chart.selected_ring,
                chart.deadline_line,
                chart.budget_line,
            )
        ]

    items = identities()
    before = list(chart.plot_item.items)
    chart.set_estimate(est)
    chart.set_estimate(est_limits)
    chart.set_estimate(est_nothing_fits)
    chart.set_estimate(est)
    assert identities() == items
    assert list(chart.plot_item.items) == before


def test_cost_time_click_selects_a_candidate(qtbot, est):
    chart = _show(qtbot, CostTimeChart())
    chart.set_estimate(est)
    target = next(c for c in est.ranking if c.pareto)
    x, y = chart.point_position(target.key)
    with qtbot.waitSignal(chart.candidateSelected, timeout=1000) as blocker:
        _click_view_point(qtbot, chart, x, y)
    # Setups with the same cost and time (fsdp and zero3, say) share a point: any of them is right.
    assert chart.point_position(blocker.args[0]) == pytest.approx((x, y))
    assert chart.selected_key() == blocker.args[0]
    ring_x, ring_y = chart.selected_ring.getData()
    assert (ring_x[0], ring_y[0]) == pytest.approx((x, y))


def test_cost_time_set_selected_and_tooltip(qtbot, est):
    chart = _show(qtbot, CostTimeChart())
    chart.set_estimate(est)
    key = chart.keys()[0]
    with qtbot.assertNotEmitted(chart.candidateSelected):
        chart.set_selected(key)
    assert len(chart.selected_ring.data) == 1
    chart.set_selected("no such key")
    assert len(chart.selected_ring.data) == 0
    c = next(c for c in est.candidates if c.key == key)
    tip = chart.tooltip_for_key(key)
    assert "Job time" in tip and "Cost" in tip and "Per 1M tokens" in tip
    assert chart._tip_for_spot(0, 0, key) == tip
    assert short_gpu_name(c.gpu.name, c.gpu_count).split(" ×")[0] in tip


def test_cost_time_empty_state(qtbot, est_nothing_fits):
    chart = _show(qtbot, CostTimeChart())
    chart.set_estimate(est_nothing_fits)
    assert "Nothing fits" in chart.message()
    assert len(chart.keys()) == 0 and len(chart.pareto_points.data) == 0
    assert not chart.deadline_line.isVisible()
    assert _colours(chart) > 2  # the message is drawn
    chart.set_estimate(None)
    assert chart.message()


def test_cost_time_renders(qtbot, est_limits):
    chart = _show(qtbot, CostTimeChart())
    chart.set_estimate(est_limits)
    assert _colours(chart) > 8


# -- what-if -------------------------------------------------------------------------------------
@pytest.mark.parametrize("axis", ["context", "batch"])
def test_whatif_curves_rise_and_cross_capacity_at_the_cores_limit(est, axis):
    curves = whatif_curves(est, WHATIF_GPUS + ["no-such-gpu"], axis)
    assert [c.gpu_id for c in curves] == WHATIF_GPUS
    best = est.best_per_gpu()
    for curve in curves:
        assert len(curve.xs) == len(curve.ys_gib) > 10
        assert all(math.isfinite(y) for y in curve.ys_gib)
        assert all(b >= a for a, b in zip(curve.xs, curve.xs[1:]))
        assert all(b >= a - 1e-9 for a, b in zip(curve.ys_gib, curve.ys_gib[1:]))  # non-decreasing
        what_if = est.what_if(best[curve.gpu_id])
        limit = what_if.max_context if axis == "context" else what_if.max_batch
        assert curve.limit_x == limit
        for x, y in zip(curve.xs, curve.ys_gib):
            if x <= limit:
                assert y <= curve.capacity_gib + 1e-9
            else:
                assert y > curve.capacity_gib
    if axis == "context":
        first = curves[0]
        assert first.xs[0] == 128 and first.xs[-1] >= est.model.max_context
        assert any(c.xs[0] <= c.limit_x <= c.xs[-1] for c in curves)  # some cross inside the range


def test_whatif_chart_draws_the_curves(qtbot, est):
    chart = _show(qtbot, WhatIfChart())
    curves = whatif_curves(est, WHATIF_GPUS, "context")
    chart.set_curves(AXIS_LABELS["context"], curves)
    assert chart.x_axis.is_log
    assert chart.message() == ""
    for i, c in enumerate(curves):
        fit_x, fit_y = chart.curves[i].getData()
        over_x, over_y = chart.over_curves[i].getData()
        assert _finite_arrays(fit_x, fit_y, over_x, over_y)
        assert max(fit_y) <= c.capacity_gib + 1e-9
        assert len(over_y) == 0 or min(over_y) >= c.capacity_gib - 1e-9
        assert chart.capacity_lines[i].value() == pytest.approx(c.capacity_gib)
        assert chart.curves[i].isVisible() and chart.capacity_lines[i].isVisible()
    assert not chart.curves[len(curves)].isVisible()
    crossing = [c for c in curves if c.xs[0] <= c.limit_x <= c.xs[-1]]
    lx, ly = chart.limits.getData()
    assert list(lx) == pytest.approx([math.log10(c.limit_x) for c in crossing])
    assert list(ly) == pytest.approx([c.capacity_gib for c in crossing])
    assert chart.legend_labels()[: len(curves)] == [
        f"\u2605 {c.label} (recommended)" if c.recommended else c.label for c in curves
    ]
    assert _colours(chart) > 8


def test_whatif_pool_is_reused(qtbot, est):
    chart = _show(qtbot, WhatIfChart())

    def identities():
        return [id(x) for x in (*chart.curves, *chart.over_curves, *chart.capacity_lines, chart.limits)]

    ids = identities()
    before = list(chart.plot_item.items)
    chart.set_curves(AXIS_LABELS["context"], whatif_curves(est, WHATIF_GPUS, "context"))
    chart.set_curves(AXIS_LABELS["batch"], whatif_curves(est, WHATIF_GPUS[:2], "batch"))
    assert identities() == ids
    assert list(chart.plot_item.items) == before
    assert [c.isVisible() for c in chart.curves] == [True, True, False, False, False, False]
    assert not chart.x_axis.is_log  # a batch of 1 to 64
    assert len(chart.legend.items) == 2 + 2  # two GPUs, capacity, largest that fits


def test_whatif_too_many_curves_and_bad_points(qtbot, est):
    chart = _show(qtbot, WhatIfChart())
    ids = list(est.best_per_gpu())[:9]
    chart.set_curves("Context", whatif_curves(est, ids, "context", points=12))
    assert len(chart.shown_curves()) == 6
    nan = WhatIfCurve(
        label="bad", xs=(1.0, 2.0, 3.0), ys_gib=(1.0, float("nan"), float("inf")), capacity_gib=2.0
    )
    chart.set_curves("Batch size", [nan])
    x, y = chart.curves[0].getData()
    assert _finite_arrays(x, y) and list(y) == [1.0]


def test_whatif_empty_and_nothing_fits(qtbot, est_nothing_fits):
    chart = _show(qtbot, WhatIfChart())
    chart.set_curves(AXIS_LABELS["context"], [])
    assert "Pick GPUs" in chart.message()
    chart.set_curves(AXIS_LABELS["context"], whatif_curves(est_nothing_fits, WHATIF_GPUS, "context"))
    assert "None of these GPUs fits" in chart.message()
    assert len(chart.limits.data) == 0
    assert _colours(chart) > 4


def test_default_gpu_ids(est, est_nothing_fits):
    ids = default_gpu_ids(est, 4)
    assert len(ids) == 4 and len(set(ids)) == 4
    assert ids[0] == est.ranking[0].gpu.id
    assert len(default_gpu_ids(est_nothing_fits, 3)) == 3


def test_render_image_for_the_report(qtbot, est):
    chart = _show(qtbot, VramChart(), 800, 700)
    chart.set_candidates(list(est.best_per_gpu().values()))
    image = chart.render_image(dpr=2.0)
    # the plot's own size: the widget less its scroll bar (which is not part of the image)
    assert image.width() == 2 * chart.plot.width() and chart.plot.width() >= 770
    assert image.height() >= 2 * 600
    colours = {image.pixel(x, y) for x in range(0, image.width(), 7) for y in range(0, image.height(), 7)}
    assert len(colours) > 8


def test_offloaded_state_gets_a_host_memory_bar_beside_the_vram_bar(qtbot, catalogs):
    from gpuadvisor.core.formats.scenario import scenario_from_dict
    from gpuadvisor.views.charts.vram_chart import HOST_LABEL

    chart = _show(qtbot, VramChart())
    plain = estimate(default_scenario(), *catalogs)
    chart.show_estimate(plain)
    assert len(chart.host_bar.opts["width"]) == 0
    assert not any(label == HOST_LABEL for _, label in ((s, lbl.text) for s, lbl in chart.legend.items))
    offload = scenario_from_dict(
        {
            "model": {"preset": "llama-2-13b"},
            "workload": {"kind": "full_finetune", "seq_len": 512, "offload": {"optimizer": "cpu"}},
            "hardware": {"segment": "data_centre", "gpu_count": 1},
        }
    )
    est = estimate(offload, *catalogs)
    chart.show_estimate(est)
    rows = [chart.candidate_at(r) for r in range(chart.row_count())]
    widths = chart.host_bar.opts["width"]
    assert list(widths) == pytest.approx([c.memory.host / 2**30 for c in rows])
    starts = chart.host_bar.opts["x0"]
    assert all(s >= max(c.memory.device_total / 2**30, c.capacity_gib) for s, c in zip(starts, rows))
    assert any(lbl.text == HOST_LABEL for _, lbl in chart.legend.items)
    assert HOST_LABEL in chart.tooltip_for_row(0)
