"""The catalog editor after a save that merged another program's changes: a real
``gpuadvisor-cli catalog import`` saves rows while the editor is open, and the editor's next save
shows the merged table at once, keeps its selection and current cell, and its undo stack still
takes back its own edits only, step by step, leaving the other program's rows where they are."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from gui_helpers import click, close_window
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolBar

from gpuadvisor.core.formats import user_catalog as uc
from gpuadvisor.gui.app import build_window
from gpuadvisor.gui.catalog_editor import NumberEditor
from gpuadvisor.storage.user_catalog_store import load_user_catalog

REPO = Path(__file__).resolve().parents[2]
BUNDLED = {r["id"]: r for r in uc.bundled_rows("gpus")}


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


def _index(editor, gpu_id: str, column: str):
    tab = editor.tabs_by_kind["gpus"]
    model = tab.model
    row = next(i for i, r in enumerate(model.rows) if r["id"] == gpu_id)
    index = tab.proxy.mapFromSource(model.index(row, model.columns.index(column)))
    tab.table.scrollTo(index)
    return tab.table, index


def _type_in_cell(qtbot, editor, gpu_id: str, column: str, text: str) -> None:
    """Double-click the cell, type over it and press Enter, as a user does."""
    table, index = _index(editor, gpu_id, column)
    rect = table.visualRect(index)
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: bool(table.viewport().findChildren(NumberEditor)))
    line = table.viewport().findChildren(NumberEditor)[0].line
    line.selectAll()
    qtbot.keyClicks(line, text)
    qtbot.keyClick(line, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: not table.viewport().findChildren(NumberEditor))
    editor.flush()


def _click_action(qtbot, editor, action) -> None:
    click(qtbot, editor.findChild(QToolBar).widgetForAction(action))
    editor.flush()


def _cli_import(tmp_path: Path) -> None:
    """Another program saves while the editor is open: a new GPU and a change to a bundled one."""
    rows = [
        {**BUNDLED["h100-sxm"], "id": "cli-gpu", "name": "GPU from the command line"},
        {**BUNDLED["l4"], "tdp_w": "80"},
    ]
    path = tmp_path / "from-cli.json"
    path.write_text(json.dumps({"catalog": "gpus", "rows": rows}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "gpuadvisor.cli", "catalog", "import", "gpus", str(path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def _table(editor) -> dict[str, dict[str, str]]:
    return {r["id"]: r for r in editor.models["gpus"].rows}


def _saved() -> dict[str, dict[str, str]]:
    loaded = load_user_catalog()
    assert loaded.warnings == []
    return {m.row["id"]: dict(m.row) for m in uc.merge("gpus", loaded.catalog.gpus)[0]}


def test_the_editor_shows_a_merged_save_and_undo_takes_back_its_own_edits_only(
    window, editor, qtbot, tmp_path
):
    # Two edits of the editor's own: a typed cell and a duplicated row (a whole-table undo step).
    _type_in_cell(qtbot, editor, "h100-sxm", "tdp_w", "650")
    _click_action(qtbot, editor, editor.duplicate_action)
    assert "h100-sxm-copy" in _table(editor)

    _cli_import(tmp_path)
    assert "cli-gpu" in _saved() and "cli-gpu" not in _table(editor)  # not saved by the editor yet

    # The editor's next edit is saved merged with the command line's, and the table shows it all.
    _type_in_cell(qtbot, editor, "a100-80gb", "tdp_w", "420")
    table = _table(editor)
    assert table["cli-gpu"]["name"] == "GPU from the command line" and table["l4"]["tdp_w"] == "80"
    assert table["h100-sxm"]["tdp_w"] == "650" and table["a100-80gb"]["tdp_w"] == "420"
    assert "h100-sxm-copy" in table and table == _saved()
    assert "cli-gpu added" in editor.info.text() and "l4 changed" in editor.info.text()
    assert editor.undo.count() == 3  # the undo stack survived
    # The selection and the current cell stayed on the row the user was editing.
    tab = editor.tabs_by_kind["gpus"]
    model = tab.model
    current = tab.proxy.mapToSource(tab.table.currentIndex())
    assert model.rows[current.row()]["id"] == "a100-80gb" and model.columns[current.column()] == "tdp_w"
    assert [model.rows[r]["id"] for r in tab.selected_rows()] == ["a100-80gb"]
    # The estimates have the command line's GPU too.
    window.state.flush()
    assert window.state.gpus.get("cli-gpu").name == "GPU from the command line"

    # Undo, step by step: the editor's own edits go, the command line's stay, on screen and on disk.
    for step, gone in enumerate(
        [
            lambda t: t["a100-80gb"]["tdp_w"] == BUNDLED["a100-80gb"]["tdp_w"],
            lambda t: "h100-sxm-copy" not in t,
            lambda t: t["h100-sxm"]["tdp_w"] == BUNDLED["h100-sxm"]["tdp_w"],
        ]
    ):
        _click_action(qtbot, editor, editor.undo_action)
        table = _table(editor)
        assert gone(table), step
        assert "cli-gpu" in table and table["l4"]["tdp_w"] == "80", step
        assert table == _saved(), step
    assert not editor.undo.canUndo()

    # Redo brings the editor's edits back over the merged table.
    for _ in range(3):
        _click_action(qtbot, editor, editor.redo_action)
    table = _table(editor)
    assert table["h100-sxm"]["tdp_w"] == "650" and "h100-sxm-copy" in table
    assert table["a100-80gb"]["tdp_w"] == "420" and "cli-gpu" in table and table["l4"]["tdp_w"] == "80"
    assert table == _saved()
