"""The catalog editor in one pass, driven with clicks and typing: adding a GPU lists every field it
lacks at once, in the user's words, with defaults where a datasheet allows; a bad price typed in a
cell is refused where it was typed and the GPU stays in the comparison; "$2.5" is a price; an
expected price above the high one is refused."""

from __future__ import annotations

import html

import pytest
from gui_helpers import click, close_window
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QDialogButtonBox, QLineEdit, QToolBar

from gpuadvisor.gui.app import build_window
from gpuadvisor.gui.catalog_editor import NumberEditor


@pytest.fixture
def window(qtbot):
    w = build_window(deferred_charts=False)
    w.show()
    qtbot.waitExposed(w)
    w.state.flush()
    yield w
    close_window(w)


@pytest.fixture
def editor(window, qtbot):
    ed = window.open_catalog_editor()
    qtbot.waitExposed(ed)
    return ed


def _type(qtbot, dialog, column: str, text: str) -> None:
    field = dialog.fields[column]
    assert isinstance(field, QLineEdit)
    click(qtbot, field)
    field.selectAll()
    qtbot.keyClicks(field, text)


def _choose(qtbot, dialog, column: str, value: str) -> None:
    box = dialog.fields[column]
    assert isinstance(box, QComboBox)
    box.setFocus()
    while box.currentData() != value:
        qtbot.keyClick(box, Qt.Key.Key_Down)


def _ok(qtbot, dialog) -> None:
    click(qtbot, dialog.buttons.button(QDialogButtonBox.StandardButton.Ok))


def _cell(editor, gpu_id: str, column: str):
    tab = editor.tabs_by_kind["gpus"]
    model = tab.model
    row = next(i for i, r in enumerate(model.rows) if r["id"] == gpu_id)
    index = tab.proxy.mapFromSource(model.index(row, model.columns.index(column)))
    tab.table.scrollTo(index)
    return tab.table, index


def _type_in_cell(qtbot, editor, gpu_id: str, column: str, text: str) -> None:
    """Double-click the cell, type over it and press Enter, as a user does."""
    table, index = _cell(editor, gpu_id, column)
    rect = table.visualRect(index)
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: bool(table.viewport().findChildren(NumberEditor)))
    line = table.viewport().findChildren(NumberEditor)[0].line
    line.selectAll()
    qtbot.keyClicks(line, text)
    qtbot.keyClick(line, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not table.viewport().findChildren(NumberEditor))


def test_adding_a_gpu_lists_every_missing_field_at_once_then_adds_it_in_one_pass(window, editor, qtbot):
    click(qtbot, editor.findChild(QToolBar).widgetForAction(editor.add_gpu_action))
    dialog = editor.add_gpu_dialog
    qtbot.waitExposed(dialog)
    _type(qtbot, dialog, "name", "Acme A1")
    _type(qtbot, dialog, "memory_bandwidth_gb_s", "abc")
    _ok(qtbot, dialog)
    # Still open, and every problem is named at once in the form's own words.
    assert dialog.isVisible() and dialog.problems.isVisible()
    text = dialog.problems.text()
    for said in (
        "Architecture: required",
        "Memory a program can use (GiB): required",
        "Memory bandwidth (GB/s): &#x27;abc&#x27; is not a number",
        "FP16 tensor TFLOPS (dense): required",
        "Where the figures come from: required",
    ):
        assert said in text, (said, text)
    assert "memory_gib_usable" not in text and "tdp_w" not in text  # no internal column names
    assert "Board power" not in text  # optional
    # Fill in what was missing, in one go; the BF16 rate, the board power and the price range are left
    # to their defaults, and "$2.5" is a price.
    _choose(qtbot, dialog, "architecture", "hopper")
    _type(qtbot, dialog, "memory_gib_usable", "80")
    _type(qtbot, dialog, "memory_bandwidth_gb_s", "3,350")
    _type(qtbot, dialog, "fp16_dense_tflops", "989")
    _type(qtbot, dialog, "cloud_usd_per_hour_expected", "$2.5")
    _type(qtbot, dialog, "source", "Acme A1 datasheet, rev. 2")
    _ok(qtbot, dialog)
    qtbot.waitUntil(lambda: not dialog.isVisible())
    model = editor.models["gpus"]
    row = model.rows[-1]
    assert row["id"] == "acme-a1" and row["bf16_dense_tflops"] == "989" and row["tdp_w"] == ""
    assert row["memory_bandwidth_gb_s"] == "3350"
    assert (
        row["cloud_usd_per_hour_low"],
        row["cloud_usd_per_hour_expected"],
        row["cloud_usd_per_hour_high"],
    ) == (
        "2.5",
        "2.5",
        "2.5",
    )
    assert row["price_as_of"] == editor.today.isoformat()
    assert len(model.rows) - 1 not in model.invalid_rows()
    editor.flush()
    window.state.flush()
    gpu = window.state.gpus.get("acme-a1")
    assert gpu.cloud_usd_per_hour.expected == 2.5 and gpu.tdp_w is None
    assert any(c.gpu.id == "acme-a1" for c in window.state.estimate.candidates)
    assert editor.undo.count() == 1  # one step to undo


def test_a_bad_price_typed_in_a_cell_is_refused_there_and_the_gpu_stays_compared(window, editor, qtbot):
    model = editor.models["gpus"]
    before = next(r for r in model.rows if r["id"] == "l40s")["cloud_usd_per_hour_expected"]
    for bad, reason in (("abc", "is not a number"), ("-3", "must be > 0")):
        _type_in_cell(qtbot, editor, "l40s", "cloud_usd_per_hour_expected", bad)
        assert next(r for r in model.rows if r["id"] == "l40s")["cloud_usd_per_hour_expected"] == before
        shown = editor.tabs_by_kind["gpus"].table.itemDelegate().last_refusal_shown
        assert shown.startswith("Cloud price expected (USD per GPU-hour)") and reason in shown
        assert html.escape(reason) in editor.info.text()
        editor.flush()
        window.state.flush()
        assert "l40s" in window.state.gpus.gpus  # never silently dropped
    # "$2.5" is a price.
    _type_in_cell(qtbot, editor, "l40s", "cloud_usd_per_hour_expected", "$0.95")
    assert next(r for r in model.rows if r["id"] == "l40s")["cloud_usd_per_hour_expected"] == "0.95"
    editor.flush()
    window.state.flush()
    assert window.state.gpus.get("l40s").cloud_usd_per_hour.expected == 0.95


def test_an_expected_price_above_the_high_one_is_refused(window, editor, qtbot):
    model = editor.models["gpus"]
    row = next(r for r in model.rows if r["id"] == "h100-sxm")
    high = float(row["cloud_usd_per_hour_high"])
    _type_in_cell(qtbot, editor, "h100-sxm", "cloud_usd_per_hour_expected", f"{high + 5:g}")
    assert row["cloud_usd_per_hour_high"] == f"{high:g}" or float(row["cloud_usd_per_hour_high"]) == high
    assert float(row["cloud_usd_per_hour_expected"]) < high
    shown = editor.tabs_by_kind["gpus"].table.itemDelegate().last_refusal_shown
    assert "is above the high price" in shown and "change the high price first" in shown
    # A quote below the low price is taken (a negotiated deal), widening the range.
    low = float(row["cloud_usd_per_hour_low"])
    _type_in_cell(qtbot, editor, "h100-sxm", "cloud_usd_per_hour_expected", f"{low / 2:.2f}")
    assert row["cloud_usd_per_hour_expected"] == f"{low / 2:.2f}"
