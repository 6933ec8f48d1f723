"""A price-list import in the catalog editor, clicked through and undone: the new prices and the
instance types it saved go back together, in one undo step, and come again with one redo."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QFileDialog, QLabel, QToolBar

from gpuadvisor.core.formats import user_catalog as uc
from gpuadvisor.core.specs.instances import bundled_instances
from gpuadvisor.gui.app import build_window
from gpuadvisor.gui.catalog_editor.preview import PreviewDialog
from gpuadvisor.storage.instances_store import instances_file, load_user_instances

TODAY = dt.date(2026, 11, 29)
# Lambda's list in the SkyPilot format, with a price the bundled snapshot does not have.
LAMBDA_LIST = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
    "gpu_8x_h100_sxm5,H100,8,208,1800,19.99,us-east-1,,\n"
    "gpu_1x_h100_sxm5,H100,1,26,225,2.69,us-east-1,,\n"
)

RUNPOD_LIST = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice\n"
    "8x_H100_SECURE,H100,8,128,1000,23.92,US,,\n"
)
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def window(qtbot):
    w = build_window(deferred_charts=False)
    w.show()
    qtbot.waitExposed(w)
    w.state.flush()
    yield w
    w.state.dirty = False
    if w.catalog_editor is not None:
        w.catalog_editor.close()
    w.close()
    w.deleteLater()


def _click(qtbot, editor, action):
    """Click the editor's toolbar button of ``action``, as a user does."""
    bar = editor.findChild(QToolBar)
    widget = bar.widgetForAction(action)
    assert widget is not None and widget.isEnabled(), action.text()
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def _lambda_rows(window):
    return {t.instance_type: t.usd_per_hour for t in window.state.instances.types if t.provider == "lambda"}


def test_undo_takes_back_the_prices_and_the_instance_types_in_one_step(window, qtbot, tmp_path, monkeypatch):
    path = tmp_path / "lambda" / "vms.csv"
    path.parent.mkdir()
    path.write_text(LAMBDA_LIST, encoding="utf-8")
    editor = window.open_catalog_editor()
    editor.today = TODAY
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(path)], "CSV files (*.csv)"))
    gpus = editor.models["gpus"]
    h100 = next(i for i, r in enumerate(gpus.rows) if r["id"] == "h100-sxm")
    bundled_lambda = {
        t.instance_type: t.usd_per_hour for t in bundled_instances().types if t.provider == "lambda"
    }
    assert _lambda_rows(window) == bundled_lambda and not instances_file().exists()

    seen = []

    def apply_in_preview():
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, PreviewDialog)
        seen.append(dialog.findChild(QLabel).text())
        qtbot.mouseClick(dialog.apply_button, Qt.MouseButton.LeftButton)

    QTimer.singleShot(0, apply_in_preview)
    _click(qtbot, editor, editor.prices_action)
    editor.flush()
    window.state.flush()
    assert seen and "2 cloud instance types" in seen[0]
    # Applied: the catalog's H100 price and the place to rent it.
    assert gpus.rows[h100]["price_as_of"] == TODAY.isoformat()
    assert instances_file().exists(), editor.info.text()
    assert _lambda_rows(window) == {"gpu_8x_h100_sxm5": pytest.approx(19.99), "gpu_1x_h100_sxm5": 2.69}
    assert editor.undo.count() == 1 and editor.undo.undoText() == "Import prices from vms.csv"
    assert editor.undo_action.toolTip() == "Undo Import prices from vms.csv"

    _click(qtbot, editor, editor.undo_action)  # one click takes back both
    editor.flush()
    window.state.flush()
    assert gpus.rows[h100] == uc.bundled_rows("gpus")[h100]
    assert not instances_file().exists()
    assert _lambda_rows(window) == bundled_lambda
    assert window.state.estimate.instances.types == bundled_instances().types

    _click(qtbot, editor, editor.redo_action)  # and one brings both again
    editor.flush()
    window.state.flush()
    assert gpus.rows[h100]["price_as_of"] == TODAY.isoformat()
    assert _lambda_rows(window)["gpu_8x_h100_sxm5"] == pytest.approx(19.99)
    assert "gpu_8x_h100_sxm5" in instances_file().read_text(encoding="utf-8")


def test_undo_puts_back_an_earlier_import(window, qtbot, tmp_path, monkeypatch):
    """The file an earlier import left is what undo restores, not the bundled snapshot."""
    first = tmp_path / "first" / "lambda" / "vms.csv"
    first.parent.mkdir(parents=True)
    first.write_text(LAMBDA_LIST.replace("19.99", "21.50"), encoding="utf-8")
    second = tmp_path / "second" / "lambda" / "vms.csv"
    second.parent.mkdir(parents=True)
    second.write_text(LAMBDA_LIST, encoding="utf-8")
    editor = window.open_catalog_editor()
    editor.today = TODAY
    chosen = [first]
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(chosen[0])], ""))
    for path in (first, second):
        chosen[0] = path
        QTimer.singleShot(
            0,
            lambda: qtbot.mouseClick(
                QApplication.activeModalWidget().apply_button, Qt.MouseButton.LeftButton
            ),
        )
        _click(qtbot, editor, editor.prices_action)
        editor.flush()
    window.state.flush()
    assert _lambda_rows(window)["gpu_8x_h100_sxm5"] == pytest.approx(19.99)
    _click(qtbot, editor, editor.undo_action)
    window.state.flush()
    assert _lambda_rows(window)["gpu_8x_h100_sxm5"] == pytest.approx(21.50)
    assert "21.5" in instances_file().read_text(encoding="utf-8")


def test_undo_keeps_the_instance_types_another_program_imported_meanwhile(
    window, qtbot, tmp_path, monkeypatch
):
    """The editor imports Lambda's list, ``gpuadvisor-cli prices import`` then saves RunPod's, and
    the editor's undo and redo touch Lambda's rows only: RunPod's stay in the file and the results."""
    ours = tmp_path / "lambda" / "vms.csv"
    ours.parent.mkdir()
    ours.write_text(LAMBDA_LIST, encoding="utf-8")
    theirs = tmp_path / "runpod" / "vms.csv"
    theirs.parent.mkdir()
    theirs.write_text(RUNPOD_LIST, encoding="utf-8")
    editor = window.open_catalog_editor()
    editor.today = TODAY
    monkeypatch.setattr(QFileDialog, "getOpenFileNames", lambda *a, **k: ([str(ours)], ""))
    QTimer.singleShot(
        0, lambda: qtbot.mouseClick(QApplication.activeModalWidget().apply_button, Qt.MouseButton.LeftButton)
    )
    _click(qtbot, editor, editor.prices_action)
    editor.flush()
    done = subprocess.run(
        [sys.executable, "-m", "gpuadvisor.cli", "prices", "import", "--provider", "runpod", str(theirs)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr

    def saved_types() -> set[str]:
        return {t.instance_type for t in load_user_instances()[0].types}

    assert {"gpu_8x_h100_sxm5", "8x_H100_SECURE"} <= saved_types()
    _click(qtbot, editor, editor.undo_action)
    window.state.flush()
    assert "8x_H100_SECURE" in saved_types() and "gpu_8x_h100_sxm5" not in saved_types()
    assert "8x_H100_SECURE" in {t.instance_type for t in window.state.instances.types}
    assert _lambda_rows(window)["gpu_8x_h100_sxm5"] != pytest.approx(19.99)  # the bundled price again
    _click(qtbot, editor, editor.redo_action)
    window.state.flush()
    assert {"gpu_8x_h100_sxm5", "8x_H100_SECURE"} <= saved_types()
    assert _lambda_rows(window)["gpu_8x_h100_sxm5"] == pytest.approx(19.99)
