"""The main window driven as a user would, offscreen: pages, live results, files, closing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gui_helpers import choose, click, click_item, enter, settle, show_tab, tick, type_over
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.scenario import load_scenario
from gpuadvisor.gui.ranking import ROLE_KEY
from gpuadvisor.gui.ranking.model import COL_SETUP

ROOT = Path(__file__).resolve().parents[2]


def test_window_shows_the_default_estimate(window):
    est = window.state.estimate
    assert est is not None and est.model.name == "Llama 3.1 8B"
    assert window.charts_ready
    # One row per GPU type that fits, in the decision's order: the recommendation first.
    assert window.ranking_proxy.rowCount() == sum(1 for c in est.best_per_gpu().values() if c.fits)
    assert window.results.key_of_row(0) == est.decision.recommended_key
    assert "Recommended:" in window.summary.text()
    assert est.recommended.gpu.name in window.summary.text()


def _select_preset(w, qtbot, preset_id):
    """Click the preset in the Model page's list (the Model tab must be showing)."""
    lst = w.model_page.preset_list
    for i in range(lst.count()):
        if lst.item(i).data(Qt.ItemDataRole.UserRole) == preset_id:
            click_item(qtbot, lst, lst.indexFromItem(lst.item(i)))
            assert lst.currentRow() == i
            return
    raise AssertionError(preset_id)


def test_pick_preset_switch_to_qlora_change_batch(window, qtbot):
    w = window
    show_tab(qtbot, w.page_tabs, 1)
    qtbot.keyClicks(w.model_page.search, "13b")
    assert not w.model_page.preset_list.findItems("Llama 2 13B", Qt.MatchFlag.MatchContains)[0].isHidden()
    _select_preset(w, qtbot, "llama-2-13b")
    settle(w)
    assert w.state.scenario.model.preset == "llama-2-13b"
    assert w.state.estimate.model.name == "Llama 2 13B"

    show_tab(qtbot, w.page_tabs, 0)
    choose(qtbot, w.workload_page.kind, "qlora")
    settle(w)
    assert w.state.scenario.workload.kind == "qlora"
    assert w.state.scenario.workload.weights == "nf4"  # QLoRA needs a 4-bit base: set for the user
    type_over(qtbot, w.workload_page.batch, "8")
    settle(w)
    est = w.state.estimate
    assert est.scenario.workload.batch_size == 8

    # The views hold the core's numbers for this scenario.
    expected = estimate(w.state.scenario, w.state.gpus, w.state.models)
    rows = [c.key for c in expected.best_per_gpu().values() if c.fits]
    table = [w.ranking_proxy.index(r, 0).data(ROLE_KEY) for r in range(w.ranking_proxy.rowCount())]
    assert table == rows
    best = expected.best_per_gpu()
    h100 = best["h100-sxm"].memory.gib()
    chart = w.results.vram_chart
    row = next(i for i in range(chart.row_count()) if chart.candidate_at(i).gpu.id == "h100-sxm")
    for name in ("weights", "activations", "adapters"):
        assert float(chart.segments[name].opts["width"][row]) == pytest.approx(h100[name], rel=1e-6)


def test_bad_parameter_count_shows_a_message_next_to_the_field(window, qtbot):
    w = window
    page = w.model_page
    show_tab(qtbot, w.page_tabs, 1)
    click(qtbot, page.source_params)
    type_over(qtbot, page.params.edit, "seven billion")
    assert page.params.message.isVisible() or not page.params.message.isHidden()
    assert "not a number" in page.params.message.text()
    type_over(qtbot, page.params.edit, "7B")
    settle(w)
    assert page.params.message.text() == ""
    assert w.state.scenario.model.parameters == pytest.approx(7e9)
    assert w.state.estimate.model.architecture_assumed


def test_invalid_budget_is_reported_and_keeps_the_last_estimate(window, qtbot):
    w = window
    before = w.state.estimate
    page = w.budget_page
    show_tab(qtbot, w.page_tabs, w.pages.index(page))
    type_over(qtbot, page.utilization.edit, "150")
    assert "at most 100" in page.utilization.message.text()
    assert w.state.estimate is before


def test_open_and_save_a_scenario(window, tmp_path, monkeypatch):
    w = window
    data = {
        "format": "gpuadvisor-scenario",
        "version": 1,
        "name": "serve 70B",
        "model": {"preset": "llama-3.1-70b"},
        "workload": {"kind": "inference", "batch_size": 8, "prompt_tokens": 1000, "output_tokens": 200},
        "budget": {"deadline_hours": 12},
    }
    path = tmp_path / "serve.json"
    path.write_text(json.dumps(data))
    assert w.open_path(str(path))
    assert w.state.estimate.model.name == "Llama 3.1 70B"
    assert w.workload_page.kind.currentData() == "inference"
    assert w.workload_page.prompt.value() == 1000
    assert w.budget_page.deadline.value() == 12
    assert "serve.json" in w.windowTitle()

    w.workload_page.batch.enter("4")
    assert w.state.dirty and "*" in w.windowTitle()
    out = tmp_path / "saved.json"
    assert w._save_to(out)
    assert not w.state.dirty
    again = load_scenario(out)
    assert again.workload.batch_size == 4 and again.model.preset == "llama-3.1-70b"
    assert str(out.resolve()) in w.settings.recent_files


def test_open_a_corrupt_file_shows_a_message(window, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: seen.append(a[2]))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert not window.open_path(str(bad))
    assert seen and "not valid JSON" in seen[0]


def test_unsaved_changes_prompt_on_close(window, monkeypatch, qtbot):
    w = window
    w.workload_page.batch.enter("3")
    assert w.state.dirty
    asked = []
    monkeypatch.setattr(
        QMessageBox, "question", lambda *a, **k: (asked.append(1), QMessageBox.StandardButton.Cancel)[1]
    )
    assert not w.close()
    assert asked and w.isVisible()
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Discard)
    assert w.close()


def test_close_persists_layout_and_recent_files(window, tmp_path):
    from gpuadvisor.storage.paths import user_paths
    from gpuadvisor.storage.settings import load_settings

    w = window
    path = tmp_path / "a.json"
    w._save_to(path)
    assert w.close()
    settings, warnings = load_settings()
    assert not warnings
    assert settings.window_geometry
    assert set(settings.splitter_sizes) == {"main", "right", "bottom"}
    assert settings.recent_files[0] == str(path.resolve())
    assert (user_paths().config_dir / "settings.json").exists()


def test_selecting_a_row_updates_the_detail_panel(window, qtbot):
    w = window
    index = w.ranking_proxy.index(2, 0)
    click_item(qtbot, w.table, index)
    key = index.data(ROLE_KEY)
    assert w.state.selected == key
    assert "tokens/s" in w.detail.toPlainText()


def test_nothing_fits_lists_changes(window, qtbot):
    w = window
    choose(qtbot, w.workload_page.gpu, "rtx-4090")
    choose(qtbot, w.workload_page.count, 1)
    choose(qtbot, w.workload_page.kind, "full_finetune")
    settle(w)
    assert not w.state.estimate.ranking
    assert "Nothing fits" in w.summary.text()
    assert "Cheapest changes" in w.detail.toHtml()


def test_unexpected_errors_reach_a_dialog_and_the_log(qtbot, monkeypatch):
    import sys

    from gpuadvisor.gui.app import install_excepthook
    from gpuadvisor.storage.logs import configure_logging, shutdown_logging

    log_file = configure_logging()
    shown = []
    monkeypatch.setattr(QMessageBox, "critical", lambda parent, title, text: shown.append(text))
    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    install_excepthook(lambda: None)
    try:
        raise RuntimeError("chart exploded")
    except RuntimeError:
        sys.excepthook(*sys.exc_info())
    assert shown and "chart exploded" in shown[0] and "Traceback" not in shown[0]
    assert log_file is not None and "chart exploded" in log_file.read_text(encoding="utf-8")
    shutdown_logging()


def test_about_box_names_version_catalogs_license_and_notices(window, qtbot):
    from gpuadvisor import __version__
    from gpuadvisor.gui.about_dialog import AboutDialog

    window.on_about()
    dialog = window.findChild(AboutDialog)
    assert dialog is not None and dialog.isVisible()
    about = dialog.tabs.widget(0).text()
    assert __version__ in about and "GPU catalog" in about and "MIT License" in about
    assert [dialog.tabs.tabText(i) for i in range(dialog.tabs.count())] == [
        "About",
        "License",
        "Third-party notices",
    ]
    assert dialog.license_view.toPlainText().startswith("MIT License")
    notices = dialog.notices_view.toPlainText()
    assert "PySide6" in notices and "Lesser General Public License" in notices
    dialog.reject()


def test_dataset_tokens_and_epochs_set_the_job_size(window, qtbot):
    w = window
    page = w.workload_page
    type_over(qtbot, page.train_tokens.edit, "")
    type_over(qtbot, page.dataset_tokens.edit, "200M")
    type_over(qtbot, page.epochs.edit, "3")
    settle(w)
    wl = w.state.scenario.workload
    assert wl.train_tokens is None and wl.dataset_tokens == 200e6 and wl.epochs == 3
    best = w.state.estimate.ranking[0]
    assert best.cost.job_tokens == pytest.approx(600e6)


def test_what_if_axis_switch_redraws_with_batch_on_x(window, qtbot):
    w = window
    show_tab(qtbot, w.results.chart_tabs, 2)
    choose(qtbot, w.results.whatif_axis_box, "batch")
    assert w.results.chart_tabs.currentIndex() == 2
    curves = w.results.whatif_chart.shown_curves()
    assert curves and all(c.xs[0] == 1 for c in curves)
    for c in curves:
        assert list(c.ys_gib) == sorted(c.ys_gib)


def test_export_report_from_the_window(window, qtbot, tmp_path):
    import shutil
    import subprocess

    w = window
    w.page_size_actions["Letter"].trigger()
    out = tmp_path / "report.pdf"
    job = w.export_report_to(str(out))
    assert job is not None
    with qtbot.waitSignal(job.succeeded, timeout=30000):
        pass
    job.wait(5000)
    assert out.read_bytes().startswith(b"%PDF-")
    assert "Report written" in w.statusBar().currentMessage()
    assert not list(tmp_path.glob(".*.tmp"))
    if shutil.which("pdfinfo"):
        info = subprocess.run(["pdfinfo", str(out)], capture_output=True, text=True).stdout
        assert "612 x 792" in info  # Letter, as chosen in the menu
    assert w.settings.page_size == "Letter"


def test_export_report_to_a_folder_is_refused(window, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(QMessageBox, "warning", lambda *a, **k: seen.append(a[2]))
    assert window.export_report_to(str(tmp_path)) is None
    assert seen and "folder" in seen[0]


def test_quantized_weights_for_lora_follow_the_core_not_a_page_rule(window, qtbot):
    """LoRA on an int8 base is a valid scenario: changing only the batch keeps the weights."""
    w = window
    assert w.state.scenario.workload.kind == "lora"
    show_tab(qtbot, w.page_tabs, 1)
    choose(qtbot, w.model_page.weights, "int8")
    settle(w)
    assert w.state.scenario.workload.weights == "int8"
    show_tab(qtbot, w.page_tabs, 0)
    type_over(qtbot, w.workload_page.batch, "8")
    settle(w)
    assert w.state.scenario.workload.batch_size == 8
    assert w.state.scenario.workload.weights == "int8"
    assert w.model_page.weights.currentData() == "int8"


def _pretrain_70b_on_h100(w, qtbot) -> None:
    """Pick Llama 3.1 70B on the Model page, then pre-training on H100 SXM on the Workload page."""
    page = w.workload_page
    show_tab(qtbot, w.page_tabs, 1)
    _select_preset(w, qtbot, "llama-3.1-70b")
    show_tab(qtbot, w.page_tabs, 0)
    choose(qtbot, page.kind, "pretrain")
    choose(qtbot, page.gpu, "h100-sxm")


def test_advanced_layout_writes_the_layout_and_the_ranking_names_it(window, qtbot):
    w = window
    page = w.workload_page
    _pretrain_70b_on_h100(w, qtbot)
    choose(qtbot, page.count, 64)
    settle(w)
    assert not page.layout_body.isVisible()  # out of the way until asked for
    tick(qtbot, page.layout_box, True)
    type_over(qtbot, page.tp, "8")
    type_over(qtbot, page.pp, "4")
    choose(qtbot, page.recompute, "selective")
    settle(w)
    hw, wl = w.state.scenario.hardware, w.state.scenario.workload
    assert (hw.tensor_parallel, hw.pipeline_parallel, wl.activation_recompute) == (8, 4, "selective")
    est = w.state.estimate
    c = est.candidates[0]
    assert c.layout.tp == 8 and c.layout.pp == 4 and c.layout.dp == 2
    setups = [w.ranking_proxy.index(r, COL_SETUP).data() for r in range(w.ranking_proxy.rowCount())]
    assert any("TP8" in (s or "") and "PP4" in (s or "") for s in setups)
    # Unticking hands the layout back to the advisor.
    tick(qtbot, page.layout_box, False)
    settle(w)
    assert w.state.scenario.hardware.tensor_parallel is None
    assert w.state.scenario.workload.activation_recompute is None


def test_a_shard_group_lays_fsdp_out_as_hybrid_sharding(window, qtbot):
    """The "Shard group" field (shown for ZeRO and FSDP only) writes hardware.data_parallel_shard,
    and the ranking names the hybrid layout; with DDP the row is hidden and the key dropped."""
    w = window
    page = w.workload_page
    _pretrain_70b_on_h100(w, qtbot)
    choose(qtbot, page.count, 64)
    choose(qtbot, page.parallelism, "fsdp")
    tick(qtbot, page.layout_box, True)
    assert page.form_layout.isRowVisible(page.shard)
    type_over(qtbot, page.shard, "32")
    settle(w)
    assert w.state.scenario.hardware.data_parallel_shard == 32
    c = w.state.estimate.candidates[0]
    assert c.layout.shard == 32 and "HSDP in groups of 32" in c.layout.name
    setups = [w.ranking_proxy.index(r, COL_SETUP).data() or "" for r in range(w.ranking_proxy.rowCount())]
    assert any("HSDP" in s for s in setups)
    choose(qtbot, page.parallelism, "ddp")
    settle(w)
    assert not page.form_layout.isRowVisible(page.shard)
    assert w.state.scenario.hardware.data_parallel_shard is None


def test_offloading_the_optimizer_needs_host_memory(window, qtbot):
    w = window
    page = w.workload_page
    choose(qtbot, page.kind, "full_finetune")
    choose(qtbot, page.gpu, "a100-80gb")
    choose(qtbot, page.count, 1)
    settle(w)
    tick(qtbot, page.layout_box, True)
    assert not page.form_layout.isRowVisible(page.tp)  # one GPU: no tensor/pipeline rows
    choose(qtbot, page.offload_optimizer, "cpu")
    enter(qtbot, page.host_memory, "16")
    settle(w)
    c = w.state.estimate.candidates[0]
    assert w.state.scenario.workload.offload.optimizer == "cpu"
    assert not c.fits and "host memory" in c.misfit


def test_a_long_answer_wraps_and_its_whole_line_is_in_the_tooltip(qtbot, tmp_path):
    """A service's answer is longer than a laptop's results pane: without a warning it wraps onto
    the third line, and the summary's tooltip always holds the whole answer."""
    import html
    from pathlib import Path

    from gpuadvisor.core.presentation.wording import summary_line
    from gpuadvisor.gui.app import build_window

    window = build_window(deferred_charts=False)
    qtbot.addWidget(window)
    window.resize(1280, 800)
    window.show()
    assert window.open_path(
        str(Path(__file__).resolve().parents[2] / "docs/examples/serving-20-replicas.json")
    )
    window.state.flush()
    est = window.state.estimate
    summary = window.results.summary
    assert summary.wordWrap()
    answer = summary_line(est)
    assert "requests in flight per replica" in answer
    assert html.escape(answer) in summary.toolTip()
    # Narrower (a laptop at 150%): the answer needs more lines and the summary grows to show it
    # whole instead of clipping its end.
    three = summary.height()
    window.resize(900, 700)
    window.state.flush()
    qtbot.waitUntil(lambda: summary.height() > three, timeout=2000)
    lines = summary.height() / summary.fontMetrics().lineSpacing()
    assert 3.5 < lines < 6
    window.resize(1280, 800)
    qtbot.waitUntil(lambda: summary.height() == three, timeout=2000)
    window.state.dirty = False


def test_a_layout_search_runs_in_the_background_and_the_window_stays_usable(window, qtbot):
    """Pre-training on 64 GPUs with the layout left open searches TP x PP x CP x ZeRO layouts over
    many nodes: the update runs off the GUI thread, the results are greyed and say so meanwhile,
    an edit made during the search replaces it, and the answer for the last input arrives."""
    w = window
    page = w.workload_page
    _pretrain_70b_on_h100(w, qtbot)
    settle(w)
    choose(qtbot, page.count, 64)  # no flush: the debounce timer runs it
    qtbot.waitUntil(lambda: bool(w.state.computing), timeout=5000)
    assert "searching pretrain layouts on up to 64 GPUs" in w.state.computing
    assert w.results.banner.isVisible() and "Updating" in w.results.banner.text()
    assert not w.results.table.isEnabled()  # the previous input's results, greyed
    # The GUI thread still answers while the search runs: another edit goes through at once.
    choose(qtbot, page.count, 32)
    assert w.state.scenario.hardware.gpu_count == 32
    qtbot.waitUntil(
        lambda: not w.state.computing and w.state.estimate.scenario == w.state.scenario, timeout=60000
    )
    counts = {c.gpu_count for c in w.state.estimate.candidates}
    assert counts == {32}  # the 64-GPU search was dropped for the newer input
    assert not w.results.banner.isVisible() and w.results.table.isEnabled()
    assert "Updating" not in w.results.summary.text() and "Updating" not in w.statusBar().currentMessage()


def test_the_window_opens_on_the_recommended_setup_not_the_cheapest(window, tmp_path, qtbot):
    """With a deadline only pricier setups meet, the cheapest fitting setup misses it: the window's
    selection, detail panel and highlighted bar are the recommended setup the summary names."""
    w = window
    data = json.loads((ROOT / "docs" / "examples" / "lora-llama-3.1-8b.json").read_text())
    data["workload"]["train_tokens"] = 1e8
    data["budget"] = {"deadline_hours": 0.5}
    path = tmp_path / "deadline.json"
    path.write_text(json.dumps(data))
    assert w.open_path(str(path))
    w.state.flush()
    est = w.state.estimate
    rec = est.recommended
    assert rec is not None and est.ranking[0].key != rec.key  # the cheapest misses the deadline
    assert w.state.selected == rec.key == est.lead.key
    assert rec.gpu.name in w.summary.text() and rec.gpu.name in w.detail.toPlainText()


def test_qlora_k_bit_preparation_is_chosen_on_the_workload_page_and_moves_the_memory(window, qtbot, tmp_path):
    """QLoRA shows its k-bit preparation row (only QLoRA does); the engine's habit by default, and
    "No" writes ``workload.kbit_preparation: false``: a one-GPU setup then needs less memory (16-bit
    hidden states and embeddings), the choice survives a save, and a file that states it opens
    with it chosen."""
    w = window
    page = w.workload_page
    show_tab(qtbot, w.page_tabs, 0)
    assert not page.form_train.isRowVisible(page.kbit_preparation)
    choose(qtbot, page.kind, "qlora")
    settle(w)
    assert page.form_train.isRowVisible(page.kbit_preparation)
    assert w.state.scenario.workload.kbit_preparation is None

    def need(gpu_id):
        return w.state.estimate.best_per_gpu()[gpu_id].memory.device_total

    prepared = need("h100-sxm")
    choose(qtbot, page.kbit_preparation, False)
    settle(w)
    assert w.state.scenario.workload.kbit_preparation is False
    assert need("h100-sxm") < prepared
    out = tmp_path / "qlora.json"
    assert w._save_to(out)
    assert load_scenario(out).workload.kbit_preparation is False

    choose(qtbot, page.kind, "lora")
    settle(w)
    assert not page.form_train.isRowVisible(page.kbit_preparation)
    assert w.open_path(str(out))
    assert page.kbit_preparation.currentData() is False


def test_a_files_prompt_logits_survive_edits_and_leave_with_the_engine(window, qtbot, tmp_path):
    """``workload.prompt_logits`` has no field on the Workload page: a file that states it (a run of
    Transformers before v4.45) keeps it through the user's edits, and choosing another engine drops
    it, since where an engine release computed logits says nothing about the next engine."""
    w = window
    page = w.workload_page
    path = tmp_path / "older-transformers.json"
    path.write_text(
        json.dumps(
            {
                "model": {"preset": "llama-3.1-8b"},
                "workload": {
                    "kind": "inference",
                    "engine": "transformers",
                    "prompt_tokens": 6144,
                    "output_tokens": 256,
                    "prompt_logits": "all",
                },
                "hardware": {"gpu": "a100-80gb", "gpu_count": 1},
            }
        ),
        encoding="utf-8",
    )
    assert w.open_path(str(path))
    settle(w)
    assert w.state.scenario.workload.prompt_logits == "all"
    held = w.state.estimate.best_per_gpu()["a100-80gb"].memory.logits
    choose(qtbot, page.count, 2)
    settle(w)
    assert w.state.scenario.workload.prompt_logits == "all"
    choose(qtbot, page.engine, "vllm")
    settle(w)
    assert w.state.scenario.workload.prompt_logits is None
    assert w.state.estimate.best_per_gpu()["a100-80gb"].memory.logits < held / 1000
