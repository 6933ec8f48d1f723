"""The RTX 4090 journey driven as a user drives it: clicks on tabs and list items, typing in fields.

Qwen3 32B in Q4_K_M on the one RTX 4090 the user owns: the summary answers for that card (never
"8 x RTX 4090 (ddp)"), the ranking's first row is the card with the session's figures, and the
Weight types tab shows which weight type fits it. Then a number typed as people type it ("4k"), a
layer count, and a value out of range that is refused with the range, never cut.
"""

from __future__ import annotations

from gui_helpers import click, retype, settle
from PySide6.QtCore import QPoint, Qt

from gpuadvisor.core.formatting import fmt_gib, fmt_rate, fmt_seconds
from gpuadvisor.core.presentation.report import weights_cells
from gpuadvisor.gui.ranking.model import COL_COST, COL_GPU, COL_PICK, COL_RANGE, COL_TIME
from gpuadvisor.gui.results_view import COST_TAB, WEIGHTS_TAB


def _click_tab(qtbot, tabs, index: int) -> None:
    bar = tabs.tabBar()
    qtbot.mouseClick(bar, Qt.MouseButton.LeftButton, pos=bar.tabRect(index).center())
    assert tabs.currentIndex() == index


def _click_preset(qtbot, w, text: str, preset_id: str) -> None:
    """Type in the preset search and click the matching item of the list."""
    page = w.model_page
    retype(qtbot, page.search, text)
    lst = page.preset_list
    row = next(
        i
        for i in range(lst.count())
        if lst.item(i).data(Qt.ItemDataRole.UserRole) == preset_id and not lst.item(i).isHidden()
    )
    lst.scrollToItem(lst.item(row))
    rect = lst.visualItemRect(lst.item(row))
    qtbot.mouseClick(lst.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(rect.center()))
    assert lst.currentRow() == row


def _choose(combo, value) -> None:
    combo.setCurrentIndex(combo.findData(value))
    assert combo.currentData() == value


def test_the_rtx_4090_journey(window, qtbot):
    w = window
    w.resize(1366, 768)
    page = w.workload_page
    _click_tab(qtbot, w.page_tabs, 0)
    _choose(page.kind, "inference")
    _choose(page.gpu, "rtx-4090")
    _click_tab(qtbot, w.page_tabs, 1)
    _click_preset(qtbot, w, "qwen3 32b", "qwen3-32b")
    _choose(w.model_page.weights, "q4_k_m")
    settle(w)  # a person takes longer than the 40 ms debounce to reach the next page
    _click_tab(qtbot, w.page_tabs, 0)
    retype(qtbot, page.prompt, "4k")  # read as 4,000 tokens, never 4
    settle(w)

    est = w.state.estimate
    assert w.state.scenario.workload.prompt_tokens == 4000
    assert est.session and est.engine == "llama.cpp"
    lead = est.recommended
    s = est.session_of(lead)
    assert lead.gpu.id == "rtx-4090" and lead.gpu_count == 1 and s.gpu_layers == s.num_layers

    # The summary: the one card, its generation speed, the prompt's wait, the context, the memory left.
    summary = w.results.summary.text()
    assert "On 1 × NVIDIA GeForce RTX 4090: ~" in summary and "ddp" not in summary
    assert f"~{fmt_rate(s.tokens_per_s)} tokens/s" in summary
    assert f"a 4k-token prompt in {fmt_seconds(s.prompt_s)}" in summary
    assert f"up to {s.max_context_tokens:,} tokens of context" in summary
    assert f"{fmt_gib(s.memory_left_gib)} GiB of 24.0 GiB free" in summary

    # The ranking's first row: the card, starred, with the same tokens/s, prompt wait and layers.
    model = w.results.table.model()
    cell = lambda col: model.index(0, col).data()  # noqa: E731
    assert cell(COL_GPU) == "RTX 4090" and cell(COL_PICK) == "★"
    assert cell(COL_COST) == fmt_rate(s.tokens_per_s)
    assert cell(COL_RANGE) == fmt_seconds(s.prompt_s) and cell(COL_TIME) == "all"
    assert model.headerData(COL_COST, Qt.Orientation.Horizontal) == "Tokens/s"
    assert not w.results.chart_tabs.isTabVisible(COST_TAB)  # no job to time or price

    # The Weight types tab: which weight type fits the card, the chosen one bold.
    _click_tab(qtbot, w.results.chart_tabs, WEIGHTS_TAB)
    view = w.results.weights_view
    texts = view.row_texts()
    assert texts == [list(weights_cells(r)) for r in est.weights_table]
    by_type = {row[0]: row for row in texts}
    assert by_type["Q4_K_M"][2] == "yes" and by_type["Q4_K_M"][3] == "64/64"
    assert by_type["BF16"][2] == "no"
    current = next(r for r, row in enumerate(est.weights_table) if row.weights == "q4_k_m")
    assert view.table.item(current, 0).font().bold()

    # A layer count typed: the answer says how the model sits.
    _click_tab(qtbot, w.page_tabs, 0)
    retype(qtbot, page.gpu_layers, "40")
    settle(w)
    assert "fits with 40 of 64 layers on the GPU" in w.results.summary.text()
    retype(qtbot, page.gpu_layers, "")
    settle(w)

    # A value out of range is refused where it was typed, with the range; nothing is cut.
    retype(qtbot, page.prompt, "99999999999")
    settle(w)
    assert "must be between 1 and 100,000,000" in page.prompt.message.text()
    assert w.state.error.startswith("Prompt tokens")
    assert w.state.scenario.workload.prompt_tokens == 4000
    retype(qtbot, page.prompt, "8k")
    settle(w)
    assert not w.state.error and w.state.scenario.workload.prompt_tokens == 8000


def test_the_70b_journey_offers_layers_in_system_ram_and_says_the_ram_assumed(window, qtbot):
    w = window
    page = w.workload_page
    _choose(page.kind, "inference")
    _choose(page.gpu, "rtx-4090")
    _click_tab(qtbot, w.page_tabs, 1)
    _click_preset(qtbot, w, "llama 3.1 70b", "llama-3.1-70b")
    _choose(w.model_page.weights, "q4_k_m")
    settle(w)
    c = w.state.estimate.recommended
    assert c is not None and c.gpu_layers is not None
    summary = w.results.summary.text()
    assert f"fits with {c.gpu_layers} of 80 layers on the GPU" in summary
    assert "assumed for a desktop with 32 GB" in summary
    # Less system RAM than the layers need: said, not split anyway.
    _click_tab(qtbot, w.page_tabs, 0)
    retype(qtbot, page.system_ram, "8 GB")
    settle(w)
    assert w.state.scenario.hardware.host_memory_gib == 8
    assert w.results.summary.text().count("host memory") == 1
    assert w.state.estimate.recommended is None


def test_a_mac_has_no_layers_or_system_ram_to_set(window, qtbot):
    w = window
    page = w.workload_page
    _choose(page.kind, "inference")
    _choose(w.model_page.weights, "q4_k_m")
    _choose(page.gpu, "apple-m3-max")
    settle(w)
    assert page.local_box.isVisibleTo(w)
    assert not page.gpu_layers.isVisibleTo(w) and not page.system_ram.isVisibleTo(w)
    assert page.kv_type.isVisibleTo(w)
    _choose(page.kv_type, "q8_0")
    settle(w)
    assert w.state.scenario.workload.kv_cache_dtype == "q8_0"
    click(qtbot, page.flash)  # a quantized V cache needs flash attention: the core says so
    settle(w)


def test_a_pair_of_bridged_cards_is_ticked_on_the_gpus_box(window, qtbot):
    """Two A100 PCIe: the box offers the NVLink bridge such cards take; ticked, the scenario says so
    and the answer no longer warns that they talk over PCIe. Cards on an NVSwitch (SXM) have no
    such box, and one card needs none."""
    w = window
    page = w.workload_page
    _choose(page.kind, "inference")
    _choose(page.gpu, "a100-80gb-pcie")
    _choose(page.count, 2)
    settle(w)
    assert page.bridge.isVisibleTo(w) and not page.bridge.isChecked()
    assert w.state.scenario.hardware.nvlink_bridge is None
    notes = " ".join(" ".join(c.performance.notes) for c in w.state.estimate.candidates if c.performance)
    assert "hardware.nvlink_bridge: true" in notes
    click(qtbot, page.bridge)
    settle(w)
    assert w.state.scenario.hardware.nvlink_bridge is True
    notes = " ".join(" ".join(c.performance.notes) for c in w.state.estimate.candidates if c.performance)
    assert "hardware.nvlink_bridge: true" not in notes
    _choose(page.gpu, "a100-80gb")
    settle(w)
    assert not page.bridge.isVisibleTo(w) and w.state.scenario.hardware.nvlink_bridge is None
    _choose(page.gpu, "a100-80gb-pcie")
    _choose(page.count, 1)
    settle(w)
    assert not page.bridge.isVisibleTo(w)
