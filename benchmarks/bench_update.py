#!/usr/bin/env python3
"""Benchmark: one input change in the window -> estimate -> every view redrawn (offscreen).

Changes the batch size (and the workload kind) as a user would, typing into the field, then times
the recompute (the debounce itself excluded) plus the redraw of the charts, the ranking table and
the detail panel (processEvents until idle); a service, estimated off the GUI thread, is timed until
its answer has been delivered and drawn. The aim is under 50 ms median wall time on a quiet machine;
the process CPU time is printed too, because it is what the update costs even when other
programs compete for the cores (the GUI thread does all the work).

Usage: .venv/bin/python benchmarks/bench_update.py [n]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


#: The five workload kinds the "workload kind" case cycles through (a service is timed on its own).
KINDS = ("inference", "lora", "qlora", "full_finetune", "pretrain")


def serve(w, hours: int) -> None:
    """A service (the Serving workload, 20 requests/s by default) with ``hours`` a day."""
    page = w.workload_page
    if page.kind.currentData() != "serving":
        page.kind.setCurrentIndex(page.kind.findData("serving"))
    page.serving_box.hours.enter(str(hours))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ.setdefault("GPUADVISOR_HOME", tempfile.mkdtemp(prefix="gpuadvisor-bench-"))
    from PySide6.QtWidgets import QApplication

    from gpuadvisor.gui.app import build_window

    app = QApplication.instance() or QApplication([])
    w = build_window(deferred_charts=False)
    w.resize(1600, 1000)
    w.show()
    app.processEvents()
    for label, change in (
        ("batch size", lambda i: w.workload_page.batch.enter(str(2 + i % 6))),
        (
            "workload kind",
            lambda i: w.workload_page.kind.setCurrentIndex(w.workload_page.kind.findData(KINDS[i % 5])),
        ),
        ("model preset", lambda i: w.model_page.preset_list.setCurrentRow(3 + i % 8)),
        ("service (h/day)", lambda i: serve(w, 12 + i % 12)),
    ):
        samples, cpu, core = [], [], []
        for i in range(n):
            change(i)
            t0, c0 = time.perf_counter(), time.process_time()
            w.state.recompute()
            w.state.wait_background()  # a service is simulated off the GUI thread: its answer counts
            app.processEvents()
            samples.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
            core.append(w.state.last_compute_ms)
        print(
            f"{label:14s}: update (estimate + redraw) median {statistics.median(samples):6.1f} ms, "
            f"p90 {sorted(samples)[int(0.9 * n)]:6.1f} ms (CPU median {statistics.median(cpu):5.1f} ms); "
            f"of which estimate median {statistics.median(core):5.1f} ms"
        )
    w.state.dirty = False
    w.close()


if __name__ == "__main__":
    main()
