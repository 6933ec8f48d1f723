"""Time one chart redraw: ``show(est, recommended)`` plus the repaint, for each chart.

``python -m gpuadvisor.views.charts._bench [--width PX] [--height PX] [--runs N]``

Alternates four estimates of the default scenario (batch size 2 to 5) so every redraw changes
the data, as an input change does. Prints the median CPU time of the process (what the redraw
costs even when other programs share the cores) and the median wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--width", type=int, default=1000)
    parser.add_argument("--height", type=int, default=500)
    parser.add_argument("--runs", type=int, default=60)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QEvent
    from PySide6.QtWidgets import QApplication

    from gpuadvisor.core.estimation.estimate import estimate
    from gpuadvisor.core.formats.scenario import default_scenario
    from gpuadvisor.storage.user_catalog_store import load_catalogs

    from . import CostTimeChart, VramChart, WhatIfChart

    app = QApplication.instance() or QApplication([])
    gpus, models = load_catalogs()
    scenario = default_scenario()
    ests = [
        estimate(replace(scenario, workload=replace(scenario.workload, batch_size=b)), gpus, models)
        for b in (2, 3, 4, 5)
    ]
    for cls in (VramChart, CostTimeChart, WhatIfChart):
        chart = cls()
        chart.resize(args.width, args.height)
        chart.show()
        for _ in range(3):
            app.processEvents()
        cpu, wall = [], []
        for i in range(args.runs):
            est = ests[i % len(ests)]
            t0, c0 = time.perf_counter(), time.process_time()
            chart.show(est, est.decision.recommended_key if est.decision else None)
            chart.repaint()
            app.processEvents()
            cpu.append((time.process_time() - c0) * 1000)
            wall.append((time.perf_counter() - t0) * 1000)
        print(
            f"{cls.__name__:14s} {args.width}x{args.height}: CPU median {statistics.median(cpu):5.1f} ms, "
            f"wall median {statistics.median(wall):5.1f} ms"
        )
        chart.close()
        chart.deleteLater()  # delete it while Qt runs, not in the interpreter's final collection
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)


if __name__ == "__main__":
    main()
