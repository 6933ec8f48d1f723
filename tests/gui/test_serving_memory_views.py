"""A service's memory at its operating point in the VRAM chart: the KV cache of the requests in
flight and, hatched, the engine's unused KV pool (a batch job gets neither). The PDF report's
figures are checked against ``gpuadvisor-cli estimate --json`` in ``test_report.py``."""

from __future__ import annotations

import datetime
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import shiboken6

from gpuadvisor.core.estimation.estimate import estimate
from gpuadvisor.core.formats.scenario import default_scenario, load_scenario
from gpuadvisor.core.specs.workload import Hardware
from gpuadvisor.views.charts import VramChart
from gpuadvisor.views.charts.palette import COMPONENT_ORDER
from gpuadvisor.views.charts.vram_chart import KV_IN_FLIGHT_LABEL, POOL_LABEL

REPO = Path(__file__).resolve().parents[2]
SERVICE = REPO / "docs" / "examples" / "serving-20-replicas.json"
TODAY = datetime.date(2026, 11, 29)
POPPLER = all(shutil.which(t) for t in ("pdftotext", "pdfinfo"))


def legend_texts(chart) -> list[str]:
    return [label.text for _sample, label in chart.legend.items]


@pytest.fixture(scope="module")
def service(catalogs):
    """The 20-replica example over the data-centre GPUs (several GPU types, several pools)."""
    s = load_scenario(SERVICE)
    return estimate(replace(s, hardware=Hardware(segment="data_centre")), *catalogs)


def test_vram_chart_shows_the_kv_in_flight_and_the_reserved_pool_for_a_service(qtbot, service, catalogs):
    # Deleted here rather than handed to qtbot: a VramChart left to deleteLater and collected by
    # Python's cycle collector afterwards can crash PySide (one that drew nothing too); deleting it
    # while its wrapper is alive does not.
    chart = VramChart()
    try:
        _check_service_chart(qtbot, chart, service, catalogs)
    finally:
        chart.close()
        shiboken6.delete(chart)


def _check_service_chart(qtbot, chart, service, catalogs):
    chart.resize(820, 560)
    chart.show()
    qtbot.waitExposed(chart)
    chart.show_estimate(service)
    rows = [chart.candidate_at(r) for r in range(chart.row_count())]
    fitting = [i for i, c in enumerate(rows) if c.serving is not None]
    assert len(fitting) >= 3
    ends = np.zeros(len(rows))
    for name in COMPONENT_ORDER:
        ends += chart.segments[name].opts["width"]
    pool = chart.pool_bar.opts
    for i in fitting:
        m = rows[i].serving.memory
        # The KV cache segment is that of the requests in flight, the hatched one the unused pool.
        assert chart.segments["kv_cache"].opts["width"][i] == pytest.approx(m.kv_in_flight / 2**30)
        assert ends[i] == pytest.approx(m.need / 2**30)
        assert pool["x0"][i] == pytest.approx(ends[i])
        assert pool["width"][i] == pytest.approx(m.pool_reserved / 2**30)
    assert any(pool["width"][i] > 1 for i in fitting)  # vLLM leaves most of an 80 GiB card reserved
    assert KV_IN_FLIGHT_LABEL in legend_texts(chart) and POOL_LABEL in legend_texts(chart)
    tip = chart.tooltip_for_row(fitting[0])
    m = rows[fitting[0]].serving.memory
    assert f"{KV_IN_FLIGHT_LABEL} ({m.concurrency:,} × {m.tokens_per_sequence:,} tokens)" in tip
    assert "Engine takes (gpu_memory_utilization 0.9)" in tip
    # A batch job next: no pool, the plain KV cache label (items updated in place).
    chart.show_estimate(estimate(default_scenario(), *catalogs))
    assert len(chart.pool_bar.opts["width"]) == 0
    assert POOL_LABEL not in legend_texts(chart)
    assert KV_IN_FLIGHT_LABEL not in legend_texts(chart) and "KV cache" in legend_texts(chart)
    # And back: the parked entry returns, before the recommendation's (always the last).
    chart.show_estimate(service)
    assert legend_texts(chart)[-2:] == [POOL_LABEL, "\u2605 Recommended"]
