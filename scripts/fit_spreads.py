#!/usr/bin/env python3
"""Each engine's and each serving figure's 80% range from the leave-one-source-out residuals of
the validation set.

Runs the harness's leave-one-source-out (:func:`gpuadvisor.validation.harness.out_of_sample`),
takes measured / estimate of every scored speed row (time-like quantities inverted, so a ratio
above 1 always means "faster than estimated") and prints the ranges of
:func:`gpuadvisor.validation.harness.spreads_from`: per engine the split-conformal 10% and 90%
order statistics (:func:`gpuadvisor.core.estimation.speed_fit.engine_spreads`; an engine with
fewer than 15 rows gets those of its kind), and per serving figure (output tokens/s, TTFT, ITL)
those of its own rows. ``gpuadvisor/core/specs/engines.py`` holds the engines' values
(``_FITTED_ENGINES``, ``SPREAD_PROVENANCE``), ``gpuadvisor/core/estimation/serving.py`` the
serving ones (``SERVING_SPREADS``).

Usage: .venv/bin/python scripts/fit_spreads.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpuadvisor.core.estimation.serving import SERVING_SPREADS
from gpuadvisor.core.specs.constants import ENGINES
from gpuadvisor.core.specs.hardware import load_gpu_catalog
from gpuadvisor.core.specs.presets import load_model_catalog
from gpuadvisor.validation import Predictor, load_measurements
from gpuadvisor.validation.harness import (
    SPEED_GROUPS,
    held_out_coverage,
    out_of_sample,
    range_key,
    spreads_from,
)


def main() -> None:
    rows = load_measurements()
    comparisons = out_of_sample(rows, Predictor(load_gpu_catalog(), load_model_catalog()))
    counts: dict[str, int] = {}
    for c in comparisons:
        if c.row.scored and c.estimate and c.row.group in SPEED_GROUPS:
            counts[range_key(c)] = counts.get(range_key(c), 0) + 1
    held = held_out_coverage(comparisons)
    for group in SPEED_GROUPS:
        print(
            f"{group:16s} coverage with the ranges also calibrated without each source {held.get(group, 0):.0%}"
        )
    for key, (low, high) in spreads_from(comparisons).items():
        if key.startswith("serving:"):
            shipped = SERVING_SPREADS[key.split(":", 1)[1]]
        else:
            shipped = (ENGINES[key].spread_low, ENGINES[key].spread_high)
        print(
            f"{key:22s} rows {counts.get(key, 0):3d}  spread_low={low:.2f} spread_high={high:.2f}"
            f"   (shipped {shipped[0]:.2f} / {shipped[1]:.2f})"
        )


if __name__ == "__main__":
    main()
