"""What a user sees after common steps, checked on the real window driven as a user drives it:
the detail panel follows the answer after a file is opened, a laid-out job's name is readable in
the ranking, the chart legends stay inside their charts on a laptop screen, and the status line
speaks plain English."""

from __future__ import annotations

from pathlib import Path

from gui_helpers import settle
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from gpuadvisor.gui.ranking.model import COL_SETUP

ROOT = Path(__file__).resolve().parents[2]
SERVING_EXAMPLE = ROOT / "docs" / "examples" / "serving-20-replicas.json"


def _select_preset(w, preset_id: str) -> None:
    lst = w.model_page.preset_list
    for i in range(lst.count()):
        if lst.item(i).data(Qt.ItemDataRole.UserRole) == preset_id:
            lst.setCurrentRow(i)
            return
    raise AssertionError(preset_id)


def test_opening_a_service_shows_its_recommendation_in_the_detail_panel(window, monkeypatch):
    """The default answer's row is selected; File > Open of a service replaces the rows. The
    detail panel must describe the new recommendation, not ask the user to pick a row."""
    w = window
    assert w.detail.toPlainText().startswith("★ Recommended")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(SERVING_EXAMPLE), ""))
    w.open_action.trigger()
    settle(w)
    est = w.state.estimate
    assert est.scenario.workload.serving is not None
    assert w.state.selected == est.recommended.key
    text = w.detail.toPlainText()
    assert "Select a setup" not in text
    assert text.startswith("★ Recommended")
    assert est.recommended.gpu.name in text
    # The ranking marks the same row as selected.
    assert w.results.ranking.selected_key() == est.recommended.key


def test_a_laid_out_job_is_named_in_full_in_the_ranking(window, qtbot):
    """Choosing TP8 x PP4 with selective recompute by hand: the Setup column shows the whole
    layout name (it was cut to "64 × TP8 …" after the default scenario had sized the column)."""
    w = window
    page = w.workload_page
    w.page_tabs.setCurrentIndex(1)
    _select_preset(w, "llama-3.1-70b")
    w.page_tabs.setCurrentIndex(0)
    page.kind.setCurrentIndex(page.kind.findData("pretrain"))
    page.gpu.setCurrentIndex(page.gpu.findData("h100-sxm"))
    page.count.setCurrentIndex(page.count.findData(64))
    page.layout_box.setChecked(True)
    page.tp.enter("8")
    page.pp.enter("4")
    page.recompute.setCurrentIndex(page.recompute.findData("selective"))
    settle(w)
    view = w.results.table
    text = w.ranking_proxy.index(0, COL_SETUP).data()
    assert "TP8" in text and "PP4" in text and "selective" in text
    needed = view.fontMetrics().horizontalAdvance(text)
    assert view.columnWidth(COL_SETUP) >= needed
    assert w.statusBar().currentMessage().startswith("1 setup compared")


def test_chart_legends_stay_inside_the_chart_on_a_laptop_screen(window, qtbot):
    """At 1366 x 768 the VRAM chart's legend (eight entries, nine with the host-RAM bar of an
    offloaded optimizer) wraps onto more rows instead of running past the chart's right edge."""
    w = window
    w.resize(1366, 740)
    settle(w)
    qtbot.wait(50)
    chart = w.results.vram_chart
    w.results.chart_tabs.setCurrentIndex(0)

    def legend_fits() -> bool:
        legend = chart.legend
        right = legend.mapRectToScene(legend.boundingRect()).right()
        return right <= chart.plot.width() + 0.5

    qtbot.waitUntil(legend_fits, timeout=2000)
    # Offload the optimizer of a one-GPU full fine-tune: the legend gains the host-RAM entry.
    page = w.workload_page
    page.kind.setCurrentIndex(page.kind.findData("full_finetune"))
    page.gpu.setCurrentIndex(page.gpu.findData("rtx-4090"))
    page.count.setCurrentIndex(page.count.findData(1))
    page.layout_box.setChecked(True)
    page.offload_optimizer.setCurrentIndex(page.offload_optimizer.findData("cpu"))
    settle(w)
    labels = [label.text for _, label in chart.legend.items]
    assert any("Host RAM" in t for t in labels)
    qtbot.waitUntil(legend_fits, timeout=2000)


def test_a_laptop_user_picks_a_q4_k_m_gguf_type_and_a_mac(window, qtbot):
    """The Model page offers llama.cpp's quant types: picking Q4_K_M with the laptop & desktop GPUs
    runs the estimate on those weights, and a Mac answers with its RAM size."""
    w = window
    page, model = w.workload_page, w.model_page
    page.kind.setCurrentIndex(page.kind.findData("inference"))
    page.gpu.setCurrentIndex(page.gpu.findData("segment:local"))
    w.page_tabs.setCurrentIndex(1)
    model.weights.setCurrentIndex(model.weights.findData("q4_k_m"))
    assert model.weights.currentText().startswith("Q4_K_M")
    settle(w)
    est = w.state.estimate
    assert est.scenario.workload.weights == "q4_k_m"
    assert est.recommended is not None and est.recommended.gpu.segment == "local"
    w.page_tabs.setCurrentIndex(0)
    page.gpu.setCurrentIndex(page.gpu.findData("apple-m3-max"))
    settle(w)
    assert page.mac_memory.isVisible()
    assert w.state.estimate.scenario.workload.weights == "q4_k_m"
    assert "Apple M3 Max" in w.summary.text()


def test_opening_a_gguf_scenario_keeps_its_weights(window, tmp_path):
    """A scenario saved with Q4_K_M weights opens with Q4_K_M shown, and an edit on the Model page
    writes Q4_K_M back (not the first entry of the list)."""
    w = window
    path = tmp_path / "mac.json"
    path.write_text(
        '{"format": "gpuadvisor-scenario", "version": 1, "model": {"preset": "llama-3.1-8b"}, '
        '"workload": {"kind": "inference", "weights": "q4_k_m"}, '
        '"hardware": {"gpu": "apple-m3-max", "memory_gib": 64}}'
    )
    assert w.open_path(str(path))
    model = w.model_page
    assert model.weights.currentData() == "q4_k_m"
    w.page_tabs.setCurrentIndex(1)
    _select_preset(w, "qwen3-4b")
    settle(w)
    assert w.state.estimate.scenario.workload.weights == "q4_k_m"
    assert w.state.estimate.model.name.startswith("Qwen3 4B")


def test_the_selection_follows_the_answer_when_the_user_did_not_pick_another(window, qtbot):
    """Two RTX 3060 the user owns split a 16-bit model (tensor or pipeline); with Q4_K_M weights one
    card holds it and the answer changes. The detail panel and the chart follow it, as the ranking's
    star does."""
    w = window
    page, model = w.workload_page, w.model_page
    page.kind.setCurrentIndex(page.kind.findData("inference"))
    page.gpu.setCurrentIndex(page.gpu.findData("rtx-3060-12gb"))
    page.count.setCurrentIndex(page.count.findData(2))
    settle(w)
    first = w.state.estimate.recommended
    assert w.state.selected == first.key
    w.page_tabs.setCurrentIndex(1)
    model.weights.setCurrentIndex(model.weights.findData("q4_k_m"))
    settle(w)
    page.count.setCurrentIndex(page.count.findData(0))  # the GPUs of the machine: one card
    settle(w)
    now = w.state.estimate.recommended
    assert now.key != first.key  # the quantized model fits one card
    assert w.state.selected == now.key
    assert w.detail.toPlainText().startswith("★ Recommended")


def test_on_a_laptop_a_long_answer_keeps_its_end_and_the_warnings_are_counted(window, qtbot):
    """At 1280 x 800, Serving picked by hand gives an answer longer than the pane and warnings
    about old GPUs: the answer wraps whole (its latencies were cut off behind the warning line)
    and the first line counts the warnings; a wide window shows the first warning itself."""
    w = window
    w.resize(1280, 800)
    page = w.workload_page
    page.kind.setCurrentIndex(page.kind.findData("serving"))
    settle(w)
    qtbot.wait(50)
    est = w.state.estimate
    warnings = w.results.warnings(est)
    assert warnings
    shown = w.summary.text()
    assert "ITL" in shown and "meets first token" in shown
    assert f"⚠ {len(warnings)} warning" in shown and warnings[0] not in shown
    w.resize(3000, 900)
    qtbot.waitUntil(lambda: warnings[0].split(":")[0] in w.summary.text(), timeout=2000)


def test_in_a_small_window_the_page_fields_are_not_cut_off(window, qtbot):
    """1366 x 768 at 150% leaves a 911 x 512 window: each page keeps the width of its fields
    beside its scroll bar (the pages never scroll sideways, so anything wider is cut off)."""
    w = window
    w.resize(911, 512)
    page = w.workload_page
    page.kind.setCurrentIndex(page.kind.findData("serving"))  # the serving rows have long labels
    settle(w)
    for i in range(w.page_tabs.count()):
        w.page_tabs.setCurrentIndex(i)
        scroll = w.page_tabs.widget(i)
        qtbot.waitUntil(lambda s=scroll: s.viewport().width() >= s.widget().minimumSizeHint().width())
    # The chart's scene keeps to the view: the legend wraps and nothing runs past the right edge.
    w.results.chart_tabs.setCurrentIndex(0)
    chart = w.results.vram_chart
    qtbot.waitUntil(lambda: chart.plot.ci.geometry().width() <= chart.plot.width() + 0.5)
    legend = chart.legend
    assert legend.mapRectToScene(legend.boundingRect()).right() <= chart.plot.width() + 0.5
