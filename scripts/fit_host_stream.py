#!/usr/bin/env python3
"""Fit llama.cpp's host stream efficiency to the published partial-offload runs, and hold each source out.

The rows are the scored ones of tests/data/validation whose offload fact names ``gpu_layers`` (llama.cpp
``-ngl`` below the layer count). For each efficiency on a grid the harness predicts every row; the value
with the least mean |log(estimate / measured)| is the fit (``LlamaCppModel.host_stream_efficiency``).
Then each source is held out in turn: the rest are fitted and the held-out rows predicted with that
value. The 10% and 90% order statistics of measured / estimate held out give the range of a split step
(``split_spread_low`` / ``split_spread_high``).

    .venv/bin/python scripts/fit_host_stream.py
"""

from __future__ import annotations

import math
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuadvisor.core.estimation import performance
from gpuadvisor.core.specs.constants import LLAMA_CPP
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation.data import load_measurements
from gpuadvisor.validation.harness import Predictor

GRID = [round(0.30 + 0.01 * i, 2) for i in range(71)]


@contextmanager
def host_efficiency(value: float) -> Iterator[None]:
    """Within the block, llama.cpp's speed model streams host RAM at ``value`` of its bandwidth."""
    defaults = performance.llamacpp_performance.__defaults__
    assert defaults is not None
    index = list(defaults).index(LLAMA_CPP)
    patched = list(defaults)
    patched[index] = replace(LLAMA_CPP, host_stream_efficiency=value)
    performance.llamacpp_performance.__defaults__ = tuple(patched)
    try:
        yield
    finally:
        performance.llamacpp_performance.__defaults__ = defaults


def main() -> int:
    gpus, models = load_gpu_catalog(), load_model_catalog()
    rows = [r for r in load_measurements() if r.scored and "gpu_layers=" in r.fact("offload")]
    ratios: dict[float, dict[str, float]] = {}
    for value in GRID:
        with host_efficiency(value):
            predictor = Predictor(gpus, models)  # a new one: it keeps no estimates between values
            ratios[value] = {}
            for r in rows:
                c = predictor.compare(r)
                if c.estimate:
                    ratios[value][r.id] = c.estimate / r.value

    def loss(value: float, ids: list[str]) -> float:
        return statistics.fmean(abs(math.log(ratios[value][i])) for i in ids if i in ratios[value])

    ids = [r.id for r in rows]
    best = min(GRID, key=lambda v: loss(v, ids))
    print(f"{len(rows)} rows from {len({r.source_id for r in rows})} sources")
    print(
        f"fitted host_stream_efficiency = {best:.2f}; in-sample median |error| "
        f"{100 * statistics.median(abs(ratios[best][i] - 1) for i in ids):.1f}%"
    )
    held_out: dict[str, float] = {}
    for source in sorted({r.source_id for r in rows}):
        train = [r.id for r in rows if r.source_id != source]
        value = min(GRID, key=lambda v: loss(v, train))
        for r in rows:
            if r.source_id == source:
                held_out[r.id] = ratios[value][r.id]
        print(f"  {source} held out: fitted {value:.2f} on the others")
    errors = [abs(v - 1) for v in held_out.values()]
    measured_over = sorted(1 / v for v in held_out.values())
    n = len(measured_over)
    low = measured_over[max(math.floor((n + 1) * 0.1) - 1, 0)]
    high = measured_over[min(math.ceil((n + 1) * 0.9) - 1, n - 1)]
    print(f"leave-one-source-out median |error| {100 * statistics.median(errors):.1f}%")
    print(f"80% range of measured / estimate held out: {low:.2f} .. {high:.2f}")
    print(f"  split_spread_low = {1 - low:.2f}, split_spread_high = {high - 1:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
