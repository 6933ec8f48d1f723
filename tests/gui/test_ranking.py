"""The ranking widget driven as a user drives it: clicks, keys and the context menu, on real estimates.

Scenarios come from the core's ``estimate`` on the bundled catalogs: the app's default (LoRA on
Llama 3.1 8B), the same with a 2 h deadline (the recommendation becomes a multi-GPU setup, not a single
GPU), a $1 budget (nothing stays within it) and a full fine-tune of Llama 3.1 405B (nothing fits
on any GPU).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAction, QColor, QContextMenuEvent, QKeySequence, QPalette
from PySide6.QtWidgets import QApplication, QLineEdit, QVBoxLayout, QWidget

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.estimation.recommendation import ordered
from gpuadvisor.core.formats.scenario import Budget, ModelSource, default_scenario
from gpuadvisor.core.formatting import fmt_usd
from gpuadvisor.core.presentation.wording import change_lines, summary_line
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.gui.ranking import (
    COL_BUDGET,
    COL_COST,
    COL_DEADLINE,
    COL_GPU,
    COL_PICK,
    COL_PRICE_DATE,
    COL_SETUP,
    COL_VERDICT,
    HEADERS,
    RECOMMENDED_MARK,
    ROLE_KEY,
    ROLE_SORT,
    RUNNER_UP_MARK,
    RankingTable,
    contrast_ratio,
    readable,
    table_colors,
)
from gpuadvisor.storage.errors import StorageError


# -- scenarios ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cats():
    return load_gpu_catalog(), load_model_catalog()


@pytest.fixture(scope="module")
def plain(cats):
    return estimate(default_scenario(), *cats)


@pytest.fixture(scope="module")
def deadline(cats):
    return estimate(replace(default_scenario(), budget=Budget(deadline_hours=2)), *cats)


@pytest.fixture(scope="module")
def broke(cats):
    return estimate(replace(default_scenario(), budget=Budget(max_total_usd=1)), *cats)


@pytest.fixture(scope="module")
def nothing_fits(cats):
    s = default_scenario()
    s = replace(
        s, model=ModelSource(preset="llama-3.1-405b"), workload=replace(s.workload, kind="full_finetune")
    )
    return estimate(s, *cats)


@pytest.fixture
def table(qtbot):
    t = RankingTable()
    qtbot.addWidget(t)
    t.resize(900, 300)
    t.show()
    qtbot.waitExposed(t)
    return t


# -- driving the widget ----------------------------------------------------------------------
def keys(t: RankingTable) -> list[str]:
    return [t.proxy.index(r, 0).data(ROLE_KEY) for r in range(t.proxy.rowCount())]


def cell(t: RankingTable, row: int, col: int) -> str:
    return t.proxy.index(row, col).data()


def row_point(t: RankingTable, row: int, col: int = COL_GPU) -> QPoint:
    return t.view.visualRect(t.proxy.index(row, col)).center()


def click_row(qtbot, t: RankingTable, row: int, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    qtbot.mouseClick(t.view.viewport(), Qt.MouseButton.LeftButton, modifier, row_point(t, row))


def click_header(qtbot, t: RankingTable, col: int) -> None:
    header = t.view.horizontalHeader()
    x = header.sectionViewportPosition(col) + header.sectionSize(col) // 2
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(x, header.height() // 2))


def click_box(qtbot, box) -> None:
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))


def menu_click(qtbot, t: RankingTable, row: int, action) -> None:
    """Right-click a row, then click an entry of the context menu that opened."""
    viewport = t.view.viewport()
    point = row_point(t, row)
    qtbot.mouseClick(viewport, Qt.MouseButton.RightButton, pos=point)
    # The window system follows a right-click with a context-menu event; QTest's click does not.
    QApplication.sendEvent(
        viewport, QContextMenuEvent(QContextMenuEvent.Reason.Mouse, point, viewport.mapToGlobal(point))
    )
    qtbot.waitUntil(t.menu.isVisible)
    assert action in t.menu.actions() and action.isEnabled()
    qtbot.mouseClick(t.menu, Qt.MouseButton.LeftButton, pos=t.menu.actionGeometry(action).center())
    qtbot.waitUntil(lambda: not t.menu.isVisible())


#: Opening a menu offscreen: that platform cannot grab the keyboard (harmless; menus work).
opens_menu = pytest.mark.qt_log_ignore("This plugin does not support grabbing the keyboard")


def clipboard() -> str:
    return QApplication.clipboard().text()


# -- one row per decision ----------------------------------------------------------------------
def test_one_row_per_gpu_type_in_decision_order(table, plain):
    table.show(plain, None)
    best = list(plain.best_per_gpu().values())
    assert keys(table) == [c.key for c in best if c.fits]
    assert len(keys(table)) == len({c.gpu.id for c in plain.candidates if c.fits}) < len(plain.ranking)
    rec = plain.recommended
    assert keys(table)[0] == rec.key == plain.decision.recommended_key
    assert cell(table, 0, COL_PICK) == RECOMMENDED_MARK
    runner = plain.decision.runner_up_key
    assert runner is not None and cell(table, keys(table).index(runner), COL_PICK) == RUNNER_UP_MARK
    assert sum(1 for r in range(table.proxy.rowCount()) if cell(table, r, COL_PICK)) == 2
    # The expected cost is a column of its own, the core's number; no deadline or budget set.
    assert cell(table, 0, COL_COST) == fmt_usd(rec.cost.cost_usd.expected)
    assert cell(table, 0, COL_DEADLINE) == cell(table, 0, COL_BUDGET) == "—"
    assert cell(table, 0, COL_SETUP) == (
        "single GPU" if rec.gpu_count == 1 else f"{rec.gpu_count} × {rec.parallelism}"
    )
    # The pick mark is the first column shown, then the GPU.
    header = table.view.horizontalHeader()
    assert header.logicalIndex(0) == COL_PICK and header.logicalIndex(1) == COL_GPU


def test_deadline_recommends_several_gpus_and_says_meets(table, deadline):
    table.show(deadline, None)
    rec = deadline.recommended
    assert rec.gpu_count > 1 and keys(table)[0] == rec.key == deadline.decision.recommended_key
    assert cell(table, 0, COL_PICK) == RECOMMENDED_MARK
    assert cell(table, 0, COL_SETUP) == f"{rec.gpu_count} × ddp"
    assert cell(table, 0, COL_DEADLINE) == rec.cost.deadline_status == "meets"
    assert cell(table, 0, COL_BUDGET) == "—"
    # The single-GPU setup of that type, cheaper without the deadline, is not a row of its own.
    assert f"1x {rec.gpu.id} (none)" not in keys(table)


@opens_menu
def test_header_clicks_sort_numerically_and_the_menu_restores_the_decision_order(qtbot, table, deadline):
    table.show(deadline, None)
    decision = keys(table)
    header = table.view.horizontalHeader()
    assert not header.isSortIndicatorShown()  # the decision order is no column's order
    click_header(qtbot, table, COL_COST)
    assert header.isSortIndicatorShown() and header.sortIndicatorSection() == COL_COST
    costs = [table.proxy.index(r, COL_COST).data(ROLE_SORT) for r in range(table.proxy.rowCount())]
    assert costs == sorted(costs)
    texts = [cell(table, r, COL_COST) for r in range(table.proxy.rowCount())]
    assert texts != sorted(texts)  # "$11" after "$9.43": numbers, not strings
    click_header(qtbot, table, COL_COST)
    costs = [table.proxy.index(r, COL_COST).data(ROLE_SORT) for r in range(table.proxy.rowCount())]
    assert costs == sorted(costs, reverse=True)
    menu_click(qtbot, table, 0, table.decision_order_action)
    assert keys(table) == decision and not header.isSortIndicatorShown()


def test_expand_checkbox_shows_every_setup_in_the_same_order(qtbot, table, deadline):
    table.show(deadline, deadline.decision.recommended_key)
    assert not table.is_expanded()
    with qtbot.waitSignal(table.expandedChanged) as blocker:
        click_box(qtbot, table.expand_box)
    assert blocker.args == [True] and table.is_expanded()
    expected = [c.key for c in ordered(deadline.candidates) if c.fits]
    assert keys(table) == expected and len(expected) > len(deadline.best_per_gpu())
    assert cell(table, 0, COL_PICK) == RECOMMENDED_MARK
    assert (
        table.selected_key() == deadline.decision.recommended_key
    )  # the selection follows the setup, not the row number
    click_box(qtbot, table.expand_box)
    assert not table.is_expanded() and len(keys(table)) == len(deadline.best_per_gpu())
    table.set_expanded(True)
    assert table.expand_box.isChecked() and keys(table) == expected


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.sampled_from(["inference", "lora", "qlora", "full_finetune"]),
    batch=st.integers(1, 32),
    deadline_h=st.one_of(st.none(), st.floats(0.1, 100)),
    cap=st.one_of(st.none(), st.floats(1, 2000)),
    expanded=st.booleans(),
)
def test_top_row_is_the_core_recommendation(table, cats, kind, batch, deadline_h, cap, expanded):
    """For random scenarios the first row is the recommended setup, starred; one row per GPU type."""
    w = replace(
        default_scenario().workload, kind=kind, weights="nf4" if kind == "qlora" else "bf16", batch_size=batch
    )
    est = estimate(
        replace(default_scenario(), workload=w, budget=Budget(deadline_hours=deadline_h, max_total_usd=cap)),
        *cats,
    )
    table.set_expanded(expanded)
    table.show(est, None)
    rec = est.decision.recommended_key
    shown = keys(table)
    assert len(shown) == len(set(shown))
    if not expanded:
        assert len({est.candidate(k).gpu.id for k in shown}) == len(shown)
    if rec is None:
        assert not any(cell(table, r, COL_PICK) == RECOMMENDED_MARK for r in range(len(shown)))
    else:
        assert shown[0] == rec and cell(table, 0, COL_PICK) == RECOMMENDED_MARK
        assert summary_line(est).startswith("Recommended: ")
    for r in range(min(len(shown), 5)):
        c = est.candidate(shown[r])
        if c.cost is not None:
            assert cell(table, r, COL_DEADLINE) == (c.cost.deadline_status or "—")
            assert cell(table, r, COL_BUDGET) == (c.cost.budget_status or "—")


# -- copy and export ---------------------------------------------------------------------------
def test_ctrl_c_copies_the_selected_rows_as_tsv_with_a_header(qtbot, table, deadline):
    table.show(deadline, None)
    QApplication.clipboard().clear()
    click_row(qtbot, table, 0)
    click_row(qtbot, table, 2, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClick(table.view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    lines = clipboard().splitlines()
    assert len(lines) == 4
    header = lines[0].split("\t")
    assert header[:3] == ["Pick", "GPU", "Setup"] and set(header) == set(HEADERS)
    first = dict(zip(header, lines[1].split("\t")))
    setup = f"{deadline.recommended.gpu_count} × ddp"
    assert first["Pick"] == RECOMMENDED_MARK and first["Setup"] == setup and first["Deadline"] == "meets"
    assert first["Expected cost"] == fmt_usd(deadline.recommended.cost.cost_usd.expected)
    assert [line.split("\t")[1] for line in lines[1:]] == [cell(table, r, COL_GPU) for r in range(3)]


def test_ctrl_c_in_the_table_wins_over_a_window_copy_shortcut(qtbot, deadline):
    host = QWidget()
    qtbot.addWidget(host)
    t = RankingTable(host)
    QVBoxLayout(host).addWidget(t)
    window_copies = []
    window_copy = QAction("Copy", host)
    window_copy.setShortcut(QKeySequence(QKeySequence.StandardKey.Copy))
    window_copy.triggered.connect(lambda: window_copies.append(True))
    host.addAction(window_copy)
    host.resize(900, 300)
    host.show()
    qtbot.waitExposed(host)
    t.show(deadline, deadline.decision.recommended_key)
    t.view.setFocus()
    qtbot.waitUntil(t.view.hasFocus)
    QApplication.clipboard().clear()
    qtbot.keyClick(t.view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    assert not window_copies and clipboard().splitlines()[1].startswith(RECOMMENDED_MARK + "\t")


@opens_menu
def test_context_menu_copies_csv_and_the_setup_name_and_selects_all(qtbot, table, deadline):
    table.show(deadline, None)
    menu_click(qtbot, table, 1, table.copy_csv_action)
    rows = list(csv.reader(io.StringIO(clipboard())))
    assert rows[0][:2] == ["Pick", "GPU"] and len(rows) == 2
    assert rows[1][1] == cell(table, 1, COL_GPU)
    menu_click(qtbot, table, 0, table.copy_name_action)
    rec = deadline.recommended
    assert clipboard() == f"{rec.gpu_count} × {rec.gpu.name} ({rec.parallelism})"
    menu_click(qtbot, table, 0, table.select_all_action)
    assert len(table.view.selectionModel().selectedRows()) == table.proxy.rowCount()
    menu_click(qtbot, table, 0, table.copy_action)
    assert len(clipboard().splitlines()) == table.proxy.rowCount() + 1


def test_export_writes_every_shown_row_as_csv(qtbot, table, deadline, tmp_path):
    table.show(deadline, None)
    path = table.export_csv(tmp_path / "ranking.csv")
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")  # a byte-order mark: spreadsheets then read UTF-8
    rows = list(csv.reader(io.StringIO(raw.decode("utf-8-sig"))))
    assert rows[0][:3] == ["Pick", "GPU", "Setup"] and len(rows) == table.proxy.rowCount() + 1
    assert rows[1][0] == RECOMMENDED_MARK and rows[1][2] == f"{deadline.recommended.gpu_count} × ddp"
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic writer left no temporary file


@opens_menu
def test_export_from_the_menu_and_a_clear_error(qtbot, table, deadline, tmp_path, monkeypatch):
    from PySide6.QtWidgets import QFileDialog, QMessageBox

    table.show(deadline, None)
    target = tmp_path / "from-menu.csv"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a, **k: (str(target), "CSV files (*.csv)"))
    menu_click(qtbot, table, 0, table.export_action)
    assert target.exists() and f"{deadline.recommended.gpu_count} × ddp" in target.read_text(
        encoding="utf-8-sig"
    )
    with pytest.raises(StorageError) as info:
        table.export_csv(tmp_path / "no-such-folder" / "ranking.csv")
    assert str(info.value).startswith("cannot write ranking.csv:") and "\n" not in str(info.value)
    warned = []
    monkeypatch.setattr(
        QFileDialog, "getSaveFileName", lambda *a, **k: (str(tmp_path / "no-such-folder" / "r.csv"), "")
    )
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text: warned.append(text))
    assert table.export_csv_dialog() is None
    assert warned == ["Could not export the table: cannot write r.csv: No such file or directory"]


# -- empty results explain why -----------------------------------------------------------------
def _painted_text_pixels(t: RankingTable) -> int:
    """Pixels of the viewport that differ from its background (text drawn on it)."""
    image = t.view.viewport().grab().toImage()
    base = t.view.palette().color(QPalette.ColorRole.Base).rgb()
    return sum(
        1
        for y in range(0, image.height(), 2)
        for x in range(0, image.width(), 2)
        if image.pixel(x, y) != base
    )


def test_nothing_fits_paints_why_and_the_cheapest_fixes(qtbot, table, nothing_fits):
    table.show(nothing_fits, None)
    assert table.proxy.rowCount() == 0
    message = table.empty_message()
    fixes = change_lines(nothing_fits, limit=3)
    assert message.startswith("Nothing fits on any GPU compared.")
    assert len(fixes) >= 2 and all(f in message for f in fixes)
    assert "Untick 'Fits only'" in message
    assert _painted_text_pixels(table) > 200  # the message is painted, not an empty white box
    click_box(qtbot, table.fitting_box)  # untick: every GPU type, closest to fitting first
    assert table.proxy.rowCount() == len(nothing_fits.best_per_gpu())
    assert table.empty_message() == "" and cell(table, 0, COL_VERDICT) == "does not fit"
    assert all(not cell(table, r, COL_PICK) for r in range(table.proxy.rowCount()))


def test_no_setup_within_the_budget_names_the_closest(qtbot, table, broke):
    table.show(broke, None)
    assert broke.decision.status == "limits missed" and table.proxy.rowCount() > 0
    assert cell(table, 0, COL_BUDGET) == "over" and not cell(table, 0, COL_PICK)
    click_box(qtbot, table.limits_box)
    assert table.proxy.rowCount() == 0
    message = table.empty_message()
    assert message.startswith("No setup stays within the $1.00 budget; closest:")
    assert message.splitlines()[0] == summary_line(broke)
    assert "Untick 'Within limits only'" in message
    assert _painted_text_pixels(table) > 200
    click_box(qtbot, table.limits_box)
    assert table.proxy.rowCount() > 0 and table.empty_message() == ""


def test_no_estimate_yet_is_said(table):
    table.show(None, None)
    assert table.proxy.rowCount() == 0 and table.empty_message().startswith("No estimate yet.")


# -- keyboard and selection --------------------------------------------------------------------
def test_tab_leaves_the_table_arrows_move_enter_reports(qtbot, deadline):
    host = QWidget()
    qtbot.addWidget(host)
    layout = QVBoxLayout(host)
    t = RankingTable()
    after = QLineEdit()
    layout.addWidget(t)
    layout.addWidget(after)
    host.resize(900, 360)
    host.show()
    qtbot.waitExposed(host)
    t.show(deadline, deadline.decision.recommended_key)
    t.view.setFocus()
    qtbot.waitUntil(t.view.hasFocus)
    with qtbot.waitSignal(t.keySelected) as moved:
        qtbot.keyClick(t.view, Qt.Key.Key_Down)
    assert moved.args == [keys(t)[1]] and t.selected_key() == keys(t)[1]
    with qtbot.waitSignal(t.keySelected) as entered:
        qtbot.keyClick(t.view, Qt.Key.Key_Return)
    assert entered.args == [keys(t)[1]]
    with qtbot.waitSignal(t.keySelected) as keypad:
        qtbot.keyClick(t.view, Qt.Key.Key_Enter, Qt.KeyboardModifier.KeypadModifier)
    assert keypad.args == [keys(t)[1]]
    with qtbot.waitSignal(t.keySelected) as double:  # the current row again: only the double-click reports
        # A double-click is a click, then a second press that the system reports as a double-click.
        qtbot.mouseClick(t.view.viewport(), Qt.MouseButton.LeftButton, pos=row_point(t, 1))
        qtbot.mouseDClick(t.view.viewport(), Qt.MouseButton.LeftButton, pos=row_point(t, 1))
    assert double.args == [keys(t)[1]]
    t.view.setFocus()
    qtbot.keyClick(t.view, Qt.Key.Key_Tab)
    qtbot.waitUntil(after.hasFocus)
    assert not t.view.hasFocus()


def test_select_key_selects_quietly_and_show_keeps_the_selection(qtbot, table, deadline, plain):
    table.show(deadline, None)
    second = keys(table)[1]
    later = [c.key for c in plain.best_per_gpu().values() if c.fits][4]
    with qtbot.assertNotEmitted(table.keySelected):
        assert table.select_key(second)
    assert table.selected_key() == second
    assert table.view.selectionModel().isRowSelected(1)
    # A setup that is not a row of the collapsed table (a second MI300X setup) is not selected.
    assert not table.select_key("8x mi300x (zero1)") and table.selected_key() is None
    with qtbot.assertNotEmitted(table.keySelected):
        table.show(plain, later)  # the next estimate with the window's selection
    assert table.selected_key() == later and table.view.selectionModel().isRowSelected(4)
    with qtbot.waitSignal(table.keySelected) as clicked:
        click_row(qtbot, table, 0)
    assert clicked.args == [plain.decision.recommended_key]


# -- prices and colours ------------------------------------------------------------------------
def test_stale_prices_follow_the_age_set_from_outside(table, plain):
    table.model.today = dt.date(2031, 1, 1)
    table.show(plain, None)
    table.set_stale_months(6)
    priced = {
        c.gpu.name
        for c in plain.candidates
        if c.gpu.cloud_usd_per_hour or c.gpu.purchase_new_usd or c.gpu.purchase_used_usd
    }
    stale = [cell(table, r, COL_PRICE_DATE).endswith("(stale)") for r in range(table.proxy.rowCount())]
    assert stale.count(True) == len(priced)  # a GPU without any price has nothing to date
    table.set_stale_months(1200)
    assert not any(cell(table, r, COL_PRICE_DATE).endswith("(stale)") for r in range(table.proxy.rowCount()))


def _dark_palette() -> QPalette:
    p = QPalette()
    for role, color in (
        (QPalette.ColorRole.Window, "#2b2b2b"),
        (QPalette.ColorRole.Base, "#1e1e1e"),
        (QPalette.ColorRole.AlternateBase, "#262626"),
        (QPalette.ColorRole.Text, "#e6e6e6"),
        (QPalette.ColorRole.WindowText, "#e6e6e6"),
        (QPalette.ColorRole.Button, "#333333"),
        (QPalette.ColorRole.ButtonText, "#e6e6e6"),
        (QPalette.ColorRole.Highlight, "#3d7cc9"),
        (QPalette.ColorRole.HighlightedText, "#ffffff"),
    ):
        p.setColor(role, QColor(color))
    return p


@pytest.mark.parametrize("dark", [False, True])
def test_colours_are_readable_on_light_and_dark_palettes(qtbot, table, broke, dark):
    if dark:
        table.setPalette(_dark_palette())
    palette = table.view.palette()
    base = palette.color(QPalette.ColorRole.Base)
    colors = table_colors(palette)
    for tone in colors.tones.values():
        assert contrast_ratio(tone, base) >= 4.5
    assert contrast_ratio(colors.stale, base) >= 4.5
    # The recommended row's tint keeps the palette's text readable.
    assert contrast_ratio(palette.color(QPalette.ColorRole.Text), colors.recommended) >= 4.5
    # Painted: the "over" budget cell of the top row uses the readable "bad" tone.
    table.show(broke, None)
    table.view.selectionModel().clear()
    image = table.view.viewport().grab().toImage()
    rect = table.view.visualRect(table.proxy.index(0, COL_BUDGET))
    ratio = image.devicePixelRatio()
    seen = {
        image.pixelColor(int(x * ratio), int(y * ratio)).name()
        for x in range(rect.left(), rect.right())
        for y in range(rect.top(), rect.bottom())
    }
    assert colors.tones["bad"].name() in seen
    assert (base.lightness() < 100) == dark


def test_readable_moves_a_colour_until_it_contrasts():
    amber = QColor("#DDAA33")
    assert contrast_ratio(amber, QColor("white")) < 4.5  # too light for text on white as it is
    assert contrast_ratio(readable(amber, QColor("white")), QColor("white")) >= 4.5
    assert contrast_ratio(readable(QColor("#117733"), QColor("#1e1e1e")), QColor("#1e1e1e")) >= 4.5
