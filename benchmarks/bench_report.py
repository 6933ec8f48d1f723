#!/usr/bin/env python3
"""Benchmark: the PDF comparison report of a whole-catalog scenario (docs/examples/lora-llama-3.1-8b.json).

Times ``export_pdf`` end to end (two charts rendered offscreen at 3x, the document laid out and
paginated, the PDF written atomically) and, apart, the pure ``build_report`` and the chart
images. Aim: under 2 s for the export.

Usage: .venv/bin/python benchmarks/bench_report.py [--repeat 5]   (prints medians in seconds)
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from gpuadvisor.core.estimation.estimate import estimate  # noqa: E402
from gpuadvisor.core.formats.scenario import load_scenario  # noqa: E402
from gpuadvisor.core.presentation.report import build_report  # noqa: E402
from gpuadvisor.storage.user_catalog_store import load_catalogs  # noqa: E402

SCENARIO = REPO / "docs" / "examples" / "lora-llama-3.1-8b.json"
AIM_S = 2.0


def median_of(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from PySide6.QtCore import qInstallMessageHandler

    qInstallMessageHandler(lambda *_: None)  # the offscreen plugin's propagateSizeHints notices
    from gpuadvisor.views.report_pdf import chart_images, ensure_app, export_pdf

    t0 = time.perf_counter()
    ensure_app()
    startup = time.perf_counter() - t0

    gpus, models = load_catalogs()
    est = estimate(load_scenario(SCENARIO), gpus, models)
    today = datetime.date.today()
    report = build_report(est, gpus.meta, today)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.pdf"
        t0 = time.perf_counter()
        stats = export_pdf(report, est, out)  # first export: imports pyqtgraph, warms the font cache
        first = time.perf_counter() - t0
        export = median_of(lambda: export_pdf(report, est, out), args.repeat)
        size = out.stat().st_size
    pure = median_of(lambda: build_report(est, gpus.meta, today), args.repeat)
    charts = median_of(lambda: chart_images(est, report.recommended_key), args.repeat)

    print(f"scenario: {SCENARIO.name} ({len(gpus)} GPUs, {len(est.candidates)} candidates)")
    print(f"QApplication start                 {startup:6.3f} s")
    print(f"first export (imports, font cache)  {first:6.3f} s")
    print(
        f"export_pdf, median of {args.repeat}           {export:6.3f} s   "
        f"({stats.pages} pages, {size / 1024:,.0f} KiB; aim < {AIM_S:g} s: {'met' if export < AIM_S else 'NOT met'})"
    )
    print(f"  build_report (pure core)          {pure * 1000:6.1f} ms")
    print(f"  chart_images (2 charts at 3x)     {charts:6.3f} s")


if __name__ == "__main__":
    main()
