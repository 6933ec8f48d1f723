"""The Serving workload in the window: the choice replaces the batch with traffic and targets, the
ranking shows the fleet, the Serving chart draws the core's curves, and a scenario with
``workload.serving`` opens and saves with its service."""

from __future__ import annotations

import json
from pathlib import Path

from gui_helpers import retype
from PySide6.QtCore import Qt

from gpuadvisor.core.formats.scenario import load_scenario
from gpuadvisor.core.presentation.text import render_estimate
from gpuadvisor.core.specs.constants import shipped_constants
from gpuadvisor.gui.ranking.model import COL_COST, COL_SETUP
from gpuadvisor.gui.results_view import SERVING_TAB

ROOT = Path(__file__).resolve().parents[2]


def choose_serving(w, qtbot):
    page = w.workload_page
    page.kind.setCurrentIndex(page.kind.findData("serving"))
    w.state.flush()
    return page


def test_choosing_serving_replaces_the_batch_with_traffic_and_targets(window, qtbot):
    w = window
    page = choose_serving(w, qtbot)
    assert page.serving_box.isVisible()
    assert not page.batch.isVisible()
    est = w.state.estimate
    assert est.scenario.workload.kind == "inference" and est.scenario.workload.serving is not None
    rec = est.recommended
    assert rec is not None and rec.serving is not None and rec.serving.meets_slo
    # The ranking shows the fleet (replicas x GPUs) and the monthly cost, as the core computed them.
    model = w.results.ranking_model
    assert model.headerData(COL_COST, Qt.Orientation.Horizontal) == "Per month"
    row = model.row_of(rec.key)
    assert model.texts(row)[COL_SETUP].startswith(f"{rec.serving.replicas} \u00d7")
    # The Serving tab draws the recommended fleet's curve and its operating point.
    tabs = w.results.chart_tabs
    assert tabs.isTabVisible(SERVING_TAB)
    tabs.setCurrentIndex(SERVING_TAB)
    chart = w.results.serving_chart
    assert rec.key in chart.shown_keys()
    assert len(chart.points.data) == len(chart.shown_keys())


def test_more_traffic_typed_in_gives_more_replicas(window, qtbot):
    w = window
    page = choose_serving(w, qtbot)
    before = w.state.estimate.recommended.serving.gpus_total
    retype(qtbot, page.serving_box.rate.edit, "400")
    w.state.flush()
    after = w.state.estimate
    assert after.scenario.workload.serving.requests_per_s == 400
    assert after.recommended.serving.gpus_total > before


def test_a_bad_target_is_named_and_nothing_is_computed(window, qtbot):
    w = window
    page = choose_serving(w, qtbot)
    retype(qtbot, page.serving_box.itl.edit, "-3")
    w.state.flush()
    assert "Between tokens" in w.results.banner.text()


def test_back_to_training_hides_the_service(window, qtbot):
    w = window
    page = choose_serving(w, qtbot)
    page.kind.setCurrentIndex(page.kind.findData("lora"))
    w.state.flush()
    assert not page.serving_box.isVisible()
    assert w.state.estimate.scenario.workload.serving is None
    assert not w.results.chart_tabs.isTabVisible(SERVING_TAB)


def test_a_serving_scenario_opens_and_saves_with_its_service(window, tmp_path):
    w = window
    data = json.loads((ROOT / "docs" / "examples" / "serving-20-replicas.json").read_text(encoding="utf-8"))
    path = tmp_path / "svc.json"
    path.write_text(json.dumps(data))
    assert w.open_path(str(path))
    w.state.flush()  # a service is estimated in the background: wait for it
    page = w.workload_page
    assert page.kind.currentData() == "serving"
    assert page.serving_box.rate.value() == data["workload"]["serving"]["requests_per_s"]
    assert w.state.estimate.recommended.serving.replicas == 20
    out = tmp_path / "saved.json"
    assert w._save_to(out)
    assert load_scenario(out).workload.serving == load_scenario(path).workload.serving


def test_a_per_request_time_typed_in_reaches_the_estimate_and_clearing_it_restores_the_fitted_one(
    window, qtbot
):
    """The serving stack's time per request is an input: typed, it is the scenario's and lengthens
    the recommended fleet's TTFT; cleared, the fitted value is back (the field's placeholder)."""

    w = window
    page = choose_serving(w, qtbot)
    box = page.serving_box
    # The default engine (vLLM) serves: its fitted per-request time.
    assert (
        box.overhead.edit.placeholderText()
        == f"{shipped_constants().request_overhead_s['vllm'] * 1000:g} (fitted)"
    )
    fitted = w.state.estimate
    assert fitted.scenario.workload.serving.request_overhead_ms is None
    retype(qtbot, box.overhead.edit, "300")
    w.state.flush()
    slow = w.state.estimate
    assert slow.scenario.workload.serving.request_overhead_ms == 300
    assert slow.recommended.serving.ttft_s > fitted.recommended.serving.ttft_s
    retype(qtbot, box.overhead.edit, "-1")
    w.state.flush()
    assert "Per-request time" in w.results.banner.text()
    retype(qtbot, box.overhead.edit, "")
    w.state.flush()
    back = w.state.estimate
    assert back.scenario.workload.serving.request_overhead_ms is None
    assert back.recommended.serving.to_dict() == fitted.recommended.serving.to_dict()
    # Another engine, another stack: TensorRT-LLM's fitted time, and the estimate uses it.
    page.engine.setCurrentIndex(page.engine.findData("tensorrt-llm"))
    w.state.flush()
    trt = shipped_constants().request_overhead_s["tensorrt-llm"]
    assert box.overhead.edit.placeholderText() == f"{trt * 1000:g} (fitted)"
    assert w.state.estimate.engine == "tensorrt-llm"
    assert f"{trt * 1000:g} ms of serving-stack time" in render_estimate(w.state.estimate)


def test_an_older_vllm_release_is_a_choice_right_after_vllm_and_costs_more_gpus(window, qtbot):
    """vLLM 0.7 and earlier (the V0 engine) sits right after vLLM in the engine list; picking it
    keeps vLLM's per-request time and gives the slower engine's fleet: no fewer replicas for the
    same traffic and targets, and the core's engine id reaches the estimate."""

    w = window
    page = choose_serving(w, qtbot)
    names = [page.engine.itemData(i) for i in range(page.engine.count())]
    assert names.index("vllm-v0") == names.index("vllm") + 1
    assert "V0" in page.engine.itemText(names.index("vllm-v0"))
    page.engine.setCurrentIndex(page.engine.findData("vllm"))
    w.state.flush()
    current = w.state.estimate.recommended.serving
    page.engine.setCurrentIndex(page.engine.findData("vllm-v0"))
    w.state.flush()
    older = w.state.estimate
    assert older.engine == "vllm-v0"
    assert (
        page.serving_box.overhead.edit.placeholderText()
        == f"{shipped_constants().request_overhead_s['vllm'] * 1000:g} (fitted)"
    )
    assert older.recommended.serving.replicas >= current.replicas
    assert "vLLM 0.7 and earlier" in render_estimate(older)


def test_a_setup_that_misses_shows_one_request_alone_in_the_ranking():
    """The ranking's TTFT · ITL cell of a setup that misses its targets is one request on an idle
    replica (why it misses), marked 'alone', and sorts by it; a setup that meets shows the fleet's."""
    from gpuadvisor.core.estimation.estimate import estimate
    from gpuadvisor.core.formats.scenario import scenario_from_dict
    from gpuadvisor.core.specs.hardware import load_gpu_catalog
    from gpuadvisor.core.specs.presets import load_model_catalog
    from gpuadvisor.gui.ranking.serving_cells import serving_sort_value, serving_text

    example = json.loads((ROOT / "docs" / "examples" / "serving-1-replica.json").read_text())

    def run(ttft):
        example["workload"]["serving"]["ttft_s"] = ttft
        example["hardware"] = {"gpu": "h100-sxm", "gpu_count": 1}
        sc = scenario_from_dict(example)
        return next(c for c in estimate(sc, load_gpu_catalog(), load_model_catalog()).candidates if c.serving)

    miss = run(0.05)
    assert not miss.serving.meets_slo
    assert (
        serving_text(miss, "time")
        == f"{miss.serving.ttft_alone_s:.2f} s · {miss.serving.itl_alone_ms:.0f} ms alone"
    )
    assert serving_sort_value(miss, "time")[0] == miss.serving.ttft_alone_s
    meet = run(2.0)
    a = meet.serving.at_load
    assert meet.serving.meets_slo and a is not None
    # A setup that meets shows the p50 / p90 of its simulated requests, and the targets' status.
    assert serving_text(meet, "time") == (
        f"{a.ttft_s.p50:.2f} / {a.ttft_s.p90:.2f} s · {a.itl_ms.p50:.0f} / {a.itl_ms.p90:.0f} ms"
    )
    assert serving_text(meet, "deadline") == meet.serving.status in ("meets", "likely")


def test_a_load_in_clients_without_targets_gives_the_operating_point(window, qtbot):
    """Issue 46: the load as clients, no targets; the ranking shows the percentiles at that load and
    the Latency tab draws the latencies against the load; speculation typed in reaches the core."""
    from gpuadvisor.gui.results_view import LATENCY_TAB

    w = window
    page = choose_serving(w, qtbot)
    box = page.serving_box
    box.load_kind.setCurrentIndex(box.load_kind.findData("clients"))
    assert box.clients.isVisible() and not box.rate.isVisible() and not box.arrival.isVisible()
    retype(qtbot, box.clients.edit, "32")
    retype(qtbot, box.ttft.edit, "")
    retype(qtbot, box.itl.edit, "")
    w.state.flush()
    est = w.state.estimate
    spec = est.scenario.workload.serving
    assert spec.concurrency == 32 and spec.requests_per_s is None and not spec.has_targets
    rec = est.recommended
    assert rec is not None and rec.serving.at_load is not None and rec.serving.status is None
    model = w.results.ranking_model
    texts = model.texts(model.row_of(rec.key))
    p = rec.serving.at_load.ttft_s
    assert any(f"{p.p50:.2f} / {p.p90:.2f}" in t for t in texts), texts
    tabs = w.results.chart_tabs
    assert tabs.isTabVisible(LATENCY_TAB)
    tabs.setCurrentIndex(LATENCY_TAB)
    qtbot.waitUntil(lambda: bool(w.results.latency_panel.ttft.shown_keys()), timeout=20_000)
    assert rec.key in w.results.latency_panel.ttft.shown_keys()
    box.method.setCurrentIndex(box.method.findData("eagle"))
    w.state.flush()
    assert w.state.estimate.scenario.workload.speculative.method == "eagle"


def test_a_service_without_latency_targets_is_drawn_without_a_target_line(qtbot, catalogs):
    # The targets are optional (ServingSpec); the chart divided by the missing ITL target and
    # raised, so such a service broke the Serving tab and the PDF report.
    from dataclasses import replace

    from gpuadvisor.core.estimation.estimate import estimate
    from gpuadvisor.core.formats.scenario import default_scenario
    from gpuadvisor.core.specs.serving import ServingSpec
    from gpuadvisor.views.charts.serving_chart import ServingChart, _targets_text

    gpus, models = catalogs
    scenario = default_scenario()
    service = ServingSpec(requests_per_s=5.0, ttft_s=None, itl_ms=None)
    scenario = replace(scenario, workload=replace(scenario.workload, kind="inference", serving=service))
    est = estimate(scenario, gpus, models)
    chart = ServingChart()
    qtbot.addWidget(chart)
    chart.show(est, None)
    assert chart.shown_keys()
    assert not chart.target_line.isVisible()
    assert _targets_text(replace(service, itl_ms=20.0)) == "at most 20 ms between tokens at p90"


def test_a_service_offers_its_inference_default_engine_never_a_training_one(window, qtbot):
    """The engine list of a service names the inference engine the core would pick, as an
    inference workload does ("serving" is inference with traffic): llama.cpp for a GGUF model on
    the desktop card, as the kind is chosen and before anything is computed."""
    w = window
    assert w.open_path(str(ROOT / "docs" / "examples" / "desktop-rtx4090-qwen3-32b.json"))
    w.state.flush()
    page = w.workload_page
    page.kind.setCurrentIndex(page.kind.findData("serving"))  # once raised from the engine list
    default = page.engine.itemText(0)
    assert default.startswith("Default for this workload") and "llama.cpp" in default, default
    engines = {page.engine.itemData(i) for i in range(1, page.engine.count())}
    assert "vllm" in engines and "megatron" not in engines
    w.state.flush()
    assert w.state.estimate.scenario.workload.kind == "inference"
    assert w.state.estimate.scenario.workload.serving is not None
