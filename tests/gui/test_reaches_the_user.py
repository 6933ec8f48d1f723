"""What reaches the user: each wrong answer a user could once get from the window, driven as a
user drives it (clicks and typing on the real widgets), with the right answer checked against
the core, the CLI's JSON and the PDF report."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys

from gui_helpers import click, retype, settle, type_over
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formatting import fmt_deadline
from gpuadvisor.core.presentation.report import build_report
from gpuadvisor.core.presentation.serialize import estimate_to_dict
from gpuadvisor.core.presentation.wording import summary_line
from gpuadvisor.gui.theme import DARK, colors, is_dark

TODAY = datetime.date(2026, 11, 30)


def _names_one_setup(w) -> str | None:
    """The summary, a fresh estimate's JSON and the report all name the same setup; returns it."""
    settle(w)
    est = w.state.estimate
    fresh = estimate(w.state.scenario, w.state.gpus, w.state.models)
    key = estimate_to_dict(fresh)["recommendation"]["recommended"]
    assert key == est.decision.recommended_key
    report = build_report(fresh, w.state.gpus.meta, TODAY)
    assert report.recommended_key == key
    shown = w.summary.text()
    if key is None:
        assert "Recommended" not in shown
        return None
    rec = fresh.candidate(key)
    assert rec.gpu.name in shown and "Recommended" in shown
    assert report.table_rows[0].key == key  # the PDF's recommended setup is a row of its table
    return key


def test_a_deadline_changes_the_recommendation_in_the_summary_and_the_report(window, qtbot):
    w = window
    before = _names_one_setup(w)
    # A deadline the recommended setup cannot surely meet: half the slow end of its job time.
    deadline = round(w.state.estimate.candidate(before).cost.job_hours.high / 2, 2)
    w.show_page(2)
    retype(qtbot, w.budget_page.deadline.edit, f"{deadline:g}")
    after = _names_one_setup(w)
    rec = w.state.estimate.candidate(after)
    assert after != before and rec.cost.job_hours.high <= deadline  # surely meets it, not only on average
    assert f"meets the {fmt_deadline(deadline)} deadline" in w.summary.text()


def test_a_budget_cap_below_the_cheapest_is_never_recommended(window, qtbot):
    w = window
    cheapest = w.state.estimate.recommended.cost.cost_usd.expected
    w.show_page(2)
    retype(qtbot, w.budget_page.max_total.edit, f"{cheapest * 0.97:.2f}")
    key = _names_one_setup(w)
    if key is not None:
        assert w.state.estimate.candidate(key).cost.cost_usd.expected <= cheapest * 0.97
    else:
        assert "No setup stays within" in w.summary.text()
        # The suggested changes speak of the limits, not of memory.
        assert w.state.estimate.ranking


def test_a_fixed_config_json_chosen_again_recomputes(window, qtbot, tmp_path):
    w = window
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"model_type": "llama", "hidden_size": 2048}))  # fields missing
    w.show_page(1)
    w.model_page.set_hf_path(str(config))  # what Choose file… does after the dialog
    settle(w)
    assert w.state.error and "Model" in w.state.error
    assert not w.results.table.isEnabled()  # stale results are greyed, not presented as an answer
    config.write_text(
        json.dumps(
            {
                "model_type": "llama",
                "architectures": ["LlamaForCausalLM"],
                "hidden_size": 2048,
                "intermediate_size": 8192,
                "num_attention_heads": 32,
                "num_key_value_heads": 8,
                "num_hidden_layers": 16,
                "vocab_size": 128256,
                "max_position_embeddings": 8192,
                "tie_word_embeddings": True,
            }
        )
    )
    w.model_page.set_hf_path(str(config))  # the same path, chosen again
    settle(w)
    assert w.state.error == "" and w.results.table.isEnabled()
    assert w.state.estimate.model.num_layers == 16  # the new model, not the previous one
    report = build_report(w.state.estimate, w.state.gpus.meta, TODAY)
    assert dict(report.scenario_lines)["Model"].startswith(w.state.estimate.model.name)


def test_an_added_gpu_appears_in_the_workload_pages_gpu_list(window):
    w = window
    editor = w.open_catalog_editor()
    tab = editor.tabs_by_kind["gpus"]
    gpus = editor.models["gpus"]
    tab.select_source_row(next(i for i, r in enumerate(gpus.rows) if r["id"] == "a100-80gb"))
    editor.duplicate_rows()
    editor.flush()
    settle(w)
    assert w.workload_page.gpu.findData("a100-80gb-copy") >= 0
    w.workload_page.gpu.setCurrentIndex(w.workload_page.gpu.findData("a100-80gb-copy"))
    settle(w)
    assert w.state.scenario.hardware.gpu == "a100-80gb-copy"
    assert {c.gpu.id for c in w.state.estimate.candidates} == {"a100-80gb-copy"}


def test_an_own_quote_below_the_low_price_keeps_the_gpu(window):
    w = window
    n = len(w.state.estimate.candidates)
    editor = w.open_catalog_editor()
    model = editor.models["gpus"]
    row = next(i for i, r in enumerate(model.rows) if r["id"] == "h100-sxm")
    low = float(model.rows[row]["cloud_usd_per_hour_low"])
    assert model.setData(
        model.index(row, model.columns.index("cloud_usd_per_hour_expected")), f"{low / 2:.2f}"
    )
    editor.flush()
    settle(w)
    assert len(w.state.estimate.candidates) == n  # no GPU silently vanished
    assert w.state.estimate.best_per_gpu()["h100-sxm"].gpu.cloud_usd_per_hour.expected == round(low / 2, 2)


def test_a_catalog_edit_that_would_invalidate_a_gpu_is_refused_and_an_incomplete_row_is_said(window):
    w = window
    editor = w.open_catalog_editor()
    model = editor.models["gpus"]
    row = next(i for i, r in enumerate(model.rows) if r["id"] == "l40s")
    assert not model.setData(model.index(row, model.columns.index("memory_bandwidth_gb_s")), "-5")
    editor.flush()
    settle(w)
    assert "l40s" in {c.gpu.id for c in w.state.estimate.candidates}  # refused: still compared
    editor.tabs.setCurrentWidget(editor.tabs_by_kind["gpus"])
    editor.add_row()  # an incomplete row is left out of the comparison, and the window says so
    new_id = model.rows[-1]["id"]
    editor.flush()
    settle(w)
    assert w.results.catalog_banner.isVisibleTo(w) and new_id in w.results.catalog_banner.text()


def test_an_out_of_range_number_is_named_by_its_label_and_never_shown_as_a_result(window, qtbot):
    w = window
    w.show_page(0)
    retype(qtbot, w.workload_page.train_tokens.edit, "1e30")
    settle(w)
    message = w.state.error
    assert message.startswith("Tokens to train") and "workload." not in message
    assert w.results.banner.isVisibleTo(w) and "Tokens to train" in w.results.banner.text()
    assert "Stale" in w.summary.text() and not w.results.table.isEnabled()
    # The estimate on display is the last valid one, not the half-typed "1e3".
    assert w.state.scenario.workload.train_tokens == 100e6
    retype(qtbot, w.workload_page.train_tokens.edit, "2e8")
    settle(w)
    assert w.state.error == "" and w.results.table.isEnabled()
    assert w.state.estimate.scenario.workload.train_tokens == 2e8


def test_switching_from_serving_to_training_resets_the_batch(window, qtbot):
    w = window
    w.show_page(0)
    kind = w.workload_page.kind
    kind.setCurrentIndex(kind.findData("inference"))
    settle(w)
    retype(qtbot, w.workload_page.batch, "256")
    settle(w)
    assert w.state.scenario.workload.batch_size == 256
    kind.setCurrentIndex(kind.findData("full_finetune"))
    settle(w)
    assert w.state.scenario.workload.kind == "full_finetune"
    assert w.state.scenario.workload.batch_size == 1  # a micro-batch of 256 was never asked for
    assert w.workload_page.batch.value() == 1
    assert w.state.scenario.workload.weights in ("bf16", "fp16", "fp32", "fp8")


def test_pages_by_keyboard_and_help_offline(window, qtbot):
    w = window
    qtbot.keyClick(w, Qt.Key.Key_3, Qt.KeyboardModifier.AltModifier)
    assert w.page_tabs.currentIndex() == 2
    qtbot.keyClick(w, Qt.Key.Key_2, Qt.KeyboardModifier.AltModifier)
    assert w.page_tabs.currentIndex() == 1
    qtbot.keyClick(w, Qt.Key.Key_F1)
    dialog = w.help_dialog
    assert dialog.isVisible()
    text = dialog.browser.toPlainText()
    assert "recommendation" in text and "Alt+1" in text


def test_panels_collapse_and_the_answer_stays(window):
    w = window
    w.panel_actions["charts"].trigger()
    assert not w.results.chart_tabs.isVisibleTo(w)
    w.panel_actions["pages"].trigger()
    assert not w.left_panel.isVisibleTo(w)
    assert w.summary.isVisibleTo(w) and w.results.table.isVisibleTo(w)
    w.show_page(0)
    assert w.left_panel.isVisibleTo(w)


def test_dark_appearance_recolours_the_window(window):
    w = window
    app = QApplication.instance()
    old_palette, old_style = app.palette(), app.style().name()
    try:
        w.set_appearance("dark")
        QApplication.processEvents()
        assert is_dark(app.palette()) and colors(w.results.palette()) is DARK
        w.state.set_error("Tokens to train (Workload page): must be at most 1e+18")
        assert DARK.banner_bg in w.results.banner.styleSheet()
        assert DARK.caution in w.results.summary_html(w.state.estimate) or not w.results.warnings(
            w.state.estimate
        )
    finally:
        w.state.set_error("")
        app.setPalette(old_palette)
        app.setStyle(old_style)


def test_every_line_of_the_summary_is_the_cores(window):
    w = window
    assert summary_line(w.state.estimate).split(":")[0] in w.summary.text()


def test_laptop_screens_show_the_answer_and_three_ranking_rows(tmp_path):
    """On a real X server (Xvfb) at laptop sizes and 150% scaling, maximized: the answer and at
    least three ranking rows are on screen without scrolling the window."""
    script = r"""
import json, os, sys
from PySide6.QtWidgets import QApplication
from gpuadvisor.gui.app import build_window
app = QApplication(sys.argv[:1])
w = build_window(deferred_charts=False)
w.showMaximized()
for _ in range(40):
    app.processEvents()
w.state.flush(); app.processEvents()
screen = app.primaryScreen().availableGeometry()
table = w.results.table
def on_screen(widget):
    r = widget.rect(); tl = widget.mapToGlobal(r.topLeft()); br = widget.mapToGlobal(r.bottomRight())
    return widget.isVisible() and screen.contains(tl) and screen.contains(br)
rows = sum(1 for i in range(table.model().rowCount())
           if 0 <= table.rowViewportPosition(i) and table.rowViewportPosition(i) + table.rowHeight(i)
           <= table.viewport().height())
print(json.dumps({"rows": rows, "summary": on_screen(w.summary), "table": on_screen(table),
                  "window": [w.width(), w.height()], "screen": [screen.width(), screen.height()]}))
"""
    (tmp_path / "probe.py").write_text(script)
    import shutil

    import pytest

    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run is not installed (scripts/install-system-deps.sh installs it)")
    for size, scale in (
        ("1366x768", "1"),
        ("1280x800", "1"),
        ("1280x720", "1"),
        ("1366x768", "1.25"),
        ("1600x1000", "1.5"),
    ):
        env = {k: v for k, v in __import__("os").environ.items() if k != "QT_QPA_PLATFORM"}
        env.update(QT_QPA_PLATFORM="xcb", QT_SCALE_FACTOR=scale, GPUADVISOR_HOME=str(tmp_path / "home"))
        out = subprocess.run(
            ["xvfb-run", "-a", "-s", f"-screen 0 {size}x24", sys.executable, str(tmp_path / "probe.py")],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        line = [x for x in out.stdout.splitlines() if x.startswith("{")]
        assert line, (size, scale, out.stdout[-500:], out.stderr[-2000:])
        got = json.loads(line[-1])
        assert got["summary"] and got["table"], (size, scale, got)
        assert got["rows"] >= 3, (size, scale, got)
        assert got["window"][1] <= got["screen"][1], (size, scale, got)


def test_a_mac_is_compared_with_the_memory_it_has(window, qtbot):
    """Laptops & desktops: choosing Apple M3 Max offers its RAM sizes; 64 GB gives the GPU less than 64 GiB."""
    w = window
    w.show_page(0)
    gpu = w.workload_page.gpu
    gpu.setCurrentIndex(gpu.findData("apple-m3-max"))
    settle(w)
    memory = w.workload_page.mac_memory
    assert memory.isVisibleTo(w) and memory.count() >= 2
    memory.setCurrentIndex(memory.findData(64.0))
    settle(w)
    assert w.state.scenario.hardware.memory_gib == 64.0
    c = w.state.estimate.candidates[0]
    assert c.gpu.id == "apple-m3-max" and 40 < c.capacity_gib < 64
    assert {x.gpu_count for x in w.state.estimate.candidates} == {1}  # one chip, never combined
    gpu.setCurrentIndex(gpu.findData("segment:local"))
    settle(w)
    assert not memory.isVisibleTo(w) and w.state.scenario.hardware.segment == "local"
    assert w.state.scenario.hardware.memory_gib is None
    assert {c.gpu.segment for c in w.state.estimate.candidates} == {"local"}


def test_a_model_already_on_disk_is_picked_from_the_list(window, qtbot, tmp_path, monkeypatch):
    """Model page > Models on this machine: the Hugging Face cache is read offline and a pick
    becomes the scenario's model."""
    import shutil
    from pathlib import Path

    from PySide6.QtWidgets import QDialog

    from gpuadvisor.gui import local_models_dialog

    cache = tmp_path / "hub"
    snapshot = cache / "models--meta-llama--Llama-2-7b-hf" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (cache / "models--meta-llama--Llama-2-7b-hf" / "blobs").mkdir()
    shutil.copy(Path(__file__).parents[1] / "data" / "hf" / "Llama-2-7b-hf" / "config.json", snapshot)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    seen = []

    def accept(dialog):
        seen.append([m.name for m in dialog.models])
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(local_models_dialog.LocalModelsDialog, "exec", accept)
    w = window
    w.show_page(1)
    click(qtbot, w.model_page.local_models_button)
    settle(w)
    assert "meta-llama/Llama-2-7b-hf" in seen[0]
    assert w.state.scenario.model.hf_config == str(snapshot)
    assert w.state.estimate.model.num_layers == 32 and w.state.error == ""


def test_a_half_typed_value_on_one_page_never_drops_another_pages_edit(window, qtbot):
    """A valid edit on the budget page, then (before it is computed) a value typed on the
    workload page on its way to an invalid one: the budget edit stays, shown and computed; only
    the workload's half-typed value is dropped."""
    w = window
    settle(w)
    w.show_page(2)
    type_over(qtbot, w.budget_page.deadline, "48")
    assert w.state.scenario.budget.deadline_hours == 48  # applied, not yet computed
    w.show_page(0)
    retype(qtbot, w.workload_page.train_tokens.edit, "1e30")  # "1", "1e", "1e3", ... "1e30"
    settle(w)
    assert w.state.error.startswith("Tokens to train")
    assert w.state.scenario.budget.deadline_hours == 48
    assert w.state.estimate.scenario.budget.deadline_hours == 48  # computed with the budget edit
    assert w.state.estimate.scenario.workload.train_tokens == 100e6  # never the half-typed "1e3"
    assert w.budget_page.deadline.edit.text() == "48"
    retype(qtbot, w.workload_page.train_tokens.edit, "2e8")
    settle(w)
    assert w.state.error == ""
    assert w.state.estimate.scenario.budget.deadline_hours == 48
    assert w.state.estimate.scenario.workload.train_tokens == 2e8
    assert w.budget_page.deadline.edit.text() == "48"
