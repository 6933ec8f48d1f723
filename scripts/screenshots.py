#!/usr/bin/env python3
"""Render the main window to PNG screenshots in docs/screenshots/.

Run under a real X server so the window is drawn as users see it:
    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshots.py
(it also works offscreen: QT_QPA_PLATFORM=offscreen).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = ROOT / "docs" / "screenshots"


def main() -> int:
    os.environ.setdefault("GPUADVISOR_HOME", tempfile.mkdtemp(prefix="gpuadvisor-shots-"))
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from gpuadvisor.gui.app import build_window

    app = QApplication.instance() or QApplication([sys.argv[0]])
    window = build_window(deferred_charts=False)
    window.resize(1600, 1000)
    window.show()
    OUT.mkdir(parents=True, exist_ok=True)
    shots: list[tuple[str, callable]] = [
        (
            "01-workload-vram.png",
            lambda: (window.page_tabs.setCurrentIndex(0), window.results.chart_tabs.setCurrentIndex(0)),
        ),
        (
            "02-model-cost-time.png",
            lambda: (window.page_tabs.setCurrentIndex(1), window.results.chart_tabs.setCurrentIndex(1)),
        ),
        (
            "03-budget-what-if.png",
            lambda: (window.page_tabs.setCurrentIndex(2), window.results.chart_tabs.setCurrentIndex(2)),
        ),
        ("06-serving.png", lambda: _serving(window)),
        ("06-serving-latency-load.png", lambda: _serving_latency(window)),
        ("06-serving-memory.png", lambda: _serving_memory(window)),
        ("07-layout-pretrain.png", lambda: _laid_out_pretrain(window)),
        ("04-catalog-editor.png", lambda: _edit_catalog(window)),
        ("05-measurements.png", lambda: _record_runs(window)),
    ]

    def take(i: int = 0) -> None:
        if i == len(shots):
            window.state.dirty = False
            for w in QApplication.topLevelWidgets():  # a tool window or a prompt left open
                w.close()
            app.quit()
            QTimer.singleShot(2000, lambda: os._exit(0))  # every shot is saved: never wait on a dialog
            return
        name, prepare = shots[i]
        prepare()
        window.state.flush()

        def grab() -> None:
            target = {"04": window.catalog_editor, "05": window.measurements_dialog}.get(name[:2], window)
            target.grab().save(str(OUT / name))
            print(OUT / name)
            take(i + 1)

        QTimer.singleShot(300, grab)

    QTimer.singleShot(500, take)
    app.exec()
    window.state.dirty = False
    return 0


def _serving(window) -> None:
    """The 20-replica serving example opened, with its throughput-latency chart."""
    from gpuadvisor.gui.results_view import SERVING_TAB

    window.open_path(str(ROOT / "docs" / "examples" / "serving-20-replicas.json"))
    window.page_tabs.setCurrentIndex(0)
    window.state.flush()
    window.results.chart_tabs.setCurrentIndex(SERVING_TAB)


def _serving_latency(window) -> None:
    """The same service's TTFT and ITL (p50 and p99) against the load, with the targets and the stated
    load drawn."""
    from gpuadvisor.gui.results_view import LATENCY_TAB

    window.results.chart_tabs.setCurrentIndex(LATENCY_TAB)


def _serving_memory(window) -> None:
    """The same service on every data-centre GPU type: each fleet's replica memory with its requests in
    flight and the engine's unused KV pool (hatched)."""
    page = window.workload_page
    page.gpu.setCurrentIndex(page.gpu.findData("segment:data_centre"))
    window.state.flush()
    window.results.chart_tabs.setCurrentIndex(0)


def _laid_out_pretrain(window) -> None:
    """Llama 3.1 70B pre-trained on 64 H100 laid out by hand: TP8 x PP4, selective recompute."""
    window.state.new(window.default_scenario)
    window.page_tabs.setCurrentIndex(1)
    page, model = window.workload_page, window.model_page
    for i in range(model.preset_list.count()):
        if model.preset_list.item(i).data(Qt.ItemDataRole.UserRole) == "llama-3.1-70b":
            model.preset_list.setCurrentRow(i)
    window.state.flush()
    window.page_tabs.setCurrentIndex(0)
    page.kind.setCurrentIndex(page.kind.findData("pretrain"))
    page.gpu.setCurrentIndex(page.gpu.findData("h100-sxm"))
    page.count.setCurrentIndex(page.count.findData(64))
    page.layout_box.setChecked(True)
    page.tp.enter("8")
    page.pp.enter("4")
    page.recompute.setCurrentIndex(page.recompute.findData("selective"))
    window.state.flush()
    window.results.chart_tabs.setCurrentIndex(0)
    scroll = window.page_tabs.currentWidget()
    scroll.ensureWidgetVisible(page.layout_box)


def _edit_catalog(window) -> None:
    """The editor with one price quote of our own and one mistake refused where it was typed (a
    negative board power: the row keeps its last valid value and stays compared)."""
    window.state.new(window.default_scenario)  # the measured runs that follow are of the default
    editor = window.open_catalog_editor()
    editor.resize(1500, 760)
    model = editor.models["gpus"]
    row = next(i for i, r in enumerate(model.rows) if r["id"] == "h100-sxm")
    tab = editor.tabs_by_kind["gpus"]
    tab.select_source_row(row)
    editor.duplicate_rows()
    copy = len(model.rows) - 1
    model.setData(model.index(copy, model.columns.index("name")), "H100 SXM5 80 GB (our quote)")
    model.setData(model.index(copy, model.columns.index("cloud_usd_per_hour_expected")), "$2.10")
    editor.flush()
    model.setData(model.index(copy, model.columns.index("tdp_w")), "-700")  # refused, and said so
    tab.search.setText("h100")  # as a user finds the rows: the H100s, the copy among them
    tab.table.clearSelection()
    cell = tab.proxy.mapFromSource(model.index(copy, model.columns.index("tdp_w")))
    tab.table.scrollTo(cell, QAbstractItemView.ScrollHint.PositionAtCenter)


def _record_runs(window) -> None:
    """Two measured runs of the default scenario on an A100 80 GB, fitted and applied."""
    window.catalog_editor.close()
    dialog = window.open_measurements()
    dialog.resize(1300, 820)
    dialog.gpu_box.setCurrentIndex(dialog.gpu_box.findData("a100-80gb"))
    dialog.count_field.enter("1")
    for tokens_s, memory, note in (
        ("2450", "33.1", "first run, nvidia-smi peak"),
        ("2610", "32.8", "second run"),
    ):
        dialog.throughput.edit.setText(tokens_s)
        dialog.memory.edit.setText(memory)
        dialog.note.setText(note)
        dialog.record_button.click()
    dialog.fit_button.click()
    if not dialog.use_calibration.isChecked():
        dialog.use_calibration.click()
    window.state.flush()


if __name__ == "__main__":
    sys.exit(main())
