"""The catalog editor driven as a user would: edit, undo, redo, restart, import, export, reset,
stale prices, price lists, and damaged catalog files at start-up."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from gui_helpers import click, enter, show_tab, type_over
from PySide6.QtCore import QDate, QPoint, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QDateEdit,
    QDialog,
    QLabel,
    QMessageBox,
    QToolBar,
)

from gpuadvisor.core.formats import user_catalog as uc
from gpuadvisor.gui import catalog_editor as ce
from gpuadvisor.gui.app import build_window
from gpuadvisor.gui.catalog_editor import STALE_BRUSH
from gpuadvisor.storage.user_catalog_store import load_user_catalog, user_catalog_file

TODAY = dt.date(2026, 11, 29)


def _close(w):
    w.state.dirty = False
    if w.catalog_editor is not None:
        w.catalog_editor.close()
    w.close()
    w.deleteLater()


@pytest.fixture
def window(qtbot):
    w = build_window(deferred_charts=False)
    w.show()
    qtbot.waitExposed(w)
    w.state.flush()
    yield w
    _close(w)


@pytest.fixture
def editor(window, qtbot):
    ed = window.open_catalog_editor()
    qtbot.waitExposed(ed)
    ed.today = TODAY
    for m in ed.models.values():
        m.today = TODAY
    return ed


@pytest.fixture
def accept_dialogs(monkeypatch):
    """Preview dialogs answer Apply; question boxes answer with the given button."""
    monkeypatch.setattr(ce.PreviewDialog, "exec", lambda self: QDialog.DialogCode.Accepted)


def _row(model, gpu_id):
    return next(i for i, r in enumerate(model.rows) if r["id"] == gpu_id)


def _show_kind(qtbot, editor, kind):
    """Click the editor's tab of ``kind`` ("gpus" or "models")."""
    tab = editor.tabs_by_kind[kind]
    show_tab(qtbot, editor.tabs, editor.tabs.indexOf(tab))
    return tab


def _cell_point(tab, row_id, column) -> QPoint:
    """The centre of a cell, scrolled into view (``row_id`` of the tab's model)."""
    model = tab.model
    index = tab.proxy.mapFromSource(model.index(_row(model, row_id), model.columns.index(column)))
    assert index.isValid(), f"{row_id} is not shown"
    tab.table.scrollTo(index)
    return tab.table.visualRect(index).center()


def _select(qtbot, editor, kind, row_id):
    """Click the row's id cell, as a user selects a row."""
    tab = _show_kind(qtbot, editor, kind)
    click(qtbot, tab.table.viewport(), _cell_point(tab, row_id, "id"))
    assert tab.selected_rows() == [_row(tab.model, row_id)]


def _edit(editor, kind, row_id, column, value, qtbot):
    """Double-click the cell, type ``value`` over it and press Return; True when the cell holds it."""
    tab = _show_kind(qtbot, editor, kind)
    table = tab.table
    row = _row(tab.model, row_id)
    point = _cell_point(tab, row_id, column)
    click(qtbot, table.viewport(), point)
    qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert table.state() == QAbstractItemView.State.EditingState
    typing = QApplication.focusWidget()
    date_edit = typing if isinstance(typing, QDateEdit) else typing.parent()
    if isinstance(date_edit, QDateEdit):
        _key_in_date(qtbot, date_edit, value)
    else:
        type_over(qtbot, typing, value)
    qtbot.keyClick(typing, Qt.Key.Key_Return)
    # The view commits a cell's editor on the next turn of the event loop.
    qtbot.waitUntil(lambda: table.state() != QAbstractItemView.State.EditingState, timeout=2000)
    editor.flush()
    return tab.model.rows[row][column] == value


def _key_in_date(qtbot, edit, value):
    """Type ``value`` (yyyy-mm-dd) into a date editor showing a date: Home, Shift+Right over the
    year, then the digits (each part, once complete, moves on to the next)."""
    qtbot.keyClick(edit, Qt.Key.Key_Home)
    for _ in range(4):
        qtbot.keyClick(edit, Qt.Key.Key_Right, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(edit, value.replace("-", ""))
    assert edit.date() == QDate.fromString(value, "yyyy-MM-dd"), edit.date()


def _button(qtbot, editor, action):
    """Click the editor's toolbar button of ``action``."""
    bar = editor.findChild(QToolBar)
    click(qtbot, bar.widgetForAction(action))
    editor.flush()


def _cost(window, gpu_id):
    window.state.flush()
    best = window.state.estimate.best_per_gpu()[gpu_id]
    return best.cost.cost_usd.expected


def test_edit_undo_redo_save_restart_and_find_the_edit(window, editor, qtbot):
    gpus = editor.models["gpus"]
    before = _cost(window, "h100-sxm")
    assert _edit(editor, "gpus", "h100-sxm", "cloud_usd_per_hour_expected", "6.5", qtbot)
    assert _cost(window, "h100-sxm") > before  # live: the estimate used the new price
    assert gpus.status(_row(gpus, "h100-sxm")) == "modified"
    saved = json.loads(user_catalog_file().read_text())
    assert saved["gpus"]["overrides"]["h100-sxm"] == {"cloud_usd_per_hour_expected": "6.5"}

    _button(qtbot, editor, editor.undo_action)
    assert gpus.rows[_row(gpus, "h100-sxm")]["cloud_usd_per_hour_expected"] != "6.5"
    assert _cost(window, "h100-sxm") == pytest.approx(before)
    assert "h100-sxm" not in json.loads(user_catalog_file().read_text())["gpus"]["overrides"]
    _button(qtbot, editor, editor.redo_action)
    assert gpus.rows[_row(gpus, "h100-sxm")]["cloud_usd_per_hour_expected"] == "6.5"

    # Restart: a new window reads the saved edit, in the estimates and in the editor.
    _close(window)
    again = build_window(deferred_charts=False)
    try:
        again.state.flush()
        assert again.state.gpus.get("h100-sxm").cloud_usd_per_hour.expected == 6.5
        ed2 = again.open_catalog_editor()
        m2 = ed2.models["gpus"]
        assert m2.rows[_row(m2, "h100-sxm")]["cloud_usd_per_hour_expected"] == "6.5"
        assert m2.data(
            m2.index(_row(m2, "h100-sxm"), m2.columns.index("cloud_usd_per_hour_expected")),
            Qt.ItemDataRole.ToolTipRole,
        ).startswith("Bundled value:")
    finally:
        _close(again)


def test_undo_redo_shortcuts_exist(editor):
    assert editor.undo_action.shortcut().toString() == "Ctrl+Z"
    assert any(s.toString() == "Ctrl+Shift+Z" for s in editor.redo_action.shortcuts())


def test_a_bad_cell_is_refused_where_typed_and_the_row_stays_in_the_comparison(window, editor, qtbot):
    gpus = editor.models["gpus"]
    messages = []
    gpus.rejected.connect(messages.append)
    r = _row(gpus, "l40s")
    col = gpus.columns.index("memory_bandwidth_gb_s")
    before = gpus.rows[r]["memory_bandwidth_gb_s"]
    assert not _edit(editor, "gpus", "l40s", "memory_bandwidth_gb_s", "-5", qtbot)
    assert gpus.data(gpus.index(r, col), Qt.ItemDataRole.DisplayRole) == before  # the last valid value
    assert "must be > 0" in gpus.last_refusal and gpus.last_refusal.startswith("Memory bandwidth (GB/s)")
    assert messages and "l40s" in messages[0] and "must be > 0" in messages[0]
    assert "Not changed" in editor.info.text()
    window.state.flush()
    assert "l40s" in window.state.gpus.gpus  # never silently dropped from the comparison
    assert editor.undo.count() == 0


def test_an_incomplete_row_is_marked_named_and_left_out_until_complete(window, editor):
    """A row added empty is marked, says what it lacks, and joins the comparison once complete."""
    gpus = editor.models["gpus"]
    editor.tabs.setCurrentWidget(editor.tabs_by_kind["gpus"])
    editor.add_row()
    r = len(gpus.rows) - 1
    assert r in gpus.invalid_rows() and "required" in gpus.row_error(r)
    editor.flush()
    window.state.flush()
    assert gpus.rows[r]["id"] not in window.state.gpus.gpus
    assert "invalid row" in editor.info.text()


def test_duplicate_or_empty_id_is_refused_with_a_message(editor, qtbot):
    gpus = editor.models["gpus"]
    messages = []
    gpus.rejected.connect(messages.append)
    assert not _edit(editor, "gpus", "l40s", "id", "h100-sxm", qtbot)
    assert not _edit(editor, "gpus", "l40s", "id", "", qtbot)
    assert "already used" in messages[0] and "Id:" in messages[0]
    assert "required" in messages[1]
    assert editor.undo.count() == 0


def test_add_duplicate_delete_with_undo(window, editor, qtbot):
    gpus = editor.models["gpus"]
    n = len(gpus.rows)
    _select(qtbot, editor, "gpus", "a100-80gb")
    _button(qtbot, editor, editor.duplicate_action)
    assert len(gpus.rows) == n + 1
    copy = gpus.rows[-1]
    assert copy["id"] == "a100-80gb-copy" and gpus.status(n) == "added"
    window.state.flush()
    assert "a100-80gb-copy" in window.state.gpus.gpus  # a valid copy joins the comparison
    _button(qtbot, editor, editor.add_action)
    assert gpus.rows[-1]["id"] == "my-gpu" and gpus.invalid_rows() == [n + 1]  # empty row: marked
    _select(qtbot, editor, "gpus", "rtx-3090")
    _button(qtbot, editor, editor.delete_action)
    window.state.flush()
    assert "rtx-3090" not in window.state.gpus.gpus
    assert load_user_catalog().catalog.gpus.deleted == ("rtx-3090",)
    for _ in range(3):
        _button(qtbot, editor, editor.undo_action)
    assert len(gpus.rows) == n and load_user_catalog().catalog.is_empty


def test_reset_row_and_reset_all_with_confirmation(window, editor, monkeypatch, qtbot):
    gpus = editor.models["gpus"]
    _edit(editor, "gpus", "h100-sxm", "tdp_w", "650", qtbot)
    _edit(editor, "gpus", "a100-80gb", "tdp_w", "450", qtbot)
    _select(qtbot, editor, "gpus", "h100-sxm")
    _button(qtbot, editor, editor.reset_row_action)
    assert gpus.status(_row(gpus, "h100-sxm")) == "bundled"
    assert gpus.status(_row(gpus, "a100-80gb")) == "modified"

    asked = []

    def answer(button):
        return lambda *a, **k: (asked.append(a[1]), button)[1]

    monkeypatch.setattr(QMessageBox, "question", answer(QMessageBox.StandardButton.Cancel))
    _button(qtbot, editor, editor.reset_all_action)
    assert asked == ["Reset to the bundled catalog"]
    assert gpus.status(_row(gpus, "a100-80gb")) == "modified"
    monkeypatch.setattr(QMessageBox, "question", answer(QMessageBox.StandardButton.Reset))
    _button(qtbot, editor, editor.reset_all_action)
    assert len(asked) == 2
    assert gpus.rows == uc.bundled_rows("gpus")
    assert load_user_catalog().catalog.is_empty
    _button(qtbot, editor, editor.undo_action)
    assert gpus.status(_row(gpus, "a100-80gb")) == "modified"


def test_import_csv_with_good_and_bad_rows_shows_report_and_is_undoable(
    window, editor, tmp_path, accept_dialogs, qtbot
):
    header = ",".join(uc.columns("gpus"))
    base = {r["id"]: r for r in uc.bundled_rows("gpus")}

    def line(row):
        return ",".join('"' + row.get(c, "").replace('"', '""') + '"' for c in uc.columns("gpus"))

    good_new = dict(
        base["l40s"],
        id="l40s-quote",
        name="L40S (our quote)",
        cloud_usd_per_hour_expected="0.95",
        cloud_usd_per_hour_low="0.9",
        cloud_usd_per_hour_high="1.0",
    )
    updated = dict(base["a10"], tdp_w="140") if "a10" in base else dict(base["l4"], tdp_w="70")
    bad = dict(base["t4"] if "t4" in base else base["l4"], id="broken-gpu", memory_bandwidth_gb_s="fast")
    path = tmp_path / "quotes.csv"
    path.write_text("\n".join([header, line(good_new), line(updated), line(bad)]) + "\n")

    gpus = editor.models["gpus"]
    show_tab(qtbot, editor.tabs, 0)
    report = editor.import_rows(str(path))
    editor.flush()
    assert [x.id for x in report.added] == ["l40s-quote"]
    assert [x.id for x in report.updated] == [updated["id"]]
    assert [(x.line, x.id) for x in report.rejected] == [(4, "broken-gpu")]
    assert "memory_bandwidth_gb_s" in report.rejected[0].reason
    assert "1 added, 1 updated" in editor.info.text().replace("<br>", " ")
    details = ce.import_details(report, uc.bundled_rows("gpus"))
    assert f"{updated['id']}: tdp_w: {base[updated['id']]['tdp_w']} -> {updated['tdp_w']}" in details
    assert gpus.rows[-1]["id"] == "l40s-quote"
    window.state.flush()
    assert "l40s-quote" in window.state.gpus.gpus
    _button(qtbot, editor, editor.undo_action)
    assert all(r["id"] != "l40s-quote" for r in gpus.rows)


def test_the_toolbar_buttons_ask_before_they_act(editor, qtbot, monkeypatch):
    """A click on a toolbar button that needs a file or a confirmation asks for it: a cancelled
    dialog changes nothing (the buttons once passed Qt's "checked" flag on as the file path and
    as "confirm", so Import, Export, the price lists and Restore failed with a TypeError and Reset
    all discarded every edit without asking)."""
    from PySide6.QtWidgets import QFileDialog, QInputDialog

    asked = []

    def answer(what, reply):
        return lambda *a, **k: (asked.append(what), reply)[1]

    monkeypatch.setattr(QFileDialog, "getOpenFileName", answer("open", ("", "")))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", answer("save", ("", "")))
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", answer("open several", ([], "")))
    monkeypatch.setattr(QMessageBox, "question", answer("confirm", QMessageBox.StandardButton.Cancel))
    monkeypatch.setattr(QMessageBox, "information", answer("no backup", QMessageBox.StandardButton.Ok))
    monkeypatch.setattr(QInputDialog, "getItem", answer("which backup", ("", False)))
    _edit(editor, "gpus", "h100-sxm", "tdp_w", "650", qtbot)
    _edit(editor, "gpus", "h100-sxm", "tdp_w", "660", qtbot)  # a second save leaves a backup
    before = editor.models["gpus"].snapshot()
    for action, what in (
        (editor.import_action, "open"),
        (editor.export_action, "save"),
        (editor.prices_action, "open several"),
        (editor.reset_all_action, "confirm"),
        (editor.restore_action, "which backup"),
    ):
        asked.clear()
        _button(qtbot, editor, action)
        assert asked == [what], action.text()
        assert editor.models["gpus"].snapshot() == before, action.text()


def test_export_round_trips_exactly(editor, tmp_path, qtbot):
    _edit(editor, "gpus", "h100-sxm", "notes", "our own note, with a comma", qtbot)
    for fmt in ("csv", "json"):
        path = editor.export_rows(str(tmp_path / f"gpus.{fmt}"), fmt)
        assert path is not None and path.exists()
        from gpuadvisor.core.formats.catalog_exchange import import_file

        report = import_file("gpus", path, editor.models["gpus"].snapshot())
        assert not report.added and not report.updated and not report.rejected
        assert len(report.unchanged) == len(editor.models["gpus"].rows)


def test_stale_prices_are_flagged_in_editor_results_and_follow_the_setting(window, editor, qtbot):
    gpus = editor.models["gpus"]
    _edit(editor, "gpus", "h100-sxm", "price_as_of", "2024-01-15", qtbot)
    r = _row(gpus, "h100-sxm")
    col = gpus.columns.index("price_as_of")
    assert gpus.data(gpus.index(r, col), Qt.ItemDataRole.BackgroundRole) is STALE_BRUSH
    assert "Stale price" in gpus.data(gpus.index(r, col), Qt.ItemDataRole.ToolTipRole)
    window.state.flush()
    rm = window.ranking_model
    texts = [rm.texts(i) for i, c in enumerate(rm.rows) if c.gpu.id == "h100-sxm"]
    assert texts and texts[0][-1] == "2024-01-15 (stale)"
    enter(qtbot, editor.stale_field, "4 years")  # 48 months: no longer stale
    assert editor.stale_field.value() == 48
    assert gpus.data(gpus.index(r, col), Qt.ItemDataRole.BackgroundRole) is not STALE_BRUSH
    assert window.settings.stale_price_months == 48
    texts = [rm.texts(i) for i, c in enumerate(rm.rows) if c.gpu.id == "h100-sxm"]
    assert texts[0][-1] == "2024-01-15"


def test_price_list_import_previews_applies_and_undoes(window, editor, tmp_path, accept_dialogs, qtbot):
    path = tmp_path / "lambdalabs.csv"
    path.write_text(
        "instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot,disk_size,gpu_vendor,flags\n"
        "gpu_8x_h100_sxm5,us-east-1,23.92,208,1800,8,H100,80,false,,nvidia,\n"
        "gpu_1x_h100_pcie,us-west-1,2.49,26,200,1,H100 PCIe,80,false,,nvidia,\n"
        "gpu_1x_a10,us-west-1,0.75,30,200,1,A10,24,false,,nvidia,\n"
        "gpu_1x_k80,us-west-1,0.10,4,16,1,K80,12,false,,nvidia,\n"
        "broken,us-west-1,,4,16,1,A10,24,false,,nvidia,\n"
    )
    gpus = editor.models["gpus"]
    updates = editor.import_price_lists([str(path)])
    editor.flush()
    ids = {gid for gid, _ in updates}
    assert {"h100-sxm", "h100-pcie"} <= ids
    row = gpus.rows[_row(gpus, "h100-sxm")]
    assert row["cloud_usd_per_hour_expected"] == "2.99"
    assert row["price_as_of"] == TODAY.isoformat()
    assert "K80" in editor.info.text()
    window.state.flush()
    assert window.state.gpus.get("h100-sxm").cloud_usd_per_hour.expected == pytest.approx(2.99)
    _button(qtbot, editor, editor.undo_action)
    assert gpus.rows[_row(gpus, "h100-sxm")] == uc.bundled_rows("gpus")[_row(gpus, "h100-sxm")]


def test_search_filters_and_numbers_sort_as_numbers(editor, qtbot):
    tab = _show_kind(qtbot, editor, "gpus")
    type_over(qtbot, tab.search, "h100")
    shown = [tab.proxy.index(i, 0).data() for i in range(tab.proxy.rowCount())]
    assert 1 <= len(shown) < len(editor.models["gpus"].rows)
    assert "h100-sxm" in shown and "a100-80gb" not in shown
    type_over(qtbot, tab.search, "")
    assert tab.proxy.rowCount() == len(editor.models["gpus"].rows)
    col = editor.models["gpus"].columns.index("memory_gib_usable")
    header = tab.table.horizontalHeader()
    tab.table.scrollTo(tab.proxy.index(0, col))
    x = header.sectionViewportPosition(col) + header.sectionSize(col) // 2
    click(qtbot, header.viewport(), QPoint(x, header.height() // 2))
    assert header.sortIndicatorSection() == col
    values = [float(tab.proxy.index(i, col).data()) for i in range(tab.proxy.rowCount())]
    assert values in (sorted(values), sorted(values, reverse=True))
    assert values[0] != values[-1]


def test_editors_suit_their_columns(editor, qtbot):
    tab = editor.tabs_by_kind["gpus"]
    model = editor.models["gpus"]
    delegate = tab.table.itemDelegate()
    from PySide6.QtWidgets import QComboBox, QDateEdit, QStyleOptionViewItem

    def editor_for(column):
        index = tab.proxy.index(0, model.columns.index(column))
        return delegate.createEditor(tab.table.viewport(), QStyleOptionViewItem(), index)

    assert isinstance(editor_for("architecture"), QComboBox)
    assert isinstance(editor_for("price_as_of"), QDateEdit)
    number = editor_for("memory_bandwidth_gb_s")
    assert isinstance(number, ce.NumberEditor) and number.findChild(QLabel).text() == "GB/s"
    price = editor_for("cloud_usd_per_hour_expected")
    assert price.findChild(QLabel).text() == "USD/GPU-h"
    assert ce.column_label("memory_bandwidth_gb_s") == "Memory bandwidth (GB/s)"
    assert ce.column_label("nvlink_domain_gpus") == "NVLink domain GPUs"


def test_model_presets_tab_edits_reach_the_model_page(window, editor, qtbot):
    models = editor.models["models"]
    _select(qtbot, editor, "models", "llama-3.1-8b")
    _button(qtbot, editor, editor.duplicate_action)
    new_id = models.rows[-1]["id"]
    assert new_id == "llama-3.1-8b-copy"
    ids = [
        window.model_page.preset_list.item(i).data(Qt.ItemDataRole.UserRole)
        for i in range(window.model_page.preset_list.count())
    ]
    assert new_id in ids


@pytest.mark.parametrize(
    "content",
    [
        b'{"format": "gpuadvisor-user-catalog", "schema_version": 1, "gpus": {"overri',  # truncated
        b'{"format": "gpuadvisor-user-catalog", "schema_version": 99, "gpus": {}, "models": {}}',  # unknown version
        b'{"format": "gpuadvisor-user-catalog", "schema_version": 1, "saved": "", "gpus": {"overrides": '
        b'{"h100-sxm": {"tdp_w": 700}}, "added": [], "deleted": []}, "models": {"overrides": {}, "added": [], '
        b'"deleted": []}}',  # wrong type
        b"",  # empty
        b"\x00\x01\x02\xff\xfe binary",  # binary
    ],
    ids=["truncated", "unknown-version", "wrong-types", "empty", "binary"],
)
def test_damaged_user_catalog_never_crashes_and_is_kept(qtbot, content):
    path = user_catalog_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    w = build_window(deferred_charts=False)
    try:
        w.show()
        qtbot.waitUntil(lambda: w.catalog_warning_box is not None)
        assert w.state.gpus.get("h100-sxm").name  # the bundled catalog is in use
        text = w.catalog_warning_box.text()
        assert "user-catalog.json" in text and "could not be loaded" in text and "kept as" in text
        kept = [p for p in path.parent.iterdir() if p.name.startswith("user-catalog.json.")]
        assert len(kept) == 1 and kept[0].read_bytes() == content  # never deleted or changed
        assert not path.exists()
        ed = w.open_catalog_editor()
        assert ed.banner.isVisible() and "Restore backup" in ed.banner.text()
    finally:
        _close(w)


def test_restore_a_backup_is_undoable(window, editor, qtbot):
    _edit(editor, "gpus", "h100-sxm", "tdp_w", "650", qtbot)
    _edit(editor, "gpus", "h100-sxm", "tdp_w", "660", qtbot)  # the .bak now holds the 650 version
    backups = __import__("gpuadvisor.storage.user_catalog_store", fromlist=["x"]).user_catalog_backups()
    assert backups
    assert editor.restore_backup(backups[0])
    editor.flush()
    gpus = editor.models["gpus"]
    assert gpus.rows[_row(gpus, "h100-sxm")]["tdp_w"] == "650"
    _button(qtbot, editor, editor.undo_action)
    assert gpus.rows[_row(gpus, "h100-sxm")]["tdp_w"] == "660"


def test_an_unwritable_catalog_keeps_edits_and_says_why(window, editor, monkeypatch, qtbot):
    from gpuadvisor.storage import StorageError

    def refuse(*_a, **_k):
        raise StorageError("user-catalog.json", "cannot write user-catalog.json: No space left on device")

    monkeypatch.setattr(ce.editor, "save_and_merge_user_catalog", refuse)
    assert _edit(editor, "gpus", "h100-sxm", "tdp_w", "650", qtbot)
    assert "could not be saved" in editor.info.text() and "No space left" in editor.info.text()
    gpus = editor.models["gpus"]
    assert gpus.rows[_row(gpus, "h100-sxm")]["tdp_w"] == "650"
    window.state.flush()
    assert window.state.gpus.get("h100-sxm").tdp_w == 650  # still used by the estimates
